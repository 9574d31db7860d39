"""The one-shot runs, each recorded as a run of its own mode that is never resumed: `ratchet
compare`'s paired trial of two trees, judged like a campaign's trial, and `ratchet calibrate`'s
champion measured on N seeds twice each. Opened, interrupted and stopped by `loop.life`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ratchet.compute.outcome import stderr_excerpt
from ratchet.core.canonical import digest
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import MeasurementError
from ratchet.core.gate import Decision
from ratchet.core.gate_design import margin_for_state
from ratchet.core.jobfiles import JobFiles
from ratchet.core.payloads import AttemptStarted, AttemptSubmitted
from ratchet.core.plan import NO_ATTEMPT, PlannedJob, seed_draws
from ratchet.core.stats.calibration import MIN_SEEDS, Noise, aa_skewness, estimate_noise
from ratchet.ledger.rundir import CALIBRATE_MODE, COMPARE_MODE
from ratchet.loop.kernel import Kernel
from ratchet.loop.life import new_kernel, one_shot_interrupts, record_started, record_stopped
from ratchet.loop.recorded import preflight, record_verdict, walk_recorded_plan
from ratchet.loop.trial import TrialOutcome
from ratchet.present.progress import CampaignUI
from ratchet.targets.base import UnitResult
from ratchet.targets.benchmark import BenchmarkTarget
from ratchet.targets.shell import ShellJobs

COMPARED_ATTEMPT = 1
"""A comparison's one attempt: CANDIDATE submitted against BASE."""

REPEATS = 2
"""Measurements per seed in a calibration."""


# -- compare -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """A recorded comparison: its run, the gate's decision, and the measured trial (None when the
    two trees are the same and nothing was measured)."""

    run_id: str
    decision: Decision
    outcome: TrialOutcome | None


def compare_salt(base_tree: str, candidate_tree: str, seed: int) -> str:
    """The deterministic salt of a comparison: 32 hex digits of the digest of the two trees and seed."""
    return digest(["ratchet.compare", base_tree, candidate_tree, seed])[7:39]


def compare_trees(loaded: LoadedContract, base_commit: str, base_tree: str, candidate_tree: str, summary: str,
                  ui: CampaignUI) -> Comparison:
    """Record one comparison of `candidate_tree` against `base_tree` (a benchmark target) at level
    gate.alpha: attempt 1 submits the candidate, the baseline is preflighted, the trial is measured
    and judged as a campaign's (`recorded.walk_recorded_plan`, `recorded.record_verdict`), the run stops
    `compared`. No promotion, no confirmation, no holdout. Unit seeds derive from `compare_salt`, so
    the same pair compared again reuses the measurement cache.

    Raises RatchetError `interrupted` (exit 130) on Ctrl-C, what `preflight` raises for a baseline
    without a metric."""
    c = loaded.contract
    salt = compare_salt(base_tree, candidate_tree, c.campaign.seed)
    kernel, _ = new_kernel(loaded, salt=salt)
    try:
        target = BenchmarkTarget(c, kernel.sandbox, salt)
        record_started(kernel, salt, base_commit, base_tree, target.reserve_units(), mode=COMPARE_MODE)
        kernel.record(AttemptStarted(attempt=COMPARED_ATTEMPT))
        kernel.record(AttemptSubmitted(attempt=COMPARED_ATTEMPT, tree=candidate_tree, summary=summary,
                                       report_blob=None, params=None))
        outcome = None
        if base_tree == candidate_tree:
            decision = Decision.without_jobs("no_change", "the two revisions have the same tree: nothing to measure",
                                             c.gate.alpha)
        else:
            with one_shot_interrupts(kernel, COMPARE_MODE):
                preflight(kernel, target, ui)
                plan = target.plan("trial", COMPARED_ATTEMPT, 1, base_tree, candidate_tree, target.looks("trial"))
                margin = margin_for_state(c.gate.min_effect, c.gate.min_effect_rel, kernel.state().champion_mean)
                outcome = walk_recorded_plan(kernel, target, plan, c.gate.alpha, margin, ui.jobs, ui.look_ended)
            decision = outcome.decision
        record_verdict(kernel, COMPARED_ATTEMPT, "trial", decision, outcome)
        record_stopped(kernel, "compared")
    finally:
        kernel.close()
    return Comparison(kernel.run.run_id, decision, outcome)


# -- calibrate -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Calibrated:
    """A recorded calibration. values: per seed (in unit order) its REPEATS values, None when one
    failed; table: per seed {unit, seed, values}; recorded_at: `run.stopped`'s timestamp (ISO-8601
    UTC); job_seconds: the elapsed seconds of every finished job; sandbox: the sandbox mode run;
    skewness: G1 of the A/A differences (`calibration.aa_skewness`; None under 3 seeds or no spread)."""

    run_id: str
    recorded_at: str
    jobs: int
    values: list[tuple[float, float] | None]
    table: list[dict[str, Any]]
    noise: Noise
    job_seconds: list[float]
    sandbox: str
    skewness: float | None = None


def calibrate_tree(loaded: LoadedContract, commit: str, tree: str, seeds: int, label: str,
                   ui: CampaignUI) -> Calibrated:
    """Record one calibration of `tree` (commit `commit`, named `label` to the user): `seeds` unit
    seeds drawn as a trial's are from the run's random salt, each measured REPEATS times back to
    back, uncached (a cached repeat would show no noise); the run stops `calibrated` with the values,
    the noise and the A/A differences' skewness in `run.stopped.data.calibration`.

    Raises MeasurementError `calibrate.too_few_seeds` (recorded as the stop's detail) when fewer
    than MIN_SEEDS seeds were measured twice, RatchetError `interrupted` (exit 130) on Ctrl-C."""
    c = loaded.contract
    kernel, salt = new_kernel(loaded)
    try:
        record_started(kernel, salt, commit, tree, 0, mode=CALIBRATE_MODE)
        # seeds drawn as a trial's are, from this run's random salt (trial index 0: no campaign trial's)
        jobs = calibration_jobs(tree, [d.seed for d in seed_draws(c.campaign.seed, salt, "trial", 0, seeds)])
        ui.note(f"calibrate: measuring {label} ({commit[:10]}) on {seeds} seeds, {REPEATS} times each")
        with one_shot_interrupts(kernel, CALIBRATE_MODE):
            results = _measure(kernel, jobs, ui)
        values = [_pair(results, job.unit) for job in jobs[::REPEATS]]
        try:
            noise = _noise(values, kernel, results)
        except MeasurementError as exc:
            record_stopped(kernel, "calibrated", detail=exc.code)
            raise
        table = [{"unit": job.unit, "seed": job.seed, "values": list(v) if v else None}
                 for job, v in zip(jobs[::REPEATS], values, strict=True)]
        skewness = aa_skewness([v for v in values if v is not None], c.target.direction)
        stopped = record_stopped(kernel, "calibrated", calibration={"values": table, "noise": noise.to_json(),
                                                                    "skewness": skewness})
        seconds = [float(r.elapsed_s) for r in kernel.state().finished_jobs.values()]
    finally:
        kernel.close()
    return Calibrated(kernel.run.run_id, stopped.ts, len(jobs), values, table, noise, seconds, kernel.sandbox.mode,
                      skewness)


def calibration_jobs(tree: str, seeds: Sequence[int]) -> list[PlannedJob]:
    """The champion `tree` on every seed, REPEATS times in a row (unit i = seeds[i]; repeat r is
    `a0000-calibrate-u<i>-champion-<r>`, its `order` r - 1)."""
    return [PlannedJob(f"a{NO_ATTEMPT:04d}-calibrate-u{unit:03d}-champion-{r}", "champion", tree, unit, seed,
                       r - 1, 0)
            for unit, seed in enumerate(seeds) for r in range(1, REPEATS + 1)]


def _measure(kernel: Kernel, jobs: list[PlannedJob], ui: CampaignUI) -> dict[str, UnitResult]:
    """Run `jobs` uncached through the one runner. Raises measure.Interrupted on Ctrl-C."""
    c = kernel.contract
    shell = ShellJobs(command=c.target.command or "", metric=c.target.metric, seed_env=c.target.seed_env,
                      timeout_s=c.target.timeout_s, kind=c.target.kind, sandbox=kernel.sandbox,
                      exclude=c.hidden_paths, cache=False)
    return kernel.runner(shell, ui.jobs).measure_jobs(jobs, attempt=NO_ATTEMPT, stage="calibrate")


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
    tail = stderr_excerpt(JobFiles.of(kernel.run.jobs, bad.job_id))
    raise MeasurementError(
        "calibrate.too_few_seeds",
        f"only {len(pairs)} of {len(values)} seeds were measured twice (at least {MIN_SEEDS} are needed): "
        f"job {bad.job_id} gave {bad.state}: {bad.reason}" + (f"\n--- stderr tail ---\n{tail}" if tail.strip() else ""),
        hint="run the command by hand in a clean checkout (`ratchet check --preflight` measures it once)",
    )
