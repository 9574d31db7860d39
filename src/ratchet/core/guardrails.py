"""Guardrails (pure): further metrics a candidate must not regress beyond their allowance, judged
beside the primary gain (docs/gate.md, Guardrails).

Each guardrail g is tested for non-inferiority, H0: mean paired change (direction-normalised,
positive = candidate better) <= -allowance, with the primary's own machinery: the same paired test
(`stats.per_look.LookTest`: the sign-flip test with its skew correction and harmful-tail guard for
metrics, the exact unconditional test for pass rates) at the null -allowance, and the level spent
across the same looks (`stats.sequential.boundaries`). A candidate is accepted only when the primary
AND every guardrail have rejected their nulls: an intersection-union test (Berger 1982,
Technometrics 24:295-300), whose type-I error is at most the largest of its tests' levels, so no
multiplicity correction is needed. `walk_guarded` is the look walk `gate.decide` runs for one trial
and the simulations run for many (`benchmarks/guardrails.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from ratchet.core.errors import RatchetError
from ratchet.core.stats.sequential import ACCEPTED, FUTILITY, HARMFUL_TAIL, NOT_SIGNIFICANT, OUTCOMES
from ratchet.core.vocab import Direction, GateTest, ScoreKind, Spending

if TYPE_CHECKING:
    from ratchet.core.stats.per_look import LookTest


class WalkSettings(Protocol):
    """What the walks read of `gate.GateSettings` (gate imports this module, so it is named here by
    its shape)."""

    @property
    def looks(self) -> tuple[int, ...]: ...

    @property
    def level(self) -> float: ...

    @property
    def margin(self) -> float: ...

    @property
    def kind(self) -> ScoreKind: ...

    @property
    def seed(self) -> int: ...

    @property
    def test(self) -> GateTest: ...

    @property
    def metric_range(self) -> tuple[float, float] | None: ...

    @property
    def spending(self) -> Spending: ...

    @property
    def rules(self) -> int: ...

    @property
    def max_unit_loss(self) -> float | None: ...

    @property
    def guardrails(self) -> tuple[Guardrail, ...]: ...


GUARDRAIL = len(OUTCOMES)
"""The outcome code `walk_guarded` gives a trial rejected on a guardrail (after the codes of
`stats.sequential.OUTCOMES`)."""

GUARDED_OUTCOMES = (*OUTCOMES, "guardrail")
"""Outcome names of `walk_guarded`, by code: `stats.sequential.OUTCOMES` plus `guardrail`."""

BROKEN_CONFIDENCE = 0.95
"""A guardrail is clearly broken at a look when the upper end of its two-sided interval at this
confidence (Student t for metrics, Newcombe for pass rates) lies below -allowance: the trial stops
there, rejected (a rule that only rejects, so it never raises the type-I error)."""

GuardrailStatus = Literal["passed", "broken", "not_shown", "not_judged"]
GUARDRAIL_STATUSES: dict[str, str] = {
    "passed": "non-inferiority shown: the change's lower bound lies above -allowance",
    "broken": "clearly regressed beyond its allowance (interval above it excluded, or its harmful-tail guard)",
    "not_shown": "non-inferiority not shown by the last look: the candidate is rejected",
    "not_judged": "the trial stopped before the guardrail decided (the primary's rule stopped it)",
}


@dataclass(frozen=True)
class Guardrail:
    """One guardrail as the gate tests it.

    name: the metric key (benchmark) or the check's `name` (examples); direction: max or min;
    allowance: the largest regression allowed, metric units (a pass rate for a check), finite, > 0;
    kind: continuous (a metric) or binary (a check's pass/fail per example).
    Raises RatchetError `gate.bad_settings` on an allowance that is not finite and > 0.
    """

    name: str
    direction: Direction
    allowance: float
    kind: ScoreKind = "continuous"

    def __post_init__(self) -> None:
        ok = isinstance(self.allowance, int | float) and not isinstance(self.allowance, bool)
        if not (ok and math.isfinite(self.allowance) and self.allowance > 0):
            raise RatchetError("gate.bad_settings",
                               f"guardrail {self.name!r}: allowance must be finite and > 0, got {self.allowance!r}")
        if self.direction not in ("max", "min") or self.kind not in ("binary", "continuous"):
            raise RatchetError("gate.bad_settings",
                               f"guardrail {self.name!r}: bad direction {self.direction!r} or kind {self.kind!r}")


def allowance_for(max_regression: float, max_regression_rel: float, baseline_mean: float | None) -> float:
    """A guardrail's allowance: max(max_regression, max_regression_rel * |baseline_mean|), metric units.

    baseline_mean: the guardrail's mean as the preflight measured the baseline, before any trial (so
    the null never depends on the data it is tested on); None when none was recorded, when only
    max_regression counts. Raises RatchetError `gate.bad_margin` when the result is not > 0 (the
    contract refuses such a guardrail; a baseline mean of 0 with only a relative allowance lands here).
    """
    rel = 0.0 if baseline_mean is None else max_regression_rel * abs(baseline_mean)
    value = max(max_regression, rel)
    if not (math.isfinite(value) and value > 0):
        raise RatchetError(
            "gate.bad_margin",
            f"a guardrail's allowance is {value!r} (max_regression {max_regression!r}, max_regression_rel "
            f"{max_regression_rel!r}, baseline mean {baseline_mean!r}): it must be > 0",
            hint="set max_regression (metric units) on the guardrail",
        )
    return float(value)


@dataclass(frozen=True)
class GuardrailCheck:
    """One guardrail's result in a Decision.

    name, allowance (metric units, > 0); estimate: mean paired change, direction-normalised (positive
    = candidate better), over `units` units; bound: the test's lower bound of that change at the look
    it was judged (passed iff bound >= -allowance; None when it bounds nothing); p_value / threshold:
    the non-inferiority p-value and its look's threshold; status: see GUARDRAIL_STATUSES;
    champion_mean / candidate_mean: raw means over the units (a pass rate for a check).
    """

    name: str
    allowance: float
    estimate: float | None
    bound: float | None
    p_value: float | None
    threshold: float | None
    units: int
    status: GuardrailStatus
    champion_mean: float | None = None
    candidate_mean: float | None = None

    def to_json(self) -> dict[str, object]:
        """Plain JSON object (`trial.judged` data.guardrails[i], --json output)."""
        return {"name": self.name, "allowance": self.allowance, "estimate": self.estimate, "bound": self.bound,
                "p_value": self.p_value, "threshold": self.threshold, "units": self.units, "status": self.status,
                "champion_mean": self.champion_mean, "candidate_mean": self.candidate_mean}

    @classmethod
    def from_json(cls, data: dict) -> GuardrailCheck:
        """Rebuild from `to_json` output (KeyError/TypeError on a malformed object)."""
        return cls(str(data["name"]), float(data["allowance"]), data.get("estimate"), data.get("bound"),
                   data.get("p_value"), data.get("threshold"), int(data.get("units") or 0), data["status"],
                   data.get("champion_mean"), data.get("candidate_mean"))

    def line(self) -> str:
        """One human line: `accuracy: change -0.003 (bound -0.012) vs allowance 0.02: passed`."""
        est = "n/a" if self.estimate is None else f"{self.estimate:+.4g}"
        bound = "n/a" if self.bound is None else f"{self.bound:+.4g}"
        return f"{self.name}: change {est} (bound {bound}) vs allowance -{self.allowance:g}: {self.status}"


def walk_guarded(p_values: np.ndarray, estimates: np.ndarray, margin: float, thresholds: list[float],
                 guard: np.ndarray, shown: np.ndarray, broken: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walk the looks seen so far with guardrails, in order, and stop at the first that decides.

    p_values, estimates, guard: the primary's p-value, mean paired difference and harmful-tail guard
    per look, shape (trials, seen) as in `stats.sequential.walk_looks`; thresholds: the primary's
    increment per look (all looks). shown: bool (trials, guardrails, seen), the guardrail's
    non-inferiority p-value <= its own look threshold; broken: bool, same shape, the guardrail clearly
    broken at that look (BROKEN_CONFIDENCE interval below -allowance, or its guard fired).
    A rejection of the primary or of a guardrail at any look seen so far stays a rejection (each
    test's union bound over its looks covers the first rejection whenever it happens).
    At look k, in order: the primary's guard -> HARMFUL_TAIL; a guardrail not yet shown and broken ->
    GUARDRAIL; the primary and every guardrail shown -> ACCEPTED; primary not shown and (interim)
    mean <= margin -> FUTILITY, (last look) -> NOT_SIGNIFICANT; last look with a guardrail not shown
    -> GUARDRAIL. Returns (look, outcome, which): int arrays (trials,); outcome codes index
    GUARDED_OUTCOMES; which: the guardrail index a GUARDRAIL outcome names (the first broken or not
    shown), else -1.
    """
    p = np.atleast_2d(np.asarray(p_values, dtype=float))
    est = np.atleast_2d(np.asarray(estimates, dtype=float))
    tail = np.atleast_2d(np.asarray(guard, dtype=bool))
    ok_g = np.asarray(shown, dtype=bool).reshape(p.shape[0], -1, p.shape[1])
    bad_g = np.asarray(broken, dtype=bool).reshape(ok_g.shape)
    trials, seen, total = p.shape[0], p.shape[1], len(thresholds)
    look = np.full(trials, seen - 1, dtype=np.int64)
    outcome = np.zeros(trials, dtype=np.int64)
    which = np.full(trials, -1, dtype=np.int64)
    open_ = np.ones(trials, dtype=bool)
    primary = np.zeros(trials, dtype=bool)
    passed = np.zeros(ok_g.shape[:2], dtype=bool)

    def stop(mask: np.ndarray, code: int, k: int) -> None:
        outcome[mask], look[mask] = code, k
        open_[mask] = False

    for k in range(seen):
        stop(open_ & tail[:, k], HARMFUL_TAIL, k)
        primary |= p[:, k] <= thresholds[k]
        passed |= ok_g[:, :, k]
        failing = ~passed & bad_g[:, :, k]
        hit = open_ & failing.any(axis=1)
        if hit.any():
            which[hit] = np.argmax(failing, axis=1)[hit]
        stop(hit, GUARDRAIL, k)
        stop(open_ & primary & passed.all(axis=1), ACCEPTED, k)
        if k < total - 1:
            stop(open_ & ~primary & (est[:, k] <= margin), FUTILITY, k)
        else:
            stop(open_ & ~primary, NOT_SIGNIFICANT, k)
            rest = open_.copy()
            if rest.any():
                which[rest] = np.argmax(~passed, axis=1)[rest]
            stop(rest, GUARDRAIL, k)
    return look, outcome, which


@dataclass(frozen=True)
class GuardrailLooks:
    """Every guardrail's test at every look seen, for a batch of trials (`guardrail_looks`).

    d: direction-normalised paired changes (trials, guardrails, n); p: non-inferiority p-values
    (trials, guardrails, seen); thresholds: each guardrail's look thresholds (guardrails, looks);
    shown, broken: bool (trials, guardrails, seen), as `walk_guarded` takes them; tests: each
    guardrail's LookTest.
    """

    d: np.ndarray
    p: np.ndarray
    thresholds: np.ndarray
    shown: np.ndarray
    broken: np.ndarray
    tests: tuple


def _normalised(champ: np.ndarray, cand: np.ndarray, g: Guardrail) -> np.ndarray:
    """cand - champ, negated for direction min (binary: passes 0/1; a `min` check counts failures)."""
    d = np.asarray(cand, dtype=float) - np.asarray(champ, dtype=float)
    return -d if g.direction == "min" else d


def guardrail_test(g: Guardrail, test: GateTest, level: float, horizon: int, seed: int, rules: int) -> LookTest:
    """The LookTest a guardrail runs (stats.per_look.LookTest).

    Continuous: the primary's `test` (`betting`, which needs the primary's range, becomes
    `guarded_sign_flip`): the sign-flip test, with the skew correction and the harmful-tail guard
    when guarded. Binary (a check's pass/fail): the betting test of a bounded mean over scores in
    [0, 1] (Waudby-Smith & Ramdas 2024, JRSS-B 86:1), valid for every distribution of the paired
    pass/fail changes and at every look (Ville's inequality): the exact unconditional statistic
    n10 - n01 has almost no power against a non-inferiority null when most examples tie.
    """
    from ratchet.core.stats.per_look import LookTest

    if g.kind == "binary":
        return LookTest("continuous", "betting", max(level, 1e-300), horizon, seed, (0.0, 1.0), 1, None)
    chosen: GateTest = "guarded_sign_flip" if test == "betting" else test
    return LookTest("continuous", chosen, max(level, 1e-300), horizon, seed, None, rules, None)


def _upper(x: np.ndarray, base: np.ndarray, g: Guardrail) -> np.ndarray:
    """Upper end of each row's two-sided BROKEN_CONFIDENCE interval of the mean change x (trials, n):
    Student t for metrics (Student 1908), Newcombe's for pass rates (`base`: the champion's raw
    scores, to split ties into both-pass and both-fail)."""
    from ratchet.core.stats.paired import _t_quantile, newcombe_interval

    n = x.shape[1]
    if g.kind == "continuous":
        if n < 2:
            return np.full(x.shape[0], np.inf)
        half = _t_quantile(0.5 + BROKEN_CONFIDENCE / 2.0, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
        return x.mean(axis=1) + half
    passes = base if g.direction == "max" else 1.0 - base
    out = np.empty(x.shape[0])
    for r in range(x.shape[0]):
        n11, n00 = int(((x[r] == 0) & (passes[r] == 1)).sum()), int(((x[r] == 0) & (passes[r] == 0)).sum())
        out[r] = newcombe_interval(n11, int((x[r] > 0).sum()), int((x[r] < 0).sum()), n00, BROKEN_CONFIDENCE)[1]
    return out


def guardrail_looks(champ: np.ndarray, cand: np.ndarray, guardrails: tuple[Guardrail, ...],
                    looks: tuple[int, ...], seen: int, level: float, test: GateTest, spending: Spending, rules: int,
                    seed: int) -> GuardrailLooks:
    """Each guardrail's non-inferiority test at each of the first `seen` looks, for a batch of trials.

    champ, cand: raw guardrail scores (trials, guardrails, n) with n >= looks[seen - 1] (one trial:
    (1, guardrails, n)); level, test, spending, rules: the trial's (so each guardrail spends the
    trial's level across the same looks); seed: the trial's gate seed (guardrail i draws its Monte
    Carlo flips from seed + 1 + i). Broken: the BROKEN_CONFIDENCE interval's upper end < -allowance,
    or the guardrail's harmful-tail guard on d + allowance (one unit's loss far beyond the allowance).
    """
    from ratchet.core.stats.sequential import boundaries

    champ, cand = np.asarray(champ, dtype=float), np.asarray(cand, dtype=float)
    trials, count = champ.shape[0], len(guardrails)
    d = np.stack([_normalised(champ[:, i], cand[:, i], g) for i, g in enumerate(guardrails)], axis=1) if count \
        else np.zeros(champ.shape)
    p = np.ones((trials, count, seen))
    marks = np.zeros((count, len(looks)))
    shown = np.zeros((trials, count, seen), dtype=bool)
    broken = np.zeros((trials, count, seen), dtype=bool)
    tests = []
    for i, g in enumerate(guardrails):
        t = guardrail_test(g, test, level, looks[-1], seed + 1 + i, rules)
        tests.append(t)
        min_p = t.min_p if t.uses_betting else None
        marks[i] = [m.increment for m in boundaries(level, looks, "continuous", -g.allowance, spending, min_p)]
        for k in range(seen):
            x, threshold = d[:, i, : looks[k]], float(marks[i, k])
            p[:, i, k] = np.asarray(t.p_value(x, -g.allowance, threshold if threshold > 0 else None))
            shown[:, i, k] = (threshold > 0) & (p[:, i, k] <= threshold)
            broken[:, i, k] = (_upper(x, champ[:, i, : looks[k]], g) < -g.allowance) | np.asarray(
                t.guard(x + g.allowance), dtype=bool)
    return GuardrailLooks(d, p, marks, shown, broken, tuple(tests))


def decide_batch(d: np.ndarray, champ: np.ndarray, cand: np.ndarray,
                 settings: WalkSettings) -> tuple[np.ndarray, np.ndarray]:
    """`gate.decide`'s look walk with guardrails for many trials at once (the simulations' twin; a
    test checks the two agree): d: the primary's direction-normalised paired differences (trials, n),
    n = looks[-1]; champ, cand: raw guardrail scores (trials, guardrails, n); settings: WalkSettings.
    Returns (look, outcome): int arrays (trials,), outcome codes indexing GUARDED_OUTCOMES."""
    from ratchet.core.stats.per_look import LookTest
    from ratchet.core.stats.sequential import boundaries

    # the primary's test and thresholds, as gate.look_test / gate.look_boundaries build them
    test = LookTest(settings.kind, settings.test, max(settings.level, 1e-300), settings.looks[-1], settings.seed,
                    settings.metric_range, settings.rules, settings.max_unit_loss)
    marks = boundaries(settings.level, settings.looks, settings.kind, settings.margin, settings.spending,
                       test.min_p if test.uses_betting else None)
    looks = settings.looks
    seen = len(looks)
    p = np.stack([np.asarray(test.p_value(d[:, : looks[k]], settings.margin, marks[k].increment))
                  for k in range(seen)], axis=1)
    est = np.stack([d[:, : looks[k]].mean(axis=1) for k in range(seen)], axis=1)
    guard = np.stack([np.asarray(test.guard(d[:, : looks[k]]), dtype=bool) for k in range(seen)], axis=1)
    gl = guardrail_looks(champ, cand, settings.guardrails, looks, seen, settings.level, settings.test,
                         settings.spending, settings.rules, settings.seed)
    look, outcome, _ = walk_guarded(p, est, settings.margin, [m.increment for m in marks], guard, gl.shown,
                                    gl.broken)
    return look, outcome


def guardrail_checks(gl: GuardrailLooks, guardrails: tuple[Guardrail, ...], champ: np.ndarray, cand: np.ndarray,
                     looks: tuple[int, ...], k: int, outcome: str, which: int) -> tuple[GuardrailCheck, ...]:
    """Each guardrail's GuardrailCheck for one trial (row 0 of `gl`; champ, cand: (guardrails, n)) once
    the walk stopped at look k with `outcome` (naming guardrail `which` when it is `guardrail`): a
    shown guardrail reports the bound at the first look that showed it."""
    out = []
    n = looks[k]
    for i, g in enumerate(guardrails):
        first = next((j for j in range(k + 1) if gl.shown[0, i, j]), None)
        at = k if first is None else first
        x = gl.d[0, i, : looks[at]]
        if first is not None:
            status: GuardrailStatus = "passed"
        elif gl.broken[0, i, k]:
            status = "broken"
        elif outcome == "guardrail" and i == which or outcome in ("guardrail", "not_significant") and \
                k == len(looks) - 1:
            status = "not_shown"
        else:
            status = "not_judged"
        threshold = float(gl.thresholds[i, at])
        bound = gl.tests[i].bound(x, -g.allowance, threshold, first is not None) if threshold > 0 else None
        out.append(GuardrailCheck(
            g.name, g.allowance, float(gl.d[0, i, :n].mean()), None if bound is None else float(bound),
            float(gl.p[0, i, at]), threshold, n, status, float(np.mean(champ[i, :n])), float(np.mean(cand[i, :n]))))
    return tuple(out)


def guarded_walk(champ: np.ndarray, cand: np.ndarray, settings: WalkSettings, seen: int, p: list[float],
                 est: list[float], guard: list[bool], thresholds: list[float]
                 ) -> tuple[int, str, tuple[GuardrailCheck, ...]]:
    """One trial's look walk with guardrails, as `gate.decide` runs it: (deciding look, outcome name,
    each guardrail's check). champ, cand: raw guardrail scores (guardrails, units); settings: the
    trial's WalkSettings; p, est, guard, thresholds: the primary's per look (as `walk_guarded`).
    Raises RatchetError `gate.bad_score` when a pass/fail guardrail holds a score other than 0 or 1."""
    for i, g in enumerate(settings.guardrails):
        if g.kind == "binary" and not np.isin(np.concatenate([champ[i], cand[i]]), (0.0, 1.0)).all():
            raise RatchetError("gate.bad_score", f"guardrail {g.name!r}: pass/fail scores must be 0 or 1")
    gl = guardrail_looks(champ[None], cand[None], settings.guardrails, settings.looks, seen, settings.level,
                         settings.test, settings.spending, settings.rules, settings.seed)
    look, code, which = walk_guarded(np.array([p]), np.array([est]), settings.margin, thresholds,
                                     np.array([guard]), gl.shown, gl.broken)
    k, outcome = int(look[0]), GUARDED_OUTCOMES[int(code[0])]
    return k, outcome, guardrail_checks(gl, settings.guardrails, champ, cand, settings.looks, k, outcome,
                                        int(which[0]))


def rejection_text(checks: tuple[GuardrailCheck, ...], k: int, looks: tuple[int, ...], est: float) -> str:
    """The sentence of a trial rejected on a guardrail (the first broken or not shown) at look k."""
    g = next(c for c in checks if c.status in ("broken", "not_shown"))
    where = f"look {k + 1} of {len(looks)} ({looks[k]} units)"
    bound = "none" if g.bound is None else f"{g.bound:+.4g}"
    what = "regressed beyond its allowance" if g.status == "broken" else "was not shown within its allowance"
    change = "n/a" if g.estimate is None else f"{g.estimate:+.4g}"
    return (f"Guardrail {g.name} {what} at {where}: change {change} (lower bound {bound}) vs allowance "
            f"-{g.allowance:g}; primary mean gain {est:+.4g}.")
