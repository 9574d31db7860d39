"""The paired test a trial runs at each look, whichever `gate.test` and score kind: one object the
gate (`ratchet.core.gate.decide`) and the simulations (its batched twin) both call.

- binary scores: exact McNemar (margin 0) or the exact unconditional margin test (`paired`);
- continuous, `guarded_sign_flip` / `sign_flip`: the sign-flip permutation test (`paired.sign_flip_test`), exact up to
  EXACT_MAX_UNITS units, Monte Carlo with flips chosen from the look's threshold beyond; the
  guarded one adds the harmful-tail guard (`tail_guard`), which only rejects, and under gate rules 2
  Hall's skewness-corrected t test (`skew.skew_corrected_p`) as a second requirement: its p-value is
  the larger of the two (both must reject), labelled as the sign-flip's;
- continuous, `betting`: under gate rules 2 the floor e-process (`floor`), whose units below the
  floor reject the trial as `below_floor` (through the same rejection-only channel as the guard);
  under rules 1 the betting test of a bounded mean (`betting`).
Each p-value carries its label (`PValueKind`), and `bound` inverts the same test at the same
threshold (`bounds.lower_bound`), so the bound printed with a verdict agrees with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ratchet.core.gate_design import max_unit_loss_for
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.stats.betting import betting_min_p, betting_test, difference_range
from ratchet.core.stats.bounds import lower_bound
from ratchet.core.stats.floor import breached, floor_min_p, floor_test
from ratchet.core.stats.paired import (
    Kind,
    PValueKind,
    binary_margin_test,
    p_value_kind,
    sign_flip_curve,
    sign_flip_test,
)
from ratchet.core.stats.skew import skew_corrected_p
from ratchet.core.stats.tail_guard import harmful_tail
from ratchet.core.vocab import GateTest

_ABOVE = 1e-9  # relative step past the largest difference, where no data can reject the null


@dataclass(frozen=True)
class LookTest:
    """The test of H0: mean paired difference <= margin on the first n units of a trial.

    kind: binary or continuous scores; test: gate.test (continuous only); level and horizon (the
    last look's units): tune the betting test's bets; seed: seeds the sign-flip Monte Carlo;
    metric_range: (lo, hi) of one score, required by `betting` under rules 1 (ValueError otherwise); rules: the
    gate rules version judged by (`gate_design.GATE_RULES`; an older run's verdicts re-derive with its own);
    max_unit_loss: gate.max_unit_loss, the floor's size (metric units, > 0; default hi - lo of
    metric_range): `betting` under rules 2 needs one of the two (ValueError otherwise).
    """

    kind: Kind
    test: GateTest
    level: float
    horizon: int
    seed: int
    metric_range: tuple[float, float] | None = None
    rules: int = GATE_RULES
    max_unit_loss: float | None = None

    def __post_init__(self) -> None:
        if self.uses_betting and self.rules == 1 and self.metric_range is None:
            raise ValueError("the betting test needs the metric's range (target.metric_range)")
        if self.uses_floor and max_unit_loss_for(self.max_unit_loss, self.metric_range) is None:
            raise ValueError("the floor test needs gate.max_unit_loss or target.metric_range")

    @property
    def uses_floor(self) -> bool:
        """True when `betting` runs as the floor e-process (gate rules 2 on): below-floor units reject."""
        return self.uses_betting and self.rules >= 2

    @property
    def floor(self) -> float:
        """L = -max_unit_loss (metric units): the smallest paired difference the floor test allows."""
        loss = max_unit_loss_for(self.max_unit_loss, self.metric_range)
        assert loss is not None  # uses_floor means a floor (checked at construction)
        return -loss

    @property
    def uses_betting(self) -> bool:
        """True when the continuous betting test runs (anytime-valid: no spending across looks)."""
        return self.kind == "continuous" and self.test == "betting"

    @property
    def d_range(self) -> tuple[float, float]:
        """The range of one paired difference, (lo - hi, hi - lo); binary (or no range): (-1, 1)."""
        if self.uses_betting and self.metric_range is not None:  # always set under rules 1
            return difference_range(self.metric_range)
        return (-1.0, 1.0)

    def p_value(self, d: np.ndarray, margin: float, threshold: float | None) -> float | np.ndarray:
        """p-values of H0: mean(d) <= margin for d of shape (n,) or (trials, n), direction-normalised
        (binary: d in {-1, 0, 1}). threshold: the look's p-value threshold (sign-flip Monte Carlo
        flips are chosen from it; None for an unreachable look). Shapes as the underlying tests."""
        if self.kind == "binary":
            x = np.atleast_2d(d)
            p = binary_margin_test((x > 0).sum(1), (x < 0).sum(1), x.shape[1], margin)
            return float(np.asarray(p).ravel()[0]) if np.ndim(d) == 1 else np.asarray(p, dtype=float)
        if self.uses_floor:
            return floor_test(d, margin, self.floor)
        if self.uses_betting:
            return betting_test(d, margin, self.d_range, self.level, self.horizon)
        p = sign_flip_test(d, margin, self.seed, threshold if threshold else None)
        if self.uses_skew_correction:  # both must reject: the larger p decides
            return np.maximum(p, skew_corrected_p(d, margin)) if np.ndim(d) == 2 else max(
                float(p), float(skew_corrected_p(d, margin)))
        return p

    @property
    def uses_skew_correction(self) -> bool:
        """True when Hall's skewness-corrected t test must reject too (`guarded_sign_flip` on continuous
        scores under gate rules 2): p is the larger of the sign-flip's and `skew.skew_corrected_p`."""
        return self.kind == "continuous" and self.test == "guarded_sign_flip" and self.rules >= 2

    def guard(self, d: np.ndarray) -> bool | np.ndarray:
        """The harmful-tail guard on d (n,) or (trials, n): fires only for `guarded_sign_flip` on
        continuous scores (tail_guard.harmful_tail under this test's gate rules: a fixed 6 robust SDs
        in rules 1, a threshold chosen by n in rules 2); for the floor test, True where a unit lies
        below the floor (floor.breached: the gate reports it as `below_floor`); False (or all False)
        otherwise."""
        if self.uses_floor:
            return breached(d, self.floor)
        if self.kind == "continuous" and self.test == "guarded_sign_flip":
            return harmful_tail(d, self.rules)
        return False if np.ndim(d) == 1 else np.zeros(np.shape(d)[0], dtype=bool)

    def label(self, n: int, margin: float) -> PValueKind:
        """How the p-value on n units is computed: exact, bound or monte_carlo."""
        return "bound" if self.uses_betting else p_value_kind(self.kind, n, margin)

    def min_p(self, n: int, level: float) -> float:
        """The betting test's smallest p-value on n units (for sequential.boundaries); the floor test's
        when every unit gains hi - lo (or max_unit_loss without a range)."""
        if self.uses_floor:
            best = self.d_range[1] if self.metric_range is not None else -self.floor
            return floor_min_p(n, self.floor, best)
        return betting_min_p(n, self.d_range, 0.0, level, self.horizon)

    def bound(self, d: np.ndarray, margin: float, threshold: float, accepted: bool) -> float | None:
        """The largest null mean this test rejects on d (n,) at `threshold`, given the verdict at the
        margin (`accepted`): bound >= margin iff accepted. None when no mean in the searched range
        is rejected (or threshold <= 0)."""
        if threshold <= 0.0 or len(d) == 0:
            return None
        if self.kind == "binary":
            low, high = 0.0, 1.0
        elif self.uses_floor:  # no d >= high can beat a null at or above max(d): p = 1 there
            low = self.floor * (1.0 - _ABOVE)
            high = float(np.max(d)) + _ABOVE * max(1.0, abs(float(np.max(d))), -self.floor)
        elif self.uses_betting:
            low, high = self.d_range
            low = low + _ABOVE * (high - low)
        else:
            low, high = float(np.min(d)), float(np.max(d))
            high += _ABOVE * max(1.0, abs(high), high - low)
        low, high = min(low, margin), max(high, margin)
        if self.kind == "continuous" and not self.uses_betting:
            curve = sign_flip_curve(d, self.seed, threshold)
            p_of = (lambda m: max(curve(m), float(skew_corrected_p(d, m)))) if self.uses_skew_correction else curve
        elif self.uses_floor:  # the bets stay tuned to the trial's margin: p is monotone in the null
            p_of = lambda m: float(floor_test(d, m, self.floor, bet_margin=margin))  # noqa: E731
        else:
            p_of = lambda m: float(self.p_value(d, m, threshold))  # noqa: E731
        return lower_bound(p_of, threshold, margin, low, high, accepted)
