"""Stages recorded once: a plan with its level and margin (`trial.planned`), walked through the
gate; a verdict (`trial.judged`); the baseline's preflight. The campaign (every worker's attempts)
and the one-shot runs (`loop.one_shot`) record through these, so a resume finds each step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from ratchet.core.errors import RatchetError
from ratchet.core.gate import Decision
from ratchet.core.payloads import TrialJudged, TrialPlanned
from ratchet.core.plan import NO_ATTEMPT, Plan
from ratchet.loop.audit_trail import check_recorded_plan
from ratchet.loop.kernel import Kernel
from ratchet.loop.life import record_stopped
from ratchet.loop.measure import Progress
from ratchet.loop.trial import TrialOutcome, measure_looks, settings_for
from ratchet.present.progress import CampaignUI, LookEnded
from ratchet.targets.base import Target


def walk_recorded_plan(k: Kernel, target: Target, plan: Plan, level: float, margin: float,
                       progress: Progress | None = None, on_look: Callable[[LookEnded], None] | None = None
                       ) -> TrialOutcome:
    """Record `trial.planned` for `plan` with its `level` and `margin` (`record_plan`) and walk its
    looks through the gate (`measure_recorded_plan`). Raises measure.Interrupted on Ctrl-C."""
    planned = record_plan(k, plan, level, margin)
    return measure_recorded_plan(k, target, plan, planned, margin, progress, on_look)


def record_plan(k: Kernel, plan: Plan, level: float, margin: float) -> TrialPlanned:
    """Record `trial.planned` for `plan` with its `level` and `margin` (once: a resume finds it, and
    judges with the level and margin recorded then); returns the recorded payload. Raises
    LedgerError when a recorded plan of the same stage differs (`check_recorded_plan`)."""
    with k.guard:
        check_recorded_plan(k, plan)
        blob = k.blobs.put_bytes(plan.canonical_bytes())
        return k.once(TrialPlanned(
            attempt=plan.attempt, trial=plan.trial, stage=plan.stage, plan_digest=plan.digest, plan_blob=blob,
            level=level, margin=margin, looks=list(plan.looks), jobs=len(plan.jobs),
        ), "attempt", "stage")


def measure_recorded_plan(k: Kernel, target: Target, plan: Plan, planned: TrialPlanned, margin: float,
                          progress: Progress | None = None, on_look: Callable[[LookEnded], None] | None = None
                          ) -> TrialOutcome:
    """Walk recorded `plan`'s looks through the gate at the level and margin `planned` recorded
    (`margin` for a plan recorded before margins were; `on_look` hears of each look's end). Raises
    measure.Interrupted on Ctrl-C."""
    margin = margin if planned.margin is UNSET else planned.margin
    settings = settings_for(plan, target, planned.level, margin, baseline_guardrails=k.state().baseline_guardrails)
    return measure_looks(plan, target, k.runner(target, progress), settings, on_look)


def record_verdict(k: Kernel, attempt: int, stage: str, decision: Decision, outcome: TrialOutcome | None,
                   **extra: Any) -> TrialJudged:
    """Record `trial.judged` for stage `stage` of `attempt` (once: a resume finds it): the
    decision, the means, bounds and paired skewness of `outcome` (None: judged without jobs) and
    `extra` (a holdout's splits). Returns the recorded payload."""
    data: dict[str, Any] = {"attempt": attempt, "stage": stage, **decision.to_json(), **extra}
    if outcome is not None:
        data.update(champion_mean=outcome.champion_mean, candidate_mean=outcome.candidate_mean,
                    champion_lcb=outcome.champion_lcb, candidate_lcb=outcome.candidate_lcb,
                    skewness=outcome.skewness)
    return k.once(TrialJudged(**data), "attempt", "stage")


def preflight(k: Kernel, target: Target, ui: CampaignUI) -> None:
    """Measure the baseline once before any attempt (stage `preflight`; a resume reuses it). A
    target that cannot measure at all stops the run here: `run.stopped` with stop reason
    `preflight_failed` is recorded, then the target's MeasurementError (exit 2) is raised."""
    state = k.state()
    jobs = target.preflight_jobs(state.baseline.tree or "")
    if not jobs:
        return
    ui.note("preflight: measuring the baseline once")
    results = k.runner(target, ui.jobs).measure_jobs(jobs, attempt=NO_ATTEMPT, stage="preflight")
    try:
        target.check_preflight(list(results.values()), k.run.jobs)
    except RatchetError as exc:
        record_stopped(k, "preflight_failed", detail=exc.code)
        raise
