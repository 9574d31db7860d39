"""`ratchet calibrate [DIR]`: measure the champion's noise and say what the gate can detect through it.

Benchmark targets: the champion (HEAD's tree, or `--rev`) is measured on N seeds twice each, as a
run of its own kind (`run.started` data.mode `calibrate`, jobs of stage `calibrate`, `run.stopped`
stop reason `calibrated` with the result in data.calibration), never cached (a cached repeat would
show no noise). The two repeats of a seed run back to back, like the two sides of a trial's unit.
The spreads (core.stats.calibration) are kept in `.ratchet/calibration.json`, from which
`ratchet check` shows the detectable effects of the contract's current gate.

Examples targets run nothing: the val split's size fixes what the exact McNemar test can detect.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.commands.run import open_project
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import EXIT_INTERRUPTED, DataError, MeasurementError, RatchetError
from ratchet.core.gate_design import margin_for
from ratchet.core.payloads import RunStopped
from ratchet.core.plan import PlannedJob, seed_draws
from ratchet.core.stats.calibration import (
    DEFAULT_POWER,
    MIN_SEEDS,
    Noise,
    estimate_noise,
    granted_trials,
    level_effects,
    units_for_effect,
)
from ratchet.core.stats.multiplicity import trial_level
from ratchet.core.stats.paired import Kind
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.project_lock import sole_run
from ratchet.ledger.rundir import CALIBRATE_MODE, RATCHET_DIR
from ratchet.loop.kernel import Kernel, new_kernel
from ratchet.loop.measure import Interrupted
from ratchet.present.progress import CampaignUI
from ratchet.targets.base import UnitResult
from ratchet.targets.shell import ShellJobs
from ratchet.workspace.git import Git

DEFAULT_SEEDS = 8
"""Seeds measured when `--seeds` is not given (each twice)."""

MAX_SEEDS = 1000
"""The most seeds one calibration measures."""

REPEATS = 2
"""Measurements per seed."""

CALIBRATION_FILE = "calibration.json"
"""The latest calibration, in the project's `.ratchet/` directory (never in a candidate's tree)."""

CALIBRATION_FORMAT = "ratchet.calibration.v1"
"""`calibration.json`'s `format`: a file of another format is not read."""

ATTEMPT = 0
"""A calibration's jobs carry attempt number 0 (attempts are 1-based)."""

APPROXIMATION = ("sign-flip test: normal approximation of a one-sided paired t-test's power (Student t "
                 "quantiles); paired SD assumes a candidate keeps half of the champion's seed-to-seed variance")
BINARY_APPROXIMATION = "exact McNemar power, assuming the candidate breaks nothing the champion passed (a floor)"
"""How the detectable gains were computed (result `approximation`): continuous, binary scores."""


def calibrate_project(directory: Path, *, rev: str | None, seeds: int | None, effect: float | None,
                      ui: CampaignUI) -> dict[str, Any]:
    """`ratchet calibrate`: the `--json` result (see docs/calibrate.md): for a benchmark {kind, run_id,
    rev, commit, tree, metric, direction, seeds, repeats, jobs, failed, job_seconds, values, noise,
    margin, power, approximation, levels, effect, suggested_units, stored, warnings}; for examples
    {kind, val, looks, margin, power, approximation, levels, effect, suggested_units, warnings}.

    Raises DataError `calibrate.bad_seeds` / `calibrate.bad_effect`, GitError `git.bad_revision`,
    MeasurementError `calibrate.too_few_seeds` (fewer than MIN_SEEDS seeds measured twice), DataError
    `run.concurrent` while a run of the project is in progress, RatchetError `interrupted` (exit 130),
    and what `ratchet run` raises for a bad contract. seeds: None for DEFAULT_SEEDS."""
    seeds = DEFAULT_SEEDS if seeds is None else seeds
    if not MIN_SEEDS <= seeds <= MAX_SEEDS:
        raise DataError("calibrate.bad_seeds", f"--seeds must be between {MIN_SEEDS} and {MAX_SEEDS}, got {seeds}",
                        hint=f"the default is {DEFAULT_SEEDS}; more seeds give tighter spreads")
    if effect is not None and not (math.isfinite(effect) and effect > 0):
        raise DataError("calibrate.bad_effect", f"--effect must be a positive number, got {effect}",
                        hint="the smallest gain worth detecting, in the metric's units (examples: a pass rate)")
    loaded, git = open_project(directory, for_compare=True)
    if loaded.contract.target.kind == "examples":
        result = _examples(loaded, effect)
        if rev:
            result["warnings"].append(f"--rev {rev} is not used: an examples target's calibration runs nothing")
        return result
    with sole_run(loaded.root):
        return _benchmark(loaded, git, rev, seeds, effect, ui)


def _benchmark(loaded: LoadedContract, git: Git, rev: str | None, seeds: int, effect: float | None,
               ui: CampaignUI) -> dict[str, Any]:
    from ratchet.loop.campaign import start_record

    c = loaded.contract
    commit = git.rev_parse_commit(rev) if rev else git.head_commit()
    tree = git.tree_of(commit)
    kernel, salt = new_kernel(loaded)
    try:
        start_record(kernel, salt, commit, tree, 0, mode=CALIBRATE_MODE)
        # seeds drawn as a trial's are, from this run's random salt (trial index 0: no campaign trial's)
        jobs = calibration_jobs(tree, [d.seed for d in seed_draws(c.campaign.seed, salt, "trial", 0, seeds)])
        ui.note(f"calibrate: measuring {rev or 'HEAD'} ({commit[:10]}) on {seeds} seeds, {REPEATS} times each")
        results = _measure(kernel, jobs, ui)
        values = [_pair(results, job.unit) for job in jobs[::REPEATS]]
        try:
            noise = _noise(values, kernel, results)
        except MeasurementError as exc:
            kernel.record(RunStopped(stop_reason="calibrated", budget=None, detail=exc.code))
            raise
        table = [{"unit": job.unit, "seed": job.seed, "values": list(v) if v else None}
                 for job, v in zip(jobs[::REPEATS], values, strict=True)]
        stopped = kernel.record(RunStopped(stop_reason="calibrated", budget=None, detail=None,
                                           calibration={"values": table, "noise": noise.to_json()}))
        seconds = [r.elapsed_s for r in kernel.state().finished_jobs.values()]
    finally:
        kernel.close()
    failed = sum(v is None for v in values)
    stored = {
        "format": CALIBRATION_FORMAT, "run_id": kernel.run.run_id, "recorded_at": stopped.ts,
        "rev": rev or "HEAD", "commit": commit, "tree": tree, "target": target_settings(c, kernel.sandbox.mode),
        "seeds": seeds, "repeats": REPEATS, "jobs": len(jobs), "failed": failed,
        "job_seconds": sum(seconds) / len(seconds) if seconds else None,
        "values": table, "noise": noise.to_json(),
    }
    path = loaded.root / RATCHET_DIR / CALIBRATION_FILE
    write_exclusive(path, (json.dumps(stored, indent=1) + "\n").encode())
    warnings = [_failures_warning(failed, seeds)] if failed else []
    return {"kind": "benchmark", **{k: v for k, v in stored.items() if k not in ("format", "target")},
            "metric": c.target.metric, "direction": c.target.direction,
            **gate_effects(c, noise, effect), "stored": str(path), "warnings": warnings}


def calibration_jobs(tree: str, seeds: Sequence[int]) -> list[PlannedJob]:
    """The champion `tree` on every seed, REPEATS times in a row (unit i = seeds[i]; repeat r is
    `a0000-calibrate-u<i>-champion-<r>`, its `order` r - 1)."""
    return [PlannedJob(f"a{ATTEMPT:04d}-calibrate-u{unit:03d}-champion-{r}", "champion", tree, unit, seed, r - 1, 0)
            for unit, seed in enumerate(seeds) for r in range(1, REPEATS + 1)]


def _measure(kernel: Kernel, jobs: list[PlannedJob], ui: CampaignUI) -> dict[str, UnitResult]:
    """Run `jobs` uncached through the one runner; Ctrl-C records `interrupted` and raises."""
    c = kernel.contract
    shell = ShellJobs(command=c.target.command or "", metric=c.target.metric, seed_env=c.target.seed_env,
                      timeout_s=c.target.timeout_s, kind=c.target.kind, sandbox=kernel.sandbox,
                      exclude=c.hidden_paths, cache=False)
    kernel.install_sigint()
    try:
        return kernel.runner(shell, ui.jobs).measure(jobs, attempt=ATTEMPT, stage="calibrate")
    except Interrupted:
        kernel.record(RunStopped(stop_reason="interrupted", budget=None, detail="calibrate"))
        raise RatchetError("interrupted", "the calibration was interrupted; its jobs were killed",
                           hint="run `ratchet calibrate` again", exit_code=EXIT_INTERRUPTED) from None


def _pair(results: Mapping[str, UnitResult], unit: int) -> tuple[float, float] | None:
    """A unit's REPEATS values in order, or None when any of them failed."""
    got = sorted((r for r in results.values() if r.unit == unit), key=lambda r: r.job_id)
    values = [r.value for r in got if not r.failed and r.value is not None]
    return (values[0], values[1]) if len(values) == len(got) == REPEATS else None


def _noise(values: list[tuple[float, float] | None], kernel: Kernel, results: Mapping[str, UnitResult]) -> Noise:
    """The noise of the seeds measured twice. Raises MeasurementError `calibrate.too_few_seeds`
    naming the first failed job, with its stderr tail."""
    pairs = [v for v in values if v is not None]
    if len(pairs) >= MIN_SEEDS:
        return estimate_noise(pairs)
    bad = min((r for r in results.values() if r.failed), key=lambda r: r.job_id)
    stderr = kernel.run.jobs / bad.job_id / "stderr"
    tail = stderr.read_text("utf-8", "replace")[-1500:] if stderr.exists() else ""
    raise MeasurementError(
        "calibrate.too_few_seeds",
        f"only {len(pairs)} of {len(values)} seeds were measured twice (at least {MIN_SEEDS} are needed): "
        f"job {bad.job_id} gave {bad.state}: {bad.reason}" + (f"\n--- stderr tail ---\n{tail}" if tail.strip() else ""),
        hint="run the command by hand in a clean checkout (`ratchet check --preflight` measures it once)",
    )


def _failures_warning(failed: int, seeds: int) -> str:
    return (f"{failed} of {seeds} seeds had a failed measurement and were left out; in a campaign a failed "
            "candidate job rejects the candidate, a failed champion job is retried once")


def target_settings(contract: Contract, sandbox_mode: str) -> dict[str, Any]:
    """What a calibration's spreads depend on besides the tree: the command, metric, seed variable,
    timeout and sandbox. A stored calibration measured with other settings is not shown."""
    t = contract.target
    return {"command": t.command, "metric": t.metric, "seed_env": t.seed_env, "timeout_s": t.timeout_s,
            "sandbox": sandbox_mode, "network": contract.sandbox.network}


def gate_effects(contract: Contract, noise: Noise | None, effect: float | None, looks: Sequence[int] | None = None
                 ) -> dict[str, Any]:
    """What the contract's gate detects through `noise` (a benchmark's; None: an examples target,
    binary scores on `looks`, the val looks): see `effects_for`."""
    g = contract.gate
    if noise is None:
        return effects_for(contract, 0.0, "binary", margin_for(g.min_effect, 0.0, 0.0), effect, looks)
    return effects_for(contract, noise.paired_sd, "continuous", margin_for(g.min_effect, g.min_effect_rel, noise.mean),
                       effect, looks)


def effects_for(contract: Contract, sd: float, kind: Kind, margin: float, effect: float | None,
                looks: Sequence[int] | None = None) -> dict[str, Any]:
    """{margin, power, approximation, levels, effect, suggested_units} for a paired SD `sd`
    (continuous) or binary scores, on `looks` (default gate.units). levels: `level_effects` as JSON
    at the levels granted (trial 1's and, under campaign multiplicity, the last trial's).
    suggested_units: {"trial_<t>": looks or None} for `effect` (looks in the proportions of
    gate.units whose last look detects it; None: none up to MAX_SUGGESTED_UNITS), None without
    `effect`."""
    g, b = contract.gate, contract.budget
    levels = level_effects(sd, alpha=g.alpha, multiplicity=g.multiplicity, max_attempts=b.max_attempts,
                           looks=tuple(looks or g.units), kind=kind, margin=margin)
    suggested = None
    if effect is not None:
        suggested = {
            f"trial_{t}": _list(units_for_effect(effect, sd, g.units, trial_level(g.alpha, g.multiplicity, t,
                                                                                  b.max_attempts), kind, margin))
            for t in granted_trials(g.multiplicity, b.max_attempts)}
    return {"margin": margin, "power": DEFAULT_POWER,
            "approximation": APPROXIMATION if kind == "continuous" else BINARY_APPROXIMATION,
            "levels": [level.to_json() for level in levels], "effect": effect, "suggested_units": suggested}


def _list(looks: tuple[int, ...] | None) -> list[int] | None:
    return None if looks is None else list(looks)


def _examples(loaded: LoadedContract, effect: float | None) -> dict[str, Any]:
    from ratchet.targets.examples import clamp_looks, load_examples, split_examples

    c = loaded.contract
    data = load_examples(loaded.root / (c.target.examples or ""))
    n_val = len(split_examples(data.examples, c.target.split, c.campaign.seed).val)
    if n_val == 0:
        raise DataError("calibrate.no_val", "the val split is empty: the gate has nothing to measure on",
                        hint="add examples or raise the val share of target.split")
    if effect is not None and effect >= 1.0:
        raise DataError("calibrate.bad_effect", f"--effect is a pass-rate gain for an examples target, below 1; "
                        f"got {effect}", hint="e.g. --effect 0.05 for five more examples passed in a hundred")
    looks = clamp_looks(c.gate.units, n_val)
    result = gate_effects(c, None, effect, looks)
    warnings = []
    if c.gate.min_effect_rel > 0:
        warnings.append("gate.min_effect_rel is not included: the champion's pass rate is measured when a run starts")
    needed = [v[-1] for v in (result["suggested_units"] or {}).values() if v]
    if needed and max(needed) > n_val:
        warnings.append(f"detecting {effect} needs up to {max(needed)} val examples; val has {n_val}: add examples "
                        "or raise the val share of target.split")
    return {"kind": "examples", "val": n_val, "looks": list(looks), **result, "warnings": warnings}


def stored_calibration(loaded: LoadedContract, head_tree: str | None, sandbox_mode: str) -> dict[str, Any] | None:
    """The latest calibration of the project (`.ratchet/calibration.json`) with the current gate's
    detectable effects: {run_id, recorded_at, commit, tree, seeds, noise, head_changed, **gate_effects};
    {"ignored": why} when it was measured with other target settings or cannot be read; None when
    there is none."""
    path = loaded.root / RATCHET_DIR / CALIBRATION_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"ignored": f"{path} cannot be read ({exc}); run `ratchet calibrate` again"}
    try:
        if data.get("format") != CALIBRATION_FORMAT or not isinstance(data.get("target"), dict):
            raise ValueError(f"format {data.get('format')!r}")
        noise = Noise.from_json(data["noise"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"ignored": f"{path} is not a calibration ({exc}); run `ratchet calibrate` again"}
    settings = target_settings(loaded.contract, sandbox_mode)
    changed = sorted(k for k in settings if data["target"].get(k) != settings[k])
    if changed:
        return {"ignored": f"the stored calibration ({data.get('run_id')}) measured other target settings "
                           f"({', '.join(changed)} changed since); run `ratchet calibrate` again"}
    return {"run_id": data.get("run_id"), "recorded_at": data.get("recorded_at"), "commit": data.get("commit"),
            "tree": data.get("tree"), "seeds": data.get("seeds"), "noise": noise.to_json(),
            "head_changed": head_tree is not None and data.get("tree") != head_tree,
            **gate_effects(loaded.contract, noise, None)}
