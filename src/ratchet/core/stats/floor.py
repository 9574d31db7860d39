"""The floor test (`gate.test = "betting"`, gate rules 2): an anytime-valid one-sided test of a mean
that needs only a floor on each unit's loss, no range.

Guarantee: if every paired difference d is at least the floor L = -max_unit_loss (`gate.max_unit_loss`,
metric units, direction-normalised; default hi - lo of `target.metric_range`) and its mean,
conditionally on the units before it, is at most the margin m, then P(the p-value ever falls to a)
<= a, at any look, for every such distribution (no upper bound, symmetry or normality needed).

How. Bet on "mean > m" unit by unit: the wealth K_t = prod_{i <= t} (1 + lambda_i (d_i - m)) with
lambda_i in [0, FLOOR_BET_CAP / (m - L)] chosen from units 1..i-1 only. Since d_i - m >= L - m,
every factor is >= 1 - FLOOR_BET_CAP = 0.01 > 0, and E[factor | past] <= 1 under H0: K is a
nonnegative supermartingale, so by Ville's inequality P(sup_t K_t >= 1 / a) <= a and
p_t = min(1, 1 / max_{s <= t} K_s) is an anytime-valid p-value (every look tested at the full level).

The bets are aGRAPA, "approximate GRAPA" (Waudby-Smith & Ramdas 2024, "Estimating means of bounded
random variables by betting", JRSS-B 86:1-27, section 5.3): lambda_i = (mu - m_b) / (sigma2 + (mu -
m_b)^2), with mu and sigma2 the running mean and variance of units 1..i-1, shrunk towards a prior of
one pseudo-unit at mean m_b and variance ((m_b - L) / 2)^2, clipped to [0, FLOOR_BET_CAP / (m - L)].
m_b is the margin the bets are tuned to: the trial's margin, a design constant like the old test's
level and horizon. When the test is inverted for the verdict's bound, only the null m moves and m_b
stays, so m enters each factor only through (d_i - m) and the cap; both make the factor
non-increasing in m (the capped factor is 1 + FLOOR_BET_CAP ((d_i - L) / (m - L) - 1)), so p is
non-decreasing in m and the bound agrees with the verdict (`ratchet.core.stats.bounds`). Bets
re-tuned to each null (m_b = m) are not monotone: on the random cases of tests/core/stats/test_floor.py
p fell by up to 0.25 as m rose.

What it costs. The wealth grows by about E log(1 + lambda (d - m)) per unit, at most about
FLOOR_BET_CAP (delta) per unit for a gain delta over m while the cap binds: a tight floor buys speed.
On a [0, 1] accuracy (floor -1) a gain of 0.005 at level 0.01 needs about 1,000 units; with a floor
of -0.1, about 150 (benchmarks/results/floor_test.md).
"""

from __future__ import annotations

import math

import numpy as np

FLOOR_BET_CAP = 0.99
"""The largest bet as a fraction of 1 / (m - L): every wealth factor stays >= 1 - FLOOR_BET_CAP = 0.01."""
BET_RULE = "aGRAPA (Waudby-Smith & Ramdas 2024), prior one unit at the margin with variance ((m - L)/2)^2"
"""The bet rule's name, as `gate_design` records it."""
FLOOR_RTOL = 1e-9
"""A difference this far below the floor (relative to max_unit_loss) is float noise, not a breach."""


def below_floor(d: np.ndarray, floor: float) -> np.ndarray:
    """True where a paired difference lies below the floor L (beyond FLOOR_RTOL * |L| of float noise).
    d: any shape, metric units; returns a bool array of its shape."""
    return np.asarray(d, dtype=float) < floor - FLOOR_RTOL * abs(floor)


def breached(d: np.ndarray, floor: float) -> bool | np.ndarray:
    """Whether any unit of d (n,) or each row of d (trials, n) lies below the floor: a bool, or an
    array (trials,). The gate rejects such a trial as `below_floor`."""
    hit = below_floor(d, floor)
    return bool(hit.any()) if hit.ndim == 1 else np.asarray(hit.any(axis=-1))


def agrapa_bets(d: np.ndarray, bet_margin: float, floor: float) -> np.ndarray:
    """aGRAPA bets before the cap, one per unit of each row of d (trials, n): lambda_i from units
    1..i-1 only (the prior alone for i = 1), >= 0, in 1 / metric units. See the module docstring."""
    n = d.shape[1]
    count = np.arange(1, n + 1)
    scale = bet_margin - floor
    mean = (bet_margin + np.cumsum(d, axis=1)) / (count + 1)  # shrunk running mean after unit t
    var = ((scale / 2.0) ** 2 + np.cumsum((d - mean) ** 2, axis=1)) / (count + 1)
    first = np.full((d.shape[0], 1), 0.0)
    edge = np.concatenate([first, mean[:, :-1] - bet_margin], axis=1)  # mu_{i-1} - m_b (prior: 0)
    spread = np.concatenate([np.full((d.shape[0], 1), (scale / 2.0) ** 2), var[:, :-1]], axis=1)
    return np.maximum(edge, 0.0) / (spread + edge**2)


def floor_test(
    d: np.ndarray, margin: float, floor: float, bet_margin: float | None = None
) -> float | np.ndarray:
    """Anytime-valid one-sided p-value for H0: mean(d) <= margin, every d >= floor.

    d: paired differences, shape (n,) or (trials, n), metric units, direction-normalised; a value
    below the floor is clipped to it (the gate rejects such a trial as `below_floor` first, since
    the guarantee needs every unit at or above the floor). floor: L = -max_unit_loss < margin.
    bet_margin: the margin the bets are tuned to (default `margin`; the bound's inversion keeps the
    trial's margin here while the null moves). Returns p_n = min(1, 1 / max_{t <= n} K_t) (K_0 = 1):
    a float for 1-D input, an array (trials,) for 2-D; 1.0 when n == 0. Non-decreasing in margin
    for a fixed bet_margin. Raises ValueError on non-finite values or margin <= floor.
    Source: see the module docstring (Waudby-Smith & Ramdas 2024; Ville 1939).
    """
    m_b = margin if bet_margin is None else bet_margin
    if not all(math.isfinite(v) for v in (margin, floor, m_b)) or not (floor < margin and floor < m_b):
        raise ValueError(f"need finite floor < margin and floor < bet_margin, got {floor!r}, {margin!r}, {m_b!r}")
    x = np.asarray(d, dtype=float)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise ValueError("d must be finite, 1-D or 2-D")
    if x.shape[1] == 0:
        p = np.ones(x.shape[0])
    else:
        x = np.maximum(x, floor)
        bets = np.minimum(agrapa_bets(x, m_b, floor), FLOOR_BET_CAP / (margin - floor))
        log_wealth = np.cumsum(np.log1p(bets * (x - margin)), axis=1)
        p = np.minimum(1.0, np.exp(-np.maximum(np.max(log_wealth, axis=1), 0.0)))
    return float(p[0]) if single else p


def floor_min_p(n: int, floor: float, best: float, margin: float = 0.0) -> float:
    """The floor test's p-value when all n >= 0 units show the gain `best` (metric units; the largest
    a unit shows in practice, e.g. hi - lo, or max_unit_loss without a range): the smallest it reaches
    on n units in practice (`ratchet check` compares it with the level)."""
    return float(floor_test(np.full(n, float(best)), margin, floor))


def growth_rate(gain: float, sd: float, floor: float, margin: float = 0.0) -> float:
    """The wealth's growth per unit, E log(1 + lambda (d - m)) to second order, at the largest bet the
    floor allows, lambda = min(gain' / (sd^2 + gain'^2), FLOOR_BET_CAP / (m - L)) with gain' = gain - m:
    what the test earns per unit once its estimates settle (metric units in; > 0 for a gain above
    the margin). Raises ValueError on sd < 0 or margin <= floor."""
    if sd < 0 or not floor < margin:
        raise ValueError(f"need sd >= 0 and floor < margin, got {sd!r}, {floor!r}, {margin!r}")
    edge = gain - margin
    if edge <= 0:
        return 0.0
    bet = min(edge / (sd**2 + edge**2), FLOOR_BET_CAP / (margin - floor))
    return bet * edge - bet**2 * (sd**2 + edge**2) / 2.0


def units_needed(gain: float, sd: float, floor: float, level: float, margin: float = 0.0) -> float:
    """About how many units the floor test needs to accept a gain `gain` with paired SD `sd` at
    `level`: ln(1 / level) / growth_rate (metric units in; math.inf when nothing grows). A planning
    figure: the simulated median lies near it (benchmarks/results/floor_test.md)."""
    rate = growth_rate(gain, sd, floor, margin)
    return math.inf if rate <= 0 else math.log(1.0 / level) / rate
