"""Running one plan through its looks: measure the next look's units, ask the gate, re-run champion
units once when the gate asks, stop at the first verdict (docs/gate.md, sequential looks). The same
walk for every target: units are seeds or examples, scores metrics or passes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ratchet.core.gate import Decision, GateSettings, UnitScore, decide
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.guardrails import Guardrail, allowance_for
from ratchet.core.plan import Plan, retry_job
from ratchet.loop.measure import Runner
from ratchet.present.progress import LookEnded
from ratchet.targets.base import Target, UnitResult

FAILURE_DETAIL_CHARS = 1000
"""Characters a failure verdict's reason (with its first failing job) is cut to, in its middle:
the end (a traceback's last lines, where the error is) is always kept."""

FAILURE_HEAD_CHARS = 300
"""Characters kept from the start of a failure verdict's reason when it is cut in the middle."""


@dataclass(frozen=True)
class TrialOutcome:
    """A plan's decision plus the per-unit scores it was made on and each side's summary.

    champion_mean / candidate_mean: raw means over the units used (a pass rate for examples; None
    when none); champion_lcb / candidate_lcb: the guarding bound of those means (lower for `max`,
    upper for `min`; Student-t for metrics, Wilson for pass rates), used by `gate.target`;
    results: the UnitResults the decision used, by planned job id (retries included); skewness:
    G1 of the direction-normalised paired differences of the units the decision counted
    (`paired_skewness`; None for pass/fail scores, fewer than 3 units or no spread)."""

    decision: Decision
    scores: tuple[UnitScore, ...]
    champion_mean: float | None
    candidate_mean: float | None
    champion_lcb: float | None = None
    candidate_lcb: float | None = None
    results: Mapping[str, UnitResult] | None = None
    skewness: float | None = None


def paired_skewness(scores: list[UnitScore], units: int, settings: GateSettings) -> float | None:
    """The adjusted Fisher-Pearson skewness G1 (stats.skew.sample_skewness) of the paired differences
    candidate - champion (negated for direction `min`, so a left tail is rare large losses) over
    the leading units measured on both sides, at most `units` of them (the deciding look's).
    None for pass/fail scores (their exact tests need no symmetry), fewer than 3 units, or no spread."""
    from ratchet.core.stats.skew import sample_skewness

    if settings.kind != "continuous":
        return None
    d = []
    for s in scores[:units]:
        if s.champion is None or s.candidate is None:
            break
        d.append(s.candidate - s.champion if settings.direction == "max" else s.champion - s.candidate)
    value = sample_skewness(d)
    return float(value) if isinstance(value, float) else None


def unit_scores(plan: Plan, results: Mapping[str, UnitResult], retried: Mapping[int, UnitResult],
                upto: int, guardrails: Sequence[str] = ()) -> list[UnitScore]:
    """UnitScores for the plan's first `upto` units from results by planned job id; `retried` holds
    a champion retry's result by unit (it replaces the first champion result). guardrails: the
    guardrail names whose values each UnitScore carries, in order (a side measured without one of
    them counts as failed: a missing guardrail is never a pass)."""
    pairs: dict[int, dict[str, UnitResult | None]] = {}
    for job in plan.jobs:
        if job.unit < upto:
            pairs.setdefault(job.unit, {})[job.variant] = results.get(job.job_id)
    scores = []
    for unit in range(upto):
        champ = _with_guardrails(retried.get(unit) or pairs[unit].get("champion"), guardrails)
        cand = _with_guardrails(pairs[unit].get("candidate"), guardrails)
        scores.append(UnitScore(
            unit=unit,
            champion=champ.value if champ is not None and not champ.failed else None,
            candidate=cand.value if cand is not None and not cand.failed else None,
            champion_failed=champ is not None and champ.failed,
            candidate_failed=cand is not None and cand.failed,
            champion_retried=unit in retried,
            champion_guardrails=_guardrail_values(champ, guardrails),
            candidate_guardrails=_guardrail_values(cand, guardrails),
        ))
    return scores


def _with_guardrails(r: UnitResult | None, names: Sequence[str]) -> UnitResult | None:
    """`r`, or `r` turned into a failed measurement when it was measured without a value for one of
    the guardrails `names` (a missing or non-finite guardrail is never a pass)."""
    if r is None or r.failed or r.value is None or not names:
        return r
    got = r.guardrails or {}
    missing = [n for n in names if not (isinstance(got.get(n), int | float) and math.isfinite(got[n]))]
    if not missing:
        return r
    return replace(r, value=None, failed=True, state="no_metric", reason=f"no value for guardrail {missing[0]!r}")


def _guardrail_values(r: UnitResult | None, names: Sequence[str]) -> tuple[float, ...]:
    """The guardrails' values of a usable result, in `names` order; () otherwise."""
    if r is None or r.failed or r.value is None or not names or r.guardrails is None:
        return ()
    return tuple(float(r.guardrails[n]) for n in names)


def measure_looks(plan: Plan, target: Target, runner: Runner, settings: GateSettings,
                  on_look: Callable[[LookEnded], None] | None = None) -> TrialOutcome:
    """Measure `plan` of `target` through `runner` look by look until the gate decides; a candidate
    failure stops its look at once (the rest of the look's jobs end `skipped`: the verdict is
    `candidate_failed` whatever they would measure). `on_look` hears of each look's end. Raises
    measure.Interrupted on Ctrl-C."""
    results: dict[str, UnitResult] = {}
    retried: dict[int, UnitResult] = {}
    started = time.monotonic()
    for look, upto in enumerate(plan.looks):
        jobs = plan.jobs_for_look(look)
        measured = runner.measure_jobs(jobs, attempt=plan.attempt, stage=plan.stage, stop_on_failure=True)
        results.update(measured)
        if on_look is not None:
            skipped = sum(1 for r in measured.values() if r.state == "skipped")
            on_look(LookEnded(plan.attempt, plan.stage, look + 1, len(plan.looks), len(measured) - skipped,
                              len(jobs), skipped, time.monotonic() - started))
        names = [g.name for g in settings.guardrails]
        decision = decide(unit_scores(plan, results, retried, upto, names), settings)
        if decision.verdict == "continue" and decision.reason == "champion_retry":
            retry = [retry_job(j, 1) for j in plan.jobs if j.variant == "champion" and j.unit in decision.retry_units]
            again = runner.measure_jobs(retry, attempt=plan.attempt, stage=plan.stage)
            retried.update({j.unit: again[j.job_id] for j in retry})
            decision = decide(unit_scores(plan, results, retried, upto, names), settings)
        if decision.verdict != "continue":
            outcome = _outcome(plan, target, decision, results, retried, upto, names)
            return replace(outcome, skewness=paired_skewness(list(outcome.scores), decision.units, settings))
    raise AssertionError("the gate returned `continue` at the last look")  # decide() never does


def _outcome(plan: Plan, target: Target, decision: Decision, results: Mapping[str, UnitResult],
             retried: Mapping[int, UnitResult], upto: int, guardrails: Sequence[str] = ()) -> TrialOutcome:
    decision = _with_failure_detail(decision, plan, results, retried)
    decision = _with_unit_endings(decision, results, "examples" if target.kind == "examples" else "units")
    scores = unit_scores(plan, results, retried, upto, guardrails)
    champ_mean, champ_bound = target.summary([s.champion for s in scores if s.champion is not None])
    cand_mean, cand_bound = target.summary([s.candidate for s in scores if s.candidate is not None])
    used = {**results, **{r.job_id: r for r in retried.values()}}
    return TrialOutcome(decision, tuple(scores), champ_mean, cand_mean, champ_bound, cand_bound, used)


def _with_failure_detail(decision: Decision, plan: Plan, results: Mapping[str, UnitResult],
                         retried: Mapping[int, UnitResult]) -> Decision:
    """A failure verdict names what failed: the first failing job's reason (exit code and stderr
    line, the missing metric, NaN...), so a user need not dig through the ledger."""
    variant = {"candidate_failed": "candidate", "champion_failed": "champion"}.get(decision.reason)
    if variant is None:
        return decision
    skipped = sum(1 for r in results.values() if r.state == "skipped")
    stopped = f" The rest of the look was stopped: {skipped} job(s) skipped." if skipped else ""
    for job in plan.jobs:
        r = retried.get(job.unit) if variant == "champion" and job.unit in retried else results.get(job.job_id)
        if job.variant == variant and r is not None and r.failed:
            detail = f" First failure: unit {job.unit} ({r.job_id}): {r.state}: {r.reason}"
            return replace(decision, reason_text=clip_middle(decision.reason_text + stopped + detail))
    return decision


def clip_middle(text: str, limit: int = FAILURE_DETAIL_CHARS, head: int = FAILURE_HEAD_CHARS) -> str:
    """`text` cut to at most `limit` characters by dropping its middle: the first `head` characters
    and the end are kept (the error a traceback ends with is never cut)."""
    if len(text) <= limit:
        return text
    marker = " [...] "
    return text[:head] + marker + text[len(text) - (limit - head - len(marker)):]


UNIT_ENDINGS = (("crash", "crashed"), ("timeout", "timed out"))
"""Unit states that end a unit without making it a failed measurement (an example whose solution
crashed or timed out scores 0), counted in the verdict's reason text, with their words."""


def _with_unit_endings(decision: Decision, results: Mapping[str, UnitResult], noun: str) -> Decision:
    """The verdict says how many units (`noun`: "examples" or "units") crashed or timed out on each
    side (examples whose solution crashed score 0 and would otherwise show only as `futility`);
    unchanged when none did."""
    counts = {side: {state: 0 for state, _ in UNIT_ENDINGS} for side in ("candidate", "champion")}
    totals = dict.fromkeys(counts, 0)
    for r in results.values():
        if r.variant in counts and not r.failed:
            totals[r.variant] += 1
            if r.state in counts[r.variant]:
                counts[r.variant][r.state] += 1
    parts = []
    for side, by_state in counts.items():
        said = [f"{n} {word}" for state, word in UNIT_ENDINGS if (n := by_state[state])]
        if said:
            parts.append(f"{side} {' and '.join(said)} of {totals[side]}")
    if not parts:
        return decision
    text = f"{decision.reason_text} {noun.capitalize()} that crashed or timed out (scored as failures): " \
           f"{'; '.join(parts)}."
    return replace(decision, reason_text=text)


def settings_for(plan: Plan, target: Target, level: float, margin: float, rules: int = GATE_RULES,
                 baseline_guardrails: Mapping[str, float] | None = None) -> GateSettings:
    """The gate's settings for `plan` on `target` at `level` with `margin`, judged by gate `rules`
    (this build's unless re-deriving an older run), with the target's guardrails (their relative
    allowances from `baseline_guardrails`, the preflight's means by name: RunState.baseline_guardrails)."""
    return GateSettings(looks=plan.looks, level=level, margin=margin, kind=target.score_kind,
                        direction=target.direction, seed=plan.gate_seed, test=target.test,
                        metric_range=target.metric_range, rules=rules, max_unit_loss=target.max_unit_loss,
                        guardrails=guardrails_for(target, baseline_guardrails))


def guardrails_for(target: Target, baseline: Mapping[str, float] | None) -> tuple[Guardrail, ...]:
    """The target's [[gate.guardrails]] as the gate tests them: each allowance from its contract keys
    and the baseline's mean (core.guardrails.allowance_for); scores pass/fail for an examples target."""
    return tuple(Guardrail(g.metric, g.direction,
                           allowance_for(g.max_regression, g.max_regression_rel, (baseline or {}).get(g.metric)),
                           target.score_kind)
                 for g in target.guardrail_rules)


def baseline_guardrails(finished: Sequence[Any]) -> dict[str, float]:
    """Each guardrail's mean over the preflight's ok jobs (`audit_view.Finished` records), as the
    run's state folds it (RunState.baseline_guardrails): what relative allowances were computed from."""
    sums: dict[str, list[float]] = {}
    for f in finished:
        d = f.payload
        if d.stage == "preflight" and d.state == "ok" and d.value is not None and d.guardrails:
            for name, value in d.guardrails.items():
                acc = sums.setdefault(name, [0.0, 0.0])
                acc[0], acc[1] = acc[0] + float(value), acc[1] + 1
    return {name: total / count for name, (total, count) in sums.items()}
