"""The betting test: a one-sided test of a bounded mean, valid for every distribution, at every look.

Guarantee: if every paired difference d lies in the declared range [L, U] (`target.metric_range`
[lo, hi] gives L = lo - hi, U = hi - lo) and its mean, conditionally on the units before it, is at
most the margin m, then P(the p-value ever falls to a) <= a, at any look, for every distribution.
No symmetry, no normality, no independence beyond that conditional mean.

How. Rescale x = (d - L) / (U - L) in [0, 1], mu0 = (m - L) / (U - L). Bet on "mean > mu0" unit by
unit: the wealth K_t = prod_{i <= t} (1 + lambda_i (x_i - mu0)) with lambda_i in [0, BET_CAP / mu0]
chosen from units 1..i-1 only (predictable) is a nonnegative supermartingale under H0, so by
Ville's inequality P(sup_t K_t >= 1 / a) <= a, and p_t = min(1, 1 / max_{s <= t} K_s) is an
anytime-valid p-value: every look may be tested at the trial's full level (no spending needed).
Source: Waudby-Smith & Ramdas (2024), "Estimating means of bounded random variables by betting",
JRSS-B 86:1-27 (predictable plug-in bets, section 3 and 5); Ville (1939).

The bet lambda_i = min(sqrt(2 ln(1 / level) / (sigma2_{i-1} * horizon)), BET_CAP / mu0) uses a
shrunk running variance sigma2 (prior 1/4, the largest variance on [0, 1]) and never the null mean
except through the cap, so the p-value is non-decreasing in m: inverting it gives a lower bound
that agrees with the verdict (`ratchet.core.stats.bounds`). What it costs: the bet is limited by the
range, so a gain small against the range needs many units (on a [0, 1] accuracy, d in [-1, 1], a
gain of 0.005 with SD(d) 0.02 needs several hundred units at level 0.01).
"""

from __future__ import annotations

import math

import numpy as np

BET_CAP = 0.75  # the largest bet, as a fraction of 1 / mu0: every factor stays >= 1 - BET_CAP (WSR 2024 use 1/2 or 3/4)
RANGE_RTOL = 1e-9  # a difference this far (relative to U - L) outside [L, U] is float noise, clipped


def difference_range(metric_range: tuple[float, float]) -> tuple[float, float]:
    """The range [L, U] = [lo - hi, hi - lo] of a paired difference of two scores in [lo, hi].

    Raises ValueError unless lo < hi, both finite.
    """
    lo, hi = (float(v) for v in metric_range)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"metric_range must be [lo, hi] with lo < hi, got {metric_range!r}")
    return lo - hi, hi - lo


def _bets(x: np.ndarray, level: float, horizon: int) -> np.ndarray:
    """Predictable bets before the cap: lambda_i from units 1..i-1 of each row (trials, n)."""
    n = x.shape[1]
    count = np.arange(1, n + 1)
    mean = (0.5 + np.cumsum(x, axis=1)) / (count + 1)  # WSR's shrunk running mean after unit t
    var = (0.25 + np.cumsum((x - mean) ** 2, axis=1)) / (count + 1)
    prior = np.concatenate([np.full((x.shape[0], 1), 0.25), var[:, :-1]], axis=1)  # sigma2_{i-1}
    return np.sqrt(2.0 * math.log(1.0 / level) / (prior * horizon))


def betting_test(
    d: np.ndarray, margin: float, d_range: tuple[float, float], level: float, horizon: int
) -> float | np.ndarray:
    """Anytime-valid one-sided p-value for H0: mean(d) <= margin, d bounded in d_range = (L, U).

    d: paired differences, shape (n,) or (trials, n), metric units, within [L, U] (values outside
    by more than RANGE_RTOL * (U - L) raise ValueError: the declared range is wrong). level: the
    trial's level and horizon: its last look's units (design constants tuning the bet, never data).
    Returns p_n = min(1, 1 / max_{t <= n} K_t), a float for 1-D input, an array (trials,) for 2-D;
    1.0 when n == 0 or margin >= U. p is non-decreasing in margin. Raises ValueError on non-finite
    values, a bad range, level outside (0, 1) or horizon < 1. See the module docstring for the source.
    """
    low, high = (float(v) for v in d_range)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"d_range must be (L, U) with L < U, got {d_range!r}")
    if not (0.0 < level < 1.0) or horizon < 1:
        raise ValueError(f"need 0 < level < 1 and horizon >= 1, got {level!r}, {horizon!r}")
    x = np.asarray(d, dtype=float)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.ndim != 2 or not (np.all(np.isfinite(x)) and math.isfinite(margin)):
        raise ValueError("d must be finite, 1-D or 2-D, and margin finite")
    width = high - low
    slack = RANGE_RTOL * width
    if x.size and (x.min() < low - slack or x.max() > high + slack):
        raise ValueError(f"a paired difference lies outside the declared range [{low:g}, {high:g}]")
    if x.shape[1] == 0 or margin >= high:
        p = np.ones(x.shape[0])
    else:
        unit = np.clip((x - low) / width, 0.0, 1.0)
        mu0 = max((margin - low) / width, 1e-12)
        bets = np.minimum(_bets(unit, level, horizon), BET_CAP / mu0)
        log_wealth = np.cumsum(np.log1p(bets * (unit - mu0)), axis=1)
        p = np.minimum(1.0, np.exp(-np.maximum(np.max(log_wealth, axis=1), 0.0)))
    return float(p[0]) if single else p


def betting_min_p(n: int, d_range: tuple[float, float], margin: float, level: float, horizon: int) -> float:
    """The betting test's p-value when all n units show the largest difference U: the smallest it
    reaches on n units in practice (`ratchet check` compares it with the level). n >= 0."""
    return float(betting_test(np.full(n, float(d_range[1])), margin, d_range, level, horizon))
