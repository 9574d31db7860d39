"""Sequential looks: a trial's level spent across its looks, and the stopping rule at each look.

Looks are cumulative unit counts (`gate.units`, e.g. (10, 20, 40)); look k sees the first
looks[k] units of the plan. Pure and vectorised: `walk_looks` decides a batch of trials at once and
is the same code the gate runs for one trial.

Spending (`Spending`). The trial's `level` is spent across the looks with a spending function
alpha(t), t_k = looks[k] / looks[-1]; look k rejects when p_k <= alpha(t_k) - alpha(t_{k-1}) (its
increment): by the union bound the trial's type-I error is at most the sum of the increments, the
level, whatever the dependence between looks (no normal approximation, so exact small-sample tests
stay valid).
- `linear` (default): alpha(t) = level * t, the power family with rho = 1 (Kim & DeMets 1987,
  Biometrics 43:857-864). It keeps half the level for the last look of (10, 20, 40); chosen by
  simulation (docs/gate.md): +1.4 / +0.8 points of promotion at 0.25 / 0.5 SD of d for +2%
  job-units against `pocock`, where rho = 2 gained +5 / +2 points for +8% to +25% job-units.
- `pocock`: alpha(t) = level * ln(1 + (e - 1) t) (Lan & DeMets 1983, Biometrika 70:659-663),
  kept for comparison: about a third of the level at a quarter of the units.
An increment the exact test cannot reach at its look (below the smallest p-value it can produce
with that many units) is carried to the next look instead of being wasted; this depends on the
design only (level, looks, kind, margin), never on data, so the union bound still holds.
An anytime-valid test (`betting`) needs no spending: its p-value is valid at every look at once
(Ville's inequality), so every look's threshold is the full level.

Futility (non-binding): at an interim look the trial stops as `futility` when the observed mean
paired difference is <= the margin (no gain beyond the margin seen at all). Stopping for
futility can only remove rejections, so it never raises the type-I error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ratchet.core.errors import PlanError
from ratchet.core.stats.paired import Kind, min_p_value
from ratchet.core.vocab import Spending

SPENDING_NAMES: dict[str, str] = {
    "linear": "linear alpha spending, level * t (power family, rho = 1; Kim & DeMets 1987)",
    "pocock": "Pocock-type alpha spending, level * ln(1 + (e - 1) t) (Lan & DeMets 1983)",
}
DEFAULT_SPENDING: Spending = "linear"
SPENDING_NAME = SPENDING_NAMES[DEFAULT_SPENDING]

# Outcome codes of `walk_looks`, indexes into OUTCOMES.
CONTINUE, ACCEPTED, FUTILITY, NOT_SIGNIFICANT, HARMFUL_TAIL = 0, 1, 2, 3, 4
OUTCOMES = ("continue", "accepted", "futility", "not_significant", "harmful_tail")


def validate_looks(looks: Sequence[int]) -> tuple[int, ...]:
    """Check and return looks as a tuple of ints: non-empty, positive, strictly increasing.

    Raises PlanError `plan.no_units` (empty) or `plan.bad_looks` (non-integer, non-positive or not
    strictly increasing).
    """
    values = tuple(looks)
    if not values:
        raise PlanError(
            "plan.no_units",
            "gate.units is empty: a trial needs at least one look",
            hint="set gate.units, e.g. [10, 20, 40]",
        )
    if any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in values):
        raise PlanError("plan.bad_looks", f"gate.units must be whole numbers, got {list(values)}")
    values = tuple(int(v) for v in values)
    if values[0] <= 0 or any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise PlanError(
            "plan.bad_looks",
            f"gate.units must be positive and strictly increasing, got {list(values)}",
            hint="cumulative unit counts, e.g. [10, 20, 40]",
        )
    return values


def _check_level(level: float) -> float:
    if not (isinstance(level, int | float) and math.isfinite(level) and 0.0 <= level < 1.0):
        raise ValueError(f"level must be in [0, 1), got {level!r}")
    return float(level)


def spent(level: float, t: float, spending: Spending = DEFAULT_SPENDING) -> float:
    """Cumulative level spent at information fraction t in [0, 1]: level * t (`linear`, Kim & DeMets
    1987) or level * ln(1 + (e - 1) t) (`pocock`, Lan & DeMets 1983). spent(level, 1) == level.
    Raises ValueError on t outside [0, 1] or an unknown spending."""
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"t must be in [0, 1], got {t!r}")
    if spending not in SPENDING_NAMES:
        raise ValueError(f"spending must be one of {sorted(SPENDING_NAMES)}, got {spending!r}")
    if t == 1.0:
        return level
    return level * t if spending == "linear" else level * math.log1p((math.e - 1.0) * t)


def spending(level: float, looks: Sequence[int], rule: Spending = DEFAULT_SPENDING) -> tuple[float, ...]:
    """Per-look increments of the spending function: alpha(t_k) - alpha(t_{k-1}), t_k = looks[k]/looks[-1].

    level in [0, 1); looks as in `validate_looks` (PlanError otherwise). The increments are >= 0 and
    sum to `level` (up to rounding; the last one is level minus the spent sum, so never more).
    """
    level, values = _check_level(level), validate_looks(looks)
    cumulative = [spent(level, v / values[-1], rule) for v in values]
    increments = [cumulative[0]] + [b - a for a, b in zip(cumulative, cumulative[1:], strict=False)]
    increments[-1] = max(0.0, level - math.fsum(increments[:-1]))
    return tuple(increments)


@dataclass(frozen=True)
class Look:
    """One look's boundary, as `ratchet check` shows it.

    index: 0-based; units: cumulative units seen; fraction: units / looks[-1]; spent: the spending
    function's cumulative level at this look; increment: the p-value threshold at this look after
    carrying unreachable increments forward (reject when p <= increment); min_p: the smallest
    p-value the exact test can produce with `units` units; reachable: min_p <= increment;
    interim: a look before the last, where the futility rule applies.
    """

    index: int
    units: int
    fraction: float
    spent: float
    increment: float
    min_p: float
    reachable: bool
    interim: bool

    def to_json(self) -> dict[str, object]:
        """Plain JSON object with the fields above."""
        return asdict(self)


def boundaries(
    level: float,
    looks: Sequence[int],
    kind: Kind,
    margin: float = 0.0,
    rule: Spending = DEFAULT_SPENDING,
    min_p: Callable[[int, float], float] | None = None,
) -> tuple[Look, ...]:
    """The p-value thresholds of every look for a trial at `level` (see the module docstring).

    kind and margin fix the paired test, hence the smallest p-value it can produce at each look
    (paired.min_p_value, given the increment at stake); an increment below it is carried to the next
    look. The thresholds sum to at most `level`. min_p: for an anytime-valid test (betting), its
    smallest p-value as a function of (units, threshold); then every look's threshold is `level`
    and nothing is spent. Raises PlanError on bad looks, ValueError on a bad level, kind or rule.
    """
    values = validate_looks(looks)
    if min_p is not None:
        level = _check_level(level)
        floors = [min_p(n, level) for n in values]
        return tuple(
            Look(k, n, n / values[-1], level, level, floors[k], floors[k] <= level, k < len(values) - 1)
            for k, n in enumerate(values)
        )
    raw = spending(level, values, rule)
    rows, carried, cumulative = [], 0.0, 0.0
    for k, units in enumerate(values):
        cumulative += raw[k]
        increment = raw[k] + carried
        floor = min_p_value(kind, units, margin, increment if increment > 0 else None)
        reachable = floor <= increment
        interim = k < len(values) - 1
        if not reachable and interim:
            carried, increment = increment, 0.0
        else:
            carried = 0.0
        rows.append(
            Look(k, units, units / values[-1], min(cumulative, level), increment, floor, reachable, interim)
        )
    return tuple(rows)


def futile(estimate: float | np.ndarray, margin: float) -> bool | np.ndarray:
    """Non-binding futility rule at an interim look: the observed mean paired difference
    (direction-normalised, metric units) is <= margin. Vectorised over arrays of estimates.
    """
    result = np.asarray(estimate) <= margin
    return bool(result) if result.ndim == 0 else result


def walk_looks(
    p_values: np.ndarray,
    estimates: np.ndarray,
    margin: float,
    thresholds: Sequence[float],
    guard: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Walk the looks seen so far, in order, and stop at the first that decides.

    p_values, estimates: shape (trials, seen) with 1 <= seen <= len(thresholds): the p-value and
    mean paired difference at each look seen. thresholds: every look's increment (`boundaries`).
    guard: optional bool array (trials, seen), the harmful-tail guard at each look (tail_guard):
    where it fires the trial stops as HARMFUL_TAIL before any other rule (it only rejects).
    At look k: p <= thresholds[k] -> ACCEPTED; else at an interim look, `futile` -> FUTILITY; else
    at the last look -> NOT_SIGNIFICANT. No stop among the looks seen (not the last) -> CONTINUE.
    Returns (look, outcome): int arrays (trials,), the deciding (or last seen) 0-based look and a
    code indexing OUTCOMES. Same result as calling after each look, for any number of trials.
    """
    p = np.atleast_2d(np.asarray(p_values, dtype=float))
    est = np.atleast_2d(np.asarray(estimates, dtype=float))
    seen, total = p.shape[1], len(thresholds)
    if p.shape != est.shape or not 1 <= seen <= total:
        raise ValueError(
            f"p_values and estimates must have shape (trials, 1..{total}), got {p.shape}, {est.shape}"
        )
    look = np.full(p.shape[0], seen - 1, dtype=np.int64)
    outcome = np.full(p.shape[0], CONTINUE, dtype=np.int64)
    open_ = np.ones(p.shape[0], dtype=bool)
    tail = np.zeros(p.shape, dtype=bool) if guard is None else np.atleast_2d(np.asarray(guard, dtype=bool))
    for k in range(seen):
        harmful = open_ & tail[:, k]
        outcome[harmful], look[harmful] = HARMFUL_TAIL, k
        open_ &= ~harmful
        accept = open_ & (p[:, k] <= thresholds[k])
        if k < total - 1:
            stop = open_ & ~accept & futile(est[:, k], margin)
            code = FUTILITY
        else:
            stop = open_ & ~accept
            code = NOT_SIGNIFICANT
        outcome[accept], outcome[stop] = ACCEPTED, code
        look[accept | stop] = k
        open_ &= ~(accept | stop)
    return look, outcome


def expected_units(look: np.ndarray, looks: Sequence[int]) -> float:
    """Mean units per trial (per variant) when trials stop at the given 0-based looks."""
    return float(np.mean(np.asarray(validate_looks(looks))[np.asarray(look)]))
