"""Running one plan through its looks: measure the next look's units, ask the gate, re-run champion
units once when the gate asks, stop at the first verdict (DESIGN.md §6, sequential looks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ratchet.core.gate import Decision, GateSettings, UnitScore, decide
from ratchet.core.plan import Plan, PlannedJob, retry_job
from ratchet.loop.measure import JobRunner, Measurement


@dataclass(frozen=True)
class TrialOutcome:
    """A plan's decision plus the per-unit scores it was made on and the side means.

    champion_mean / candidate_mean: raw metric means over the units used (None when none);
    champion_lcb / candidate_lcb: the 95% Student-t bound of those means on the guarding side (lower
    for `max` metrics, upper for `min`), used by `gate.target`."""

    decision: Decision
    scores: tuple[UnitScore, ...]
    champion_mean: float | None
    candidate_mean: float | None
    champion_lcb: float | None = None
    candidate_lcb: float | None = None


def _ok(m: Measurement | None) -> bool:
    return m is not None and m.state == "ok" and m.value is not None and math.isfinite(m.value)


def unit_scores(plan: Plan, measured: Mapping[str, Measurement], retried: Mapping[int, Measurement],
                upto: int) -> list[UnitScore]:
    """UnitScores for the plan's first `upto` units from measurements by job id; `retried` holds a
    champion retry's measurement by unit (it replaces the first champion measurement)."""
    by_unit: dict[int, dict[str, PlannedJob]] = {}
    for job in plan.jobs:
        by_unit.setdefault(job.unit, {})[job.variant] = job
    scores = []
    for unit in range(upto):
        jobs = by_unit[unit]
        champ = retried.get(unit) or measured.get(jobs["champion"].job_id)
        cand = measured.get(jobs["candidate"].job_id)
        scores.append(UnitScore(
            unit=unit,
            champion=champ.value if _ok(champ) else None,
            candidate=cand.value if _ok(cand) else None,
            champion_failed=champ is not None and not _ok(champ),
            candidate_failed=cand is not None and not _ok(cand),
            champion_retried=unit in retried,
        ))
    return scores


def run_plan(plan: Plan, runner: JobRunner, settings: GateSettings) -> TrialOutcome:
    """Measure `plan` look by look until the gate decides. Raises measure.Interrupted on Ctrl-C."""
    measured: dict[str, Measurement] = {}
    retried: dict[int, Measurement] = {}
    for look, upto in enumerate(plan.looks):
        measured.update(runner.run(plan.jobs_for_look(look), attempt=plan.attempt, stage=plan.stage))
        decision = decide(unit_scores(plan, measured, retried, upto), settings)
        if decision.verdict == "continue" and decision.reason == "champion_retry":
            retry = [retry_job(j, 1) for j in plan.jobs if j.variant == "champion" and j.unit in decision.retry_units]
            results = runner.run(retry, attempt=plan.attempt, stage=plan.stage)
            retried.update({j.unit: results[j.job_id] for j in retry})
            decision = decide(unit_scores(plan, measured, retried, upto), settings)
        if decision.verdict != "continue":
            decision = _with_failure_detail(decision, plan, measured, retried)
            scores = unit_scores(plan, measured, retried, upto)
            champ = [s.champion for s in scores if s.champion is not None]
            cand = [s.candidate for s in scores if s.candidate is not None]
            return TrialOutcome(decision, tuple(scores), _mean(champ), _mean(cand),
                                _bound(champ, settings.direction), _bound(cand, settings.direction))
    raise AssertionError("the gate returned `continue` at the last look")  # decide() never does


def _with_failure_detail(decision: Decision, plan: Plan, measured: Mapping[str, Measurement],
                         retried: Mapping[int, Measurement]) -> Decision:
    """A failure verdict names what failed: the first failing job's reason (exit code and stderr
    line, the missing metric, NaN...), so a user need not dig through the ledger."""
    variant = {"candidate_failed": "candidate", "champion_failed": "champion"}.get(decision.reason)
    if variant is None:
        return decision
    for job in plan.jobs:
        m = retried.get(job.unit) if variant == "champion" and job.unit in retried else measured.get(job.job_id)
        if job.variant == variant and m is not None and not _ok(m):
            detail = f" First failure: unit {job.unit} ({job.job_id}): {m.state}: {m.reason}"
            return replace(decision, reason_text=(decision.reason_text + detail)[:1000])
    return decision


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _bound(values: list[float], direction: str) -> float | None:
    """The 95% Student-t confidence bound of the mean on the side that guards a target: the lower
    bound for `max` metrics, the upper bound for `min` metrics (None with fewer than 2 values)."""
    if len(values) < 2:
        return None
    import numpy as np

    from ratchet.core.stats.paired import mean_diff_interval

    low, high = mean_diff_interval(np.asarray(values, dtype=float), 0.95)
    return low if direction == "max" else high
