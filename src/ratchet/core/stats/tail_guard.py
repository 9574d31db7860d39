"""The harmful-tail guard: reject a candidate whose units show a loss far outside their own spread.

A candidate that wins a little on most units and loses a lot on a few (a training trick that
sometimes diverges, a cache that is sometimes cold) is outside the sign-flip test's guarantee: once
one of its large losses shows, the mean may still look like a gain. The guard rejects at a look when
the worst paired difference lies far below the median. It only ever rejects, so it cannot raise a
test's type-I error; what it costs is power, when it fires on noise. It cannot see a failure mode
that no unit showed (the chance of that is (1 - q) ** n, `guarantee.unseen_chance`).

Both rules measure the worst unit's distance below the median, low = median(d) - min(d), against
the spread of the units; the gate rules version (`gate_design.GATE_RULES`) picks the rule:

- rules 1: low > TAIL_GUARD_SCALES * s, s = 1.4826 * MAD (the normal-consistent median absolute
  deviation; Hampel 1974, JASA 69:383), or the mean absolute deviation from the median when the MAD
  is 0: 6 robust SDs at every n. Under Gaussian differences it fires on about 1% of 10-unit looks
  (0.03% at 40 units), and often under heavy-tailed noise whose large deviations fall on both sides.
- rules 2: low > tail_threshold(n) * max(s, high) and the worst unit is a loss (min(d) < 0), where
  s = IQR / 1.349 (the interquartile range, numpy's linear quantiles, over its value 1.349 SD for a
  normal distribution), or the mean absolute deviation from the median when the IQR is 0, and
  high = max(d) - median(d). Measuring the loss against the upper tail spares symmetric noise whose
  large deviations fall on both sides; the IQR, unlike the MAD, does not shrink to one mode's width
  when the other mode holds almost half the units; and a unit the candidate still won is no loss.
  tail_threshold(n) is the (1 - TAIL_GUARD_DESIGN_RATE) quantile of low / max(s, high) under
  Gaussian differences (a location- and scale-free ratio, so any mean and SD), simulated with a
  fixed seed by `benchmarks/guard_calibration.py --table` (TAIL_THRESHOLDS): the guard fires on at
  most TAIL_GUARD_FALSE_ALARM of looks of Gaussian differences, at every n >= 3. With few units a
  loss must lie far down to fire (c(10) = 5.9, c(20) = 3.94, c(40) = 2.99); with 3 units the ratio
  cannot exceed 2.698 (1.349 / 0.5), so c(3) = 2.7 never fires.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ratchet.core.gate_rules import GATE_RULES

TAIL_GUARD_SCALES = 6.0  # rules 1: robust SDs below the median, whatever the number of units
MAD_TO_SD = 1.4826  # the MAD of a normal distribution times this is its standard deviation
IQR_TO_SD = 1.349  # the interquartile range of a normal distribution over its standard deviation

TAIL_GUARD_RULE = "min(d) < 0 and median - min > c(n) * max(IQR / 1.349, max - median), Gaussian-calibrated"
"""Rules 2's guard in one line (recorded with a run, `gate_design.gate_design`)."""
TAIL_GUARD_FALSE_ALARM = 1e-3
"""Rules 2: the stated bound on P(the guard fires at a look) under Gaussian differences, every n >= 3."""
TAIL_GUARD_DESIGN_RATE = 5e-4
"""Rules 2: the Gaussian exceedance rate TAIL_THRESHOLDS were simulated at, half the stated bound, so
the table's own sampling error (about 5% relative with 1,000,000 looks per n up to 40, 7% with 400,000
beyond) and the step rule between tabled n keep every n below TAIL_GUARD_FALSE_ALARM."""

TAIL_THRESHOLDS: Mapping[int, float] = {
    3: 2.7, 4: 5.14, 5: 15.91, 6: 9.94, 7: 7.81, 8: 6.85, 9: 6.76, 10: 5.9, 11: 5.45, 12: 5.11, 13: 5.04,
    14: 4.73, 15: 4.55, 16: 4.39, 17: 4.32, 18: 4.14, 19: 4.05, 20: 3.94, 21: 3.89, 22: 3.76, 23: 3.74,
    24: 3.62, 25: 3.61, 26: 3.52, 27: 3.49, 28: 3.4, 29: 3.37, 30: 3.34, 31: 3.3, 32: 3.26, 33: 3.2, 34: 3.16,
    35: 3.13, 36: 3.1, 37: 3.08, 38: 3.04, 39: 3.04, 40: 2.99, 48: 2.77, 64: 2.59, 96: 2.29, 128: 2.14,
    192: 2.0, 256: 1.93, 384: 1.83, 512: 1.78, 768: 1.7, 1024: 1.67,
}
"""Rules 2: c(n) at the tabled numbers of units n (every n from 3 to 40, then up to 1024), from
`benchmarks/guard_calibration.py --table` (seed and sample sizes there). Untabled n use the largest
tabled n below (`tail_threshold`)."""


def tail_threshold(n: int) -> float:
    """Rules 2's threshold c(n) on low / max(s, high) for a look of n >= 3 units (dimensionless).

    n in TAIL_THRESHOLDS: its value; otherwise the value at the largest tabled n below it. From n = 5
    on, c(n) decreases with n (the Gaussian lower and upper tails of more units are more alike), so a
    step down to a smaller tabled n is a larger, conservative threshold; the benchmark checks untabled
    n (80, 160).
    Raises ValueError for n < 3 (no spread to judge against).
    """
    if n < 3:
        raise ValueError(f"the tail guard needs n >= 3 units, got {n}")
    return TAIL_THRESHOLDS[max(m for m in TAIL_THRESHOLDS if m <= n)]


def guard_design() -> dict[str, object]:
    """What rules 2's guard depends on, JSON-clean, recorded with a run (`gate_design.gate_design`) so a
    verdict can be re-derived: the rule, the stated and the design false-alarm rates per look, and the
    thresholds as [[n, c(n)], ...] (untabled n: the largest tabled n below)."""
    return {
        "rule": TAIL_GUARD_RULE,
        "false_alarm_per_look": TAIL_GUARD_FALSE_ALARM,
        "design_rate": TAIL_GUARD_DESIGN_RATE,
        "thresholds": [[n, c] for n, c in sorted(TAIL_THRESHOLDS.items())],
    }


def _center_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rules 1, per row of x (trials, n): the median and the robust SD s (1.4826 MAD, or the mean
    absolute deviation from the median where the MAD is 0)."""
    median = np.median(x, axis=1)
    dev = np.abs(x - median[:, None])
    s = MAD_TO_SD * np.median(dev, axis=1)
    return median, np.where(s > 0, s, dev.mean(axis=1))


def tail_statistic(d: np.ndarray) -> np.ndarray:
    """Rules 2's statistic low / max(s, high) per row of d (trials, n >= 3), dimensionless: how far the
    worst unit lies below the median, in units of the larger of s (IQR / 1.349, or the mean absolute
    deviation from the median where the IQR is 0) and the best unit's distance above the median.
    0.0 for a row whose units are all equal. Shape (trials,)."""
    x = np.atleast_2d(np.asarray(d, dtype=float))
    median = np.median(x, axis=1)
    q1, q3 = np.percentile(x, [25.0, 75.0], axis=1)
    s = (q3 - q1) / IQR_TO_SD
    s = np.where(s > 0, s, np.abs(x - median[:, None]).mean(axis=1))
    scale = np.maximum(s, x.max(axis=1) - median)
    low = median - x.min(axis=1)
    return np.divide(low, scale, out=np.zeros_like(low), where=scale > 0)


def harmful_tail(d: np.ndarray, rules: int = GATE_RULES) -> bool | np.ndarray:
    """Whether the guard fires on paired differences d, shape (n,) or (trials, n), metric units,
    direction-normalised (positive = candidate better), under gate rules `rules` (module docstring).

    Returns a bool for 1-D input, a bool array (trials,) for 2-D; False for n < 3 (no spread to
    judge against), when every difference equals the median, and under rules 2 when the worst unit is
    no loss (min(d) >= 0).
    """
    x = np.atleast_2d(np.asarray(d, dtype=float))
    if x.shape[1] < 3:
        out = np.zeros(x.shape[0], dtype=bool)
    elif rules == 1:
        median, s = _center_scale(x)
        out = (s > 0) & (x.min(axis=1) < median - TAIL_GUARD_SCALES * s)
    else:
        out = (x.min(axis=1) < 0) & (tail_statistic(x) > tail_threshold(x.shape[1]))
    return bool(out[0]) if np.ndim(d) == 1 else out
