"""The search agent: Optuna (ask/tell) over the tunables declared in `[agent.search.space]`, written
into the params file of the candidate tree (docs/agents.md).

The ledger is the only source of truth: every ask rebuilds the study from the finished attempts in
the context (their params and measured values: `value_of`) with a sampler seeded by (campaign seed,
attempt), so a resumed run asks exactly what the original run asked. A warm-started run
(`loop.warm_start`) adds, before them, the trials of earlier runs of the same search recorded in its
`run.started`, and counts them in the sampler's seed (so its first ask is not the earlier runs' first).
With several workers (`agent.workers`) one instance serves them all: the attempts in flight
(`AgentContext.in_flight`) are told as running trials with TPE's constant liar, so concurrent asks
do not propose the point a sibling is measuring (a random sampler draws from its own seed).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from typing import Any, Literal

from ratchet.agents.base import Action, Agent, AgentContext, GiveUp, LaunchResult, PastAttempt, Submit, TreeBuilder
from ratchet.core.contract import CategoricalParam, FloatParam, IntParam, SearchAgentConfig
from ratchet.core.errors import DataError


class SearchAgent(Agent):
    """Proposes one parameter set per attempt. `direction` is the target's ("max" | "min")."""

    proposes_at_once = True

    def __init__(self, config: SearchAgentConfig, direction: str, trees: TreeBuilder):
        self.config = config
        self.direction = direction
        self.trees = trees
        self.warm: tuple[PastAttempt, ...] = ()
        """Trials of earlier runs of the same search (params and measured value, never a verdict),
        told to the study before this run's own; set from the run's ledger once the kernel is open."""

    def start(self, ctx: AgentContext) -> Action:
        """Ask the rebuilt study for parameters, write them into the params file, submit the tree."""
        params = self.ask(ctx)
        current = self.trees.read_blob(ctx.champion_tree, self.config.file)
        if current is None:
            raise DataError(
                "search.params_missing",
                f"the params file {self.config.file!r} is not in the champion's tree",
                hint="commit it (agent.search.file must exist in the project)",
            )
        content = write_params(self.config.file, current, params)
        tree = self.trees.overlay_tree(ctx.champion_tree, {self.config.file: content})
        shown = ", ".join(f"{k}={_show(v)}" for k, v in params.items())
        report = (
            f"Hypothesis: the tunables {shown} score better than the champion's.\n"
            f"Proposed by Optuna ({self.config.sampler}) after {len(ctx.history)} finished attempts"
            + (f" and {len(self.warm)} trial{'s' if len(self.warm) > 1 else ''} of earlier runs" if self.warm else "")
            + "; "
            f"written into {self.config.file}."
        )
        return Submit(tree=tree, report=report, summary=shown, params=params)

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        """The search agent never launches experiments of its own."""
        return GiveUp("the search agent does not launch experiments")

    def ask(self, ctx: AgentContext) -> dict[str, Any]:
        """The parameters Optuna proposes for attempt `ctx.attempt`, given the recorded history."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        seed = (ctx.campaign_seed * 1_000_003 + len(self.warm) + ctx.attempt) % (2**32)
        sampler: optuna.samplers.BaseSampler
        liar = bool(ctx.in_flight)  # siblings' asks in flight are told as running trials: TPE steers away
        if self.config.sampler == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5, constant_liar=liar)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        direction: Literal["maximize", "minimize"] = "maximize" if self.direction == "max" else "minimize"
        study = optuna.create_study(direction=direction, sampler=sampler)
        dists = distributions(self.config)
        for past in (*self.warm, *ctx.history):
            if past.params is None or set(past.params) != set(dists):
                continue
            states = optuna.trial.TrialState
            value = value_of(past)
            state = states.COMPLETE if value is not None else states.FAIL
            study.add_trial(
                optuna.trial.create_trial(params=dict(past.params), distributions=dists, value=value, state=state)
            )
        for sibling in ctx.in_flight:
            if sibling.params is not None and set(sibling.params) == set(dists):
                study.add_trial(optuna.trial.create_trial(params=dict(sibling.params), distributions=dists,
                                                          state=optuna.trial.TrialState.RUNNING))
        trial = study.ask(dists)
        return {name: trial.params[name] for name in self.config.space}


def value_of(past: PastAttempt) -> float | None:
    """The value Optuna is told for a finished attempt: its dev pass rate on an examples target (the
    history shows no val figure there), else the candidate's mean on its trial; None when neither
    was measured (told as a failed trial)."""
    return past.dev_mean if past.dev_mean is not None else past.candidate_mean


def distributions(config: SearchAgentConfig) -> dict[str, Any]:
    """Optuna distributions for `[agent.search.space]` (float, int, categorical)."""
    import optuna.distributions as d

    out: dict[str, Any] = {}
    for name, p in config.space.items():
        if isinstance(p, FloatParam):
            out[name] = d.FloatDistribution(p.low, p.high, log=p.log)
        elif isinstance(p, IntParam):
            out[name] = d.IntDistribution(p.low, p.high, log=p.log)
        elif isinstance(p, CategoricalParam):
            out[name] = d.CategoricalDistribution(list(p.choices))
    return out


def write_params(file: str, current: bytes, params: Mapping[str, Any]) -> bytes:
    """The params file with the declared keys set and every other key kept (.toml or .json).

    Raises DataError `search.params_unreadable` when the current file does not parse.
    """
    import tomli_w

    try:
        if file.endswith(".json"):
            data = json.loads(current.decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("the top level is not an object")
        else:
            data = tomllib.loads(current.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError("search.params_unreadable", f"cannot parse {file}: {exc}") from None
    data.update(params)
    if file.endswith(".json"):
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    return tomli_w.dumps(data).encode()


def _show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
