"""The benchmark target: a command that prints its metric as JSON, run once per variant and unit
(docs/guide.md). Units are seeds drawn from the run's salt; an accepted candidate is confirmed on
fresh seeds when `gate.confirm`; the holdout measures the final champion against the baseline on
`gate.holdout_units` fresh seeds.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.compute.base import ArtifactSpec, SandboxSpec
from ratchet.compute.factory import job_resources
from ratchet.compute.outcome import stderr_excerpt
from ratchet.compute.programs import locate
from ratchet.core.budget import holdout_worst_case
from ratchet.core.contract import Contract
from ratchet.core.errors import MeasurementError
from ratchet.core.gate_design import confirmation_looks, max_unit_loss_for
from ratchet.core.jobfiles import JobFiles
from ratchet.core.plan import NO_ATTEMPT, SEED_MASK, Plan, PlannedJob, Stage, compile_plan
from ratchet.core.vocab import Direction, GateTest, ScoreKind
from ratchet.targets.base import UnitResult
from ratchet.targets.shell import ShellJobs
from ratchet.targets.suite import SuiteMember


class BenchmarkTarget(ShellJobs):
    """`target.kind = "benchmark"` for one run: plans over seeds, shell jobs, raw metric means with a
    Student-t bound. salt: the run's random salt (unit seeds cannot be predicted without it)."""

    score_kind: ScoreKind = "continuous"

    def __init__(self, contract: Contract, sandbox: SandboxSpec, salt: str):
        t = contract.target
        super().__init__(command=t.command or "", metric=t.metric, seed_env=t.seed_env, timeout_s=t.timeout_s,
                         kind=t.kind, sandbox=sandbox, exclude=contract.hidden_paths, cache=t.cache,
                         resources=job_resources(contract.compute),
                         guardrails=[g.metric for g in contract.gate.guardrails],
                         suite=[SuiteMember(m.name, m.command, m.metric, m.seed_env, m.timeout_s) for m in t.suite])
        self.contract = contract
        self.guardrail_rules = (*contract.gate.guardrails, *(m.guardrail() for m in t.suite))
        self.direction: Direction = t.direction
        self.confirms = contract.gate.confirm
        self.test: GateTest = contract.gate.test
        self.metric_range = (t.metric_range[0], t.metric_range[1]) if t.metric_range else None
        self.max_unit_loss = max_unit_loss_for(contract.gate.max_unit_loss, self.metric_range)
        self.salt = salt

    def settings_json(self) -> dict[str, Any]:
        """The measurement settings a plan records (its `target`)."""
        t = self.contract.target
        out = {"kind": t.kind, "command": t.command, "metric": t.metric, "direction": t.direction,
               "seed_env": t.seed_env, "timeout_s": t.timeout_s, "sandbox": self.sandbox.mode,
               "network": self.sandbox.network}
        return out | ({"guardrails": list(self.guardrails)} if self.guardrails else {}) \
            | ({"suite": [m.model_dump() for m in t.suite]} if t.suite else {})

    def looks(self, stage: Stage, units_used: int = 0) -> tuple[int, ...]:
        """gate.units for a trial; the confirmation's looks after `units_used`; the holdout's size."""
        gate = self.contract.gate
        if stage == "confirm":
            return confirmation_looks(gate.units, units_used)
        if stage == "holdout":
            return (gate.holdout_size,)
        return tuple(gate.units)

    def plan(self, stage: Stage, attempt: int, trial: int, champion_tree: str, candidate_tree: str,
             looks: Sequence[int], block: int = 0) -> Plan:
        """Seeds from (campaign seed, run salt, stage, trial): see core.plan.seed_draws (`block` is
        unused: every trial draws fresh seeds)."""
        return compile_plan(stage=stage, attempt=attempt, trial=trial, champion_tree=champion_tree,
                            candidate_tree=candidate_tree, target=self.settings_json(), looks=looks,
                            campaign_seed=self.contract.campaign.seed, run_salt=self.salt)

    def trial_blocks(self) -> int | None:
        """None: fresh seeds for every trial, so promotions have no limit."""
        return None

    def dev_jobs(self, attempt: int, tree: str) -> list[PlannedJob]:
        """None: a benchmark has no split an agent may see (its history shows the trials' means)."""
        return []

    def reserve_units(self) -> int:
        """The holdout's worst case: both variants and one champion retry per holdout unit."""
        return holdout_worst_case(self.contract.gate.holdout_size)

    def holdout_extras(self, champion_tree: str, results: Mapping[str, UnitResult],
                       measure: Callable[[list[PlannedJob]], Mapping[str, UnitResult]]) -> dict[str, Any]:
        """Nothing beyond the holdout's own verdict."""
        return {}

    def preflight_jobs(self, baseline_tree: str) -> list[PlannedJob]:
        """One run of the baseline on the campaign's seed."""
        seed = self.contract.campaign.seed & SEED_MASK
        return [PlannedJob(f"a{NO_ATTEMPT:04d}-preflight-u000-champion", "champion", baseline_tree, 0, seed,
                           0, 0)]

    def check_preflight(self, results: Sequence[UnitResult], job_dir: Path) -> None:
        """A baseline that prints no metric stops the run here, with the job's stderr tail.
        Raises MeasurementError `preflight.no_metric`."""
        bad = next((r for r in results if r.failed), None)
        if bad is None:
            return
        raise baseline_error(self.contract, self.sandbox, bad, stderr_excerpt(JobFiles.of(job_dir, bad.job_id)))

    def summary(self, values: Sequence[float]) -> tuple[float | None, float | None]:
        """The mean and its 95% Student-t bound on the side that guards a target (lower for `max`,
        upper for `min`; None with fewer than 2 values)."""
        if not values:
            return None, None
        mean = sum(values) / len(values)
        if len(values) < 2:
            return mean, None
        import numpy as np

        from ratchet.core.stats.paired import mean_diff_interval

        low, high = mean_diff_interval(np.asarray(values, dtype=float), 0.95)
        return mean, (low if self.direction == "max" else high)


_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def missing_module(stderr: str) -> str | None:
    """The module the last `ModuleNotFoundError: No module named '...'` of `stderr` names, or None."""
    found = _MISSING_MODULE.findall(stderr)
    return found[-1] if found else None


def job_python(command: str, sandbox: SandboxSpec) -> str:
    """The interpreter a job running `command` gets: the command's first word when it names a Python
    (`python`, `python3.12`), else `python3`, as the job's PATH (`sandbox.path`) resolves it; the
    bare name and "(not on the job's PATH)" when it does not resolve."""
    try:
        first = shlex.split(command)[0] if command.strip() else "python3"
    except ValueError:
        first = "python3"
    word = first if Path(first).name.startswith("python") else "python3"
    return locate(word, sandbox.path or "") or f"{word} (not on the job's PATH)"


def baseline_error(contract: Contract, sandbox: SandboxSpec, m: UnitResult, tail: str) -> MeasurementError:
    """Why the baseline `m` measured nothing, with the job's stderr `tail` quoted: MeasurementError
    `preflight.missing_module` naming the module and the interpreter when stderr ends on a
    ModuleNotFoundError, else `preflight.no_metric` with a hint for what went wrong (a timeout, a
    job the scheduler can never start, or how the metric must be printed)."""
    t = contract.target
    quoted = f"\n--- stderr tail ---\n{tail}" if tail.strip() else ""
    module = missing_module(tail)
    if module is not None:
        python = job_python(t.command or "", sandbox)
        top = module.split(".")[0]
        return MeasurementError(
            "preflight.missing_module",
            f"the baseline does not measure: `{t.command}` stopped on a missing module, {module!r}, which the "
            f"job's interpreter {python} does not have" + quoted,
            hint=f"install it for that interpreter ({python.split(' ')[0]} -m pip install {top}), or give jobs the "
                 "Python that has it: first on the PATH you start ratchet with (sandbox.keep_ratchet_venv = true "
                 "when it is Ratchet's own environment), and under the sandbox its install in sandbox.read_only",
        )
    if m.state == "unschedulable":
        hint = ("no node of the cluster can run a job of this shape: lower compute.cpus_per_job / memory_mb_per_job / "
                "gpus_per_job or fix [compute.slurm] (`ratchet check --preflight` asks the scheduler)")
    elif m.state == "timeout":
        hint = (f"the baseline ran past target.timeout_s = {t.timeout_s:g} s: raise target.timeout_s, or make the "
                "command faster")
    else:
        hint = (f"run the command by hand in a clean checkout; it must print {t.metric!r} in a JSON object on one "
                f"line of stdout (e.g. {{\"{t.metric}\": 0.5}}): JSON on stderr, or spread over several lines "
                "(indent), is not read")
    return MeasurementError(
        "preflight.no_metric", f"the baseline does not measure: `{t.command}` gave {m.state}: {m.reason}" + quoted,
        hint=hint)


def launch_jobs_target(contract: Contract, sandbox: SandboxSpec, commands: Mapping[str, tuple[str, float]],
                       envs: Mapping[str, Mapping[str, str]] | None = None,
                       artifacts: Mapping[str, ArtifactSpec] | None = None,
                       groups: Mapping[str, tuple[str, int]] | None = None) -> ShellJobs:
    """Shell jobs for an agent's own experiments: each job's own command, timeout, extra variables,
    artifacts and group cap (job_id -> (group, cap)), the target's metric read when printed, never cached;
    `background` (JobSpec): they start after any gate measurement waiting for a slot."""
    t = contract.target
    return ShellJobs(command=t.command or "", metric=t.metric, seed_env=t.seed_env, timeout_s=t.timeout_s,
                     kind=t.kind, sandbox=sandbox, exclude=contract.hidden_paths, cache=False, commands=commands,
                     envs=envs, resources=job_resources(contract.compute), artifacts=artifacts, groups=groups,
                     background=True)
