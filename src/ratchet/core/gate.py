"""The gate: a trial's paired scores in, a verdict out (docs/gate.md).

Pure: takes the unit scores measured so far and the trial's settings, returns a frozen Decision;
touches no file, process or clock. The statistics live in `ratchet.core.stats` and are imported when a
trial is judged, so importing this module for its types stays cheap (no numpy/scipy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ratchet.core.errors import RatchetError
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.guardrails import Guardrail, GuardrailCheck
from ratchet.core.vocab import GateTest, PValueKind, Spending

Verdict = Literal["accepted", "rejected", "inconclusive", "continue"]
VERDICTS: Mapping[str, str] = {
    "accepted": "the candidate's gain over the margin is significant at the trial's level",
    "rejected": "the candidate is not promoted (the reason says why)",
    "inconclusive": "no verdict can be reached (the champion's side could not be measured)",
    "continue": "not decided yet: measure the next look's units (or re-run champion units) and judge again",
}

Reason = Literal[
    "significant_gain",
    "not_significant",
    "futility",
    "harmful_tail",
    "below_floor",
    "candidate_failed",
    "champion_failed",
    "champion_retry",
    "no_change",
    "duplicate",
    "scope_violation",
    "invalid_candidate",
    "stale",
    "not_confirmed",
    "budget",
    "next_look",
    "guardrail",
]
REASONS: Mapping[str, str] = {
    "significant_gain": "accepted: p-value <= the look's threshold (H0: mean gain <= margin rejected)",
    "not_significant": "rejected: the last look was reached without a significant gain",
    "futility": "rejected early: at an interim look the mean gain was at or below the margin",
    "harmful_tail": "rejected: a unit's loss lies far below the other units' spread (harmful-tail guard)",
    "below_floor": "rejected: a unit's paired difference lay below the floor -gate.max_unit_loss (floor test)",
    "candidate_failed": "rejected: a candidate measurement failed on a unit (crash, timeout, no metric, NaN)",
    "champion_failed": "inconclusive: the champion's measurement failed again on a unit after its retry",
    "champion_retry": "continue: champion measurements failed on units that are re-run once (retry_units)",
    "no_change": "rejected without jobs: the candidate's tree equals the champion's",
    "duplicate": "rejected without jobs: this tree was already measured in this run",
    "scope_violation": "rejected without jobs: the change leaves scope.allowed or adds a symlink/submodule",
    "invalid_candidate": "rejected without jobs: the submission is not a usable candidate tree",
    "stale": ("rejected without jobs: another attempt was promoted since the candidate was built, and its "
              "change does not re-base cleanly onto the new champion (a git merge conflict)"),
    "not_confirmed": "rejected: accepted by its trial but the confirmation on fresh units did not pass",
    "budget": "inconclusive: the remaining budget cannot cover the trial's worst case",
    "next_look": "continue: this look was not decisive; measure the next look's units and judge again",
    "guardrail": "rejected: a guardrail regressed beyond its allowance, or its non-inferiority was not shown",
}

WITHOUT_JOBS: frozenset[str] = frozenset({"no_change", "duplicate", "scope_violation", "invalid_candidate", "stale"})
"""The reasons a trial is decided before any job ran (`Decision.without_jobs`): they depend on the
candidate alone, never on measured data."""

IntervalKind = Literal["descriptive_student_t", "descriptive_newcombe"]
"""The two-sided interval shown next to an estimate: descriptive only (it is not the test inverted;
the verdict's `bound` is): Student t for continuous scores, Newcombe's for binary ones."""


REPORT_CONFIDENCE = 0.95  # intervals are for display: two-sided 95%, whatever the trial's level
NO_LOOK = -1  # Decision.look when no look was evaluated (failures, decisions without jobs)


@dataclass(frozen=True)
class UnitScore:
    """One unit's paired measurement, raw (not direction-normalised).

    unit: the unit's 0-based index in the plan. champion / candidate: the metric (binary kind: 0 or
    1), or None when that side failed (then *_failed is True) or has not run yet. A NaN or infinite
    score counts as a failure of its side. champion_retried: the champion value comes from its retry.
    champion_guardrails / candidate_guardrails: each guardrail's raw value on this unit, in
    GateSettings.guardrails order (empty without guardrails; a side's failure covers them too).
    """

    unit: int
    champion: float | None
    candidate: float | None
    champion_failed: bool = False
    candidate_failed: bool = False
    champion_retried: bool = False
    champion_guardrails: tuple[float, ...] = ()
    candidate_guardrails: tuple[float, ...] = ()


@dataclass(frozen=True)
class GateSettings:
    """How a trial is judged.

    looks: cumulative units at each look (gate.units); level: the trial's level in [0, 1) from
    stats.multiplicity.attempt_levels (`trial` for a trial, `confirm` for its confirmation);
    margin: the minimum effect tested as the null, metric units, >= 0 (margin_for); kind: binary
    (pass/fail scores) or continuous; direction: max or min;
    seed: seeds the sign-flip Monte Carlo beyond 20 units; test: gate.test for continuous scores
    (`guarded_sign_flip`, `sign_flip` or `betting`; binary scores always use their exact tests);
    metric_range: (lo, hi) of one score, target.metric_range, required by `betting` under rules 1
    (scores outside it raise `gate.bad_score`, except under the floor test); spending: how the level
    is spread over the looks (stats.sequential); rules: the gate rules version the verdict is judged
    by (gate_design.GATE_RULES; older runs re-derive with theirs); max_unit_loss: gate.max_unit_loss
    (metric units, > 0), the floor test's floor is -max_unit_loss (default hi - lo of metric_range;
    `betting` under rules 2 needs one of the two). guardrails: further metrics the candidate must
    not regress beyond their allowance (core.guardrails; docs/gate.md, Guardrails).
    Raises RatchetError `gate.bad_settings` (or PlanError for bad looks) when built with invalid values.
    """

    looks: tuple[int, ...]
    level: float
    margin: float
    kind: Literal["binary", "continuous"]
    direction: Literal["max", "min"]
    seed: int
    test: GateTest = "guarded_sign_flip"
    metric_range: tuple[float, float] | None = None
    spending: Spending = "linear"
    rules: int = GATE_RULES
    max_unit_loss: float | None = None
    guardrails: tuple[Guardrail, ...] = ()

    def __post_init__(self) -> None:
        from ratchet.core.stats.sequential import validate_looks

        object.__setattr__(self, "looks", validate_looks(self.looks))
        problems = []
        if not (
            isinstance(self.level, int | float) and math.isfinite(self.level) and 0.0 <= self.level < 1.0
        ):
            problems.append(f"level must be in [0, 1), got {self.level!r}")
        if not (isinstance(self.margin, int | float) and math.isfinite(self.margin) and self.margin >= 0.0):
            problems.append(f"margin must be finite and >= 0, got {self.margin!r}")
        if self.kind not in ("binary", "continuous"):
            problems.append(f"kind must be 'binary' or 'continuous', got {self.kind!r}")
        if self.direction not in ("max", "min"):
            problems.append(f"direction must be 'max' or 'min', got {self.direction!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            problems.append(f"seed must be an integer, got {self.seed!r}")
        if isinstance(self.rules, bool) or self.rules not in range(1, GATE_RULES + 1):
            problems.append(f"rules must be a gate rules version 1 to {GATE_RULES}, got {self.rules!r}")
        problems += _test_problems(self.test, self.metric_range, self.kind, self.spending)
        problems += _floor_problems(self.test, self.metric_range, self.kind, self.rules, self.max_unit_loss)
        if self.metric_range is not None and not problems:
            object.__setattr__(self, "metric_range", (float(self.metric_range[0]), float(self.metric_range[1])))
        if problems:
            raise RatchetError("gate.bad_settings", "; ".join(problems))


def _test_problems(test: object, metric_range: object, kind: str, spending: object) -> list[str]:
    """What is wrong with a gate's test, metric range and spending (empty when valid)."""
    problems = []
    if test not in ("guarded_sign_flip", "sign_flip", "betting"):
        problems.append(f"test must be 'guarded_sign_flip', 'sign_flip' or 'betting', got {test!r}")
    if metric_range is not None:
        ok = (
            isinstance(metric_range, tuple | list)
            and len(metric_range) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in metric_range)
            and metric_range[0] < metric_range[1]
        )
        if not ok:
            problems.append(f"metric_range must be (lo, hi) with finite lo < hi, got {metric_range!r}")
    if spending not in ("linear", "pocock"):
        problems.append(f"spending must be 'linear' or 'pocock', got {spending!r}")
    return problems


def _floor_problems(test: object, metric_range: object, kind: str, rules: object, max_unit_loss: object) -> list[str]:
    """What is wrong with the floor of `betting` (empty when valid): rules 1 bets over the range, so
    it needs metric_range; rules 2 needs max_unit_loss (finite, > 0) or metric_range."""
    if max_unit_loss is not None and not (
        isinstance(max_unit_loss, int | float) and not isinstance(max_unit_loss, bool)
        and math.isfinite(max_unit_loss) and max_unit_loss > 0
    ):
        return [f"max_unit_loss must be finite and > 0, got {max_unit_loss!r}"]
    if test != "betting" or kind != "continuous" or metric_range is not None:
        return []
    if rules == 1:
        return ["test 'betting' needs metric_range (target.metric_range = [lo, hi]) under gate rules 1"]
    if max_unit_loss is None:
        return ["test 'betting' needs max_unit_loss (gate.max_unit_loss) or metric_range (target.metric_range)"]
    return []


@dataclass(frozen=True)
class Decision:
    """The gate's decision on a trial (possibly interim: verdict `continue`).

    estimate: mean paired difference, direction-normalised (positive = candidate better), metric
    units, over the `units` units of the deciding look; interval: two-sided REPORT_CONFIDENCE
    interval for it (display only; None when unbounded or not computed); p_value: the one-sided
    p-value at that look; threshold: the look's p-value threshold; units: units judged;
    look: 0-based look index, NO_LOOK (-1) when none was evaluated; level: the trial's level;
    retry_units: champion-side units to re-run, non-empty only with reason `champion_retry`;
    p_value_kind: how p_value was computed (exact, bound, monte_carlo); bound: the one-sided lower
    bound of the mean gain (direction-normalised, metric units) from the same test inverted at the
    deciding look's threshold: accepted iff bound >= margin (None when the test bounds nothing, or
    no look was judged); interval_kind: what `interval` is (descriptive, not the test); test: the
    test that judged (`guarded_sign_flip`, `sign_flip`, `betting`, or `binary`); guardrails: each
    guardrail's result (core.guardrails.GuardrailCheck), empty without guardrails.
    """

    verdict: Verdict
    reason: Reason
    reason_text: str
    estimate: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    units: int
    look: int
    level: float
    retry_units: tuple[int, ...] = ()
    threshold: float | None = None
    p_value_kind: PValueKind | None = None
    bound: float | None = None
    interval_kind: IntervalKind | None = None
    test: str | None = None
    guardrails: tuple[GuardrailCheck, ...] = ()

    @classmethod
    def without_jobs(cls, reason: Reason, text: str, level: float) -> Decision:
        """A `rejected` decision reached before any job ran (no_change, duplicate, scope_violation,
        invalid_candidate): no estimate, no units, look NO_LOOK.
        """
        return cls("rejected", reason, text, None, None, None, 0, NO_LOOK, level)

    def to_json(self) -> dict[str, object]:
        """Plain JSON object (for the ledger's `trial.judged` event and --json output)."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "reason_text": self.reason_text,
            "estimate": self.estimate,
            "interval": None if self.interval is None else list(self.interval),
            "p_value": self.p_value,
            "threshold": self.threshold,
            "units": self.units,
            "look": self.look,
            "level": self.level,
            "retry_units": list(self.retry_units),
            "p_value_kind": self.p_value_kind,
            "bound": self.bound,
            "interval_kind": self.interval_kind,
            "test": self.test,
        } | ({"guardrails": [g.to_json() for g in self.guardrails]} if self.guardrails else {})


def _bad(value: float | None) -> bool:
    return value is not None and not math.isfinite(value)


def _units_text(units: Sequence[int]) -> str:
    shown = ", ".join(str(u) for u in units[:8])
    return f"unit {shown}" if len(units) == 1 else f"units {shown}" + (", ..." if len(units) > 8 else "")


def _failure_decision(scores: Sequence[UnitScore], level: float) -> Decision | None:
    """Failure rules, before any statistics: candidate failures reject, champion failures retry once."""
    complete = sum(1 for s in scores if s.champion is not None and s.candidate is not None)

    def failed(verdict: Verdict, reason: Reason, text: str, retry: tuple[int, ...] = ()) -> Decision:
        return Decision(verdict, reason, text, None, None, None, complete, NO_LOOK, level, retry)

    cand = tuple(s.unit for s in scores if s.candidate_failed or _bad(s.candidate))
    if cand:
        return failed("rejected", "candidate_failed",
                      f"The candidate failed on {_units_text(cand)}; a failing candidate is never accepted.")
    champ = [s for s in scores if s.champion_failed or _bad(s.champion)]
    again = tuple(s.unit for s in champ if s.champion_retried)
    if again:
        return failed("inconclusive", "champion_failed",
                      f"The champion's measurement failed again on {_units_text(again)} after a retry; no verdict.")
    if champ:
        retry = tuple(s.unit for s in champ)
        return failed("continue", "champion_retry",
                      f"The champion's measurement failed on {_units_text(retry)}; re-running them once.", retry)
    return None


def _complete_prefix(scores: Sequence[UnitScore], looks: tuple[int, ...]) -> list[UnitScore]:
    """The leading units with both sides measured; raises gate.* errors on too few/many or duplicates."""
    units = [s.unit for s in scores]
    if len(set(units)) != len(units):
        raise RatchetError("gate.duplicate_unit", f"unit scores repeat a unit: {sorted(units)}")
    prefix = []
    for s in scores:
        if s.champion is None or s.candidate is None:
            break
        prefix.append(s)
    if len(prefix) < looks[0]:
        raise RatchetError(
            "gate.too_few_units",
            f"{len(prefix)} complete units, the first look needs {looks[0]}",
            hint="judge a trial only once a look's units are all measured",
        )
    if len(prefix) > looks[-1]:
        raise RatchetError(
            "gate.too_many_units", f"{len(prefix)} complete units, the last look is {looks[-1]}"
        )
    return prefix


def _passes(values: Sequence[float], direction: str) -> list[int]:
    if any(v not in (0, 1) for v in values):
        raise RatchetError(
            "gate.bad_score", "binary scores must be 0 or 1", hint="use kind 'continuous' for other metrics"
        )
    return [int(v) if direction == "max" else 1 - int(v) for v in values]


def _differences(prefix: list[UnitScore], settings: GateSettings) -> tuple[Any, Any, Any]:
    """Direction-normalised paired differences d (numpy, candidate better > 0) and, for binary, passes."""
    import numpy as np

    # The prefix holds only units measured on both sides (_complete_prefix): no None is left.
    champ: Sequence[float] = [float(s.champion or 0.0) for s in prefix]
    cand: Sequence[float] = [float(s.candidate or 0.0) for s in prefix]
    if settings.kind == "binary":
        champ, cand = _passes(champ, settings.direction), _passes(cand, settings.direction)
    d = np.asarray(cand, dtype=float) - np.asarray(champ, dtype=float)
    if settings.kind == "continuous" and settings.direction == "min":
        d = -d
    return d, np.asarray(cand), np.asarray(champ)


def look_test(settings: GateSettings) -> Any:
    """The paired test `decide` runs at every look for these settings (stats.per_look.LookTest)."""
    from ratchet.core.stats.per_look import LookTest

    return LookTest(
        settings.kind, settings.test, max(settings.level, 1e-300), settings.looks[-1], settings.seed,
        settings.metric_range, settings.rules, settings.max_unit_loss,
    )


def look_boundaries(settings: GateSettings, test: Any = None) -> Any:
    """Every look's threshold for these settings (stats.sequential.boundaries; an anytime-valid
    test gets the full level at every look)."""
    from ratchet.core.stats.sequential import boundaries

    test = test or look_test(settings)
    min_p = test.min_p if test.uses_betting else None
    return boundaries(settings.level, settings.looks, settings.kind, settings.margin, settings.spending, min_p)


def _interval(d: Any, cand: Any, champ: Any, kind: str) -> tuple[tuple[float, float] | None, IntervalKind]:
    from ratchet.core.stats.paired import mean_diff_interval, newcombe_interval

    if kind == "binary":
        n11, n00 = int(((cand == 1) & (champ == 1)).sum()), int(((cand == 0) & (champ == 0)).sum())
        low, high = newcombe_interval(n11, int((d > 0).sum()), int((d < 0).sum()), n00, REPORT_CONFIDENCE)
        label: IntervalKind = "descriptive_newcombe"
    else:
        low, high = mean_diff_interval(d, REPORT_CONFIDENCE)
        label = "descriptive_student_t"
    return ((low, high) if math.isfinite(low) and math.isfinite(high) else None), label


def _check_range(d_scores: Any, settings: GateSettings) -> None:
    """Scores outside the declared metric range void the rules-1 betting test's guarantee: refuse
    them (the floor test needs only its floor, checked unit by unit as `below_floor`)."""
    if settings.metric_range is None or settings.kind != "continuous":
        return
    if settings.test == "betting" and settings.rules >= 2:
        return
    lo, hi = settings.metric_range
    bad = [v for v in d_scores if not lo <= v <= hi]
    if bad:
        raise RatchetError(
            "gate.bad_score",
            f"score {bad[0]!r} lies outside target.metric_range [{lo:g}, {hi:g}]",
            hint="widen target.metric_range to every value the metric can take",
        )


def decide(scores: Sequence[UnitScore], settings: GateSettings) -> Decision:
    """Judge a trial from the units measured so far (in plan order).

    Failure rules first: any candidate-side failure -> rejected/candidate_failed;
    a champion failure after its retry -> inconclusive/champion_failed; a champion failure not yet
    retried -> continue/champion_retry with retry_units. Otherwise the looks reached by the leading
    complete units are walked in order (stats.sequential.walk_looks), which gives the same result as
    judging after each look: the harmful-tail guard fires (guarded_sign_flip) -> rejected/harmful_tail;
    a unit below the floor -max_unit_loss (`betting`, rules 2) -> rejected/below_floor (bound None);
    p <= the look's threshold -> accepted/significant_gain; at an interim look, mean gain <= margin
    -> rejected/futility; at the last look -> rejected/not_significant; else continue. The p-value
    (labelled in p_value_kind) is exact McNemar / exact unconditional (binary), the sign-flip test or
    the betting test (continuous, settings.test) of H0: mean gain <= settings.margin; `bound` inverts
    the same test at the deciding look's threshold (stats.per_look.LookTest).
    Raises RatchetError `gate.too_few_units` (fewer complete units than looks[0]),
    `gate.too_many_units`, `gate.duplicate_unit`, `gate.bad_score` (binary score not 0/1, or a
    score outside settings.metric_range, except under the floor test).
    """
    import numpy as np

    from ratchet.core.stats.sequential import OUTCOMES, walk_looks

    failed = _failure_decision(scores, settings.level)
    if failed is not None:
        return failed
    prefix = _complete_prefix(scores, settings.looks)
    _check_range([v for s in prefix for v in (s.champion, s.candidate)], settings)
    d, cand, champ = _differences(prefix, settings)
    looks, test = settings.looks, look_test(settings)
    marks = look_boundaries(settings, test)
    seen = sum(1 for n in looks if n <= len(d))
    p = [float(test.p_value(d[: looks[k]], settings.margin, marks[k].increment)) for k in range(seen)]
    est = [float(d[: looks[k]].mean()) for k in range(seen)]
    guard = [bool(test.guard(d[: looks[k]])) for k in range(seen)]
    look_arr, outcome_arr = walk_looks(
        np.array([p]), np.array([est]), settings.margin, [m.increment for m in marks], np.array([guard])
    )
    k, outcome = int(look_arr[0]), OUTCOMES[int(outcome_arr[0])]
    n, threshold = looks[k], marks[k].increment
    interval, interval_kind = _interval(d[:n], cand[:n], champ[:n], settings.kind)
    label = test.label(n, settings.margin)
    checks: tuple[GuardrailCheck, ...] = ()
    at = k  # the look whose p-value and bound the decision reports (with guardrails: the primary's first rejection)
    if settings.guardrails:
        from ratchet.core.guardrails import guarded_walk, rejection_text

        k, outcome, checks = guarded_walk(*_guardrail_values(prefix, len(settings.guardrails)), settings, seen,
                                          p, est, guard, [m.increment for m in marks])
        at = next((j for j in range(k + 1) if p[j] <= marks[j].increment), k)
        n, threshold = looks[k], marks[at].increment
        interval, interval_kind = _interval(d[:n], cand[:n], champ[:n], settings.kind)
        label = test.label(looks[at], settings.margin)
    if outcome == "guardrail":
        rejected: tuple[Verdict, Reason, str] = ("rejected", "guardrail", rejection_text(checks, k, looks, est[k]))
        verdict, reason, text = rejected
        bound = test.bound(d[: looks[at]], settings.margin, threshold, p[at] <= threshold)
    elif outcome == "harmful_tail" and test.uses_floor:
        verdict, reason, text = _floor_text(prefix, d, test.floor, k, looks, est[k])
        bound = None  # the floor test's guarantee (and so its bound) needs every unit above the floor
    else:
        verdict, reason, text = _look_text(outcome, k, looks, est[k], p[at], threshold, settings.margin, label)
        bound = test.bound(d[: looks[at]], settings.margin, threshold, outcome == "accepted")
    return Decision(
        verdict, reason, text, est[k], interval, p[at], n, k, settings.level, (), threshold,
        label, bound, interval_kind,
        "binary" if settings.kind == "binary" else settings.test, checks,
    )


def _guardrail_values(prefix: Sequence[UnitScore], count: int) -> tuple[Any, Any]:
    """(champion, candidate) guardrail scores as arrays (guardrails, units); raises gate.bad_score when
    a unit lacks a value for a guardrail."""
    import numpy as np

    if any(len(s.champion_guardrails) != count or len(s.candidate_guardrails) != count for s in prefix):
        raise RatchetError("gate.bad_score", f"every unit needs a value for each of the {count} guardrail(s)")
    champ = np.array([[s.champion_guardrails[i] for s in prefix] for i in range(count)], dtype=float)
    cand = np.array([[s.candidate_guardrails[i] for s in prefix] for i in range(count)], dtype=float)
    return champ.reshape(count, len(prefix)), cand.reshape(count, len(prefix))


def _floor_text(prefix: Sequence[UnitScore], d: Any, floor: float, k: int, looks: tuple[int, ...],
                est: float) -> tuple[Verdict, Reason, str]:
    """Verdict, reason and sentence for a trial with a unit below the floor at look k: names the first
    such unit (its plan index), its paired difference and the floor."""
    from ratchet.core.stats.floor import below_floor

    i = int(below_floor(d[: looks[k]], floor).argmax())
    return (
        "rejected",
        "below_floor",
        f"Unit {prefix[i].unit} shows a paired difference of {float(d[i]):+.4g}, below the floor {floor:g} "
        f"(-gate.max_unit_loss) at look {k + 1} of {len(looks)} ({looks[k]} units): the floor test holds "
        f"its level only for units at or above the floor, so the candidate is rejected; mean gain {est:+.4g}.",
    )


def _look_text(
    outcome: str,
    k: int,
    looks: tuple[int, ...],
    est: float,
    p: float,
    threshold: float,
    margin: float,
    label: str,
) -> tuple[Verdict, Reason, str]:
    """Verdict, reason and one human sentence for a look's outcome."""
    where = f"look {k + 1} of {len(looks)} ({looks[k]} units)"
    test = f"p = {p:.3g} ({label.replace('_', ' ')}) vs threshold {threshold:.3g}"
    if outcome == "accepted":
        return (
            "accepted",
            "significant_gain",
            f"Mean gain {est:+.4g} exceeds the margin {margin:g} significantly at {where}: {test}.",
        )
    if outcome == "harmful_tail":
        return (
            "rejected",
            "harmful_tail",
            f"A unit lost far more than the others at {where} (harmful-tail guard); mean gain {est:+.4g}.",
        )
    if outcome == "futility":
        return (
            "rejected",
            "futility",
            f"Mean gain {est:+.4g} is at or below the margin {margin:g} at {where}; stopped for futility.",
        )
    if outcome == "not_significant":
        return (
            "rejected",
            "not_significant",
            f"Mean gain {est:+.4g} over the margin {margin:g} is not significant at {where}: {test}.",
        )
    return "continue", "next_look", f"Not decided at {where} ({test}); measure up to {looks[k + 1]} units."
