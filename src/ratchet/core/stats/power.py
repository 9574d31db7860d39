"""Power of the exact McNemar test and the smallest pass-rate gain it detects (pure)."""

from __future__ import annotations

import math


def mcnemar_power(n: int, level: float, delta: float, discordance: float | None) -> float:
    """Exact power of the one-sided McNemar test on n pairs when p10 - p01 = delta."""
    import numpy as np
    from scipy import stats as sps  # deferred: loading examples must not pay for scipy

    psi = delta if discordance is None else max(discordance, delta)
    if psi <= 0.0:
        return 0.0
    m = np.arange(n + 1)
    k = sps.binom.isf(level, m, 0.5) + 1  # smallest b with P(Binom(m, 1/2) >= b) <= level
    k = np.where(sps.binom.sf(k - 2, m, 0.5) <= level, k - 1, k)  # guard isf's float rounding,
    k = np.where(sps.binom.sf(k - 1, m, 0.5) > level, k + 1, k)  # both ways
    q = min(1.0, (psi + delta) / (2.0 * psi))  # P(candidate wins | discordant)
    return float(np.sum(sps.binom.pmf(m, n, psi) * sps.binom.sf(k - 1, m, q)))


def mde_binary(n: int, level: float, power: float = 0.8, discordance: float | None = None) -> float:
    """The smallest pass-rate gain (candidate minus champion, in [0, 1]) that the exact one-sided
    McNemar test on `n` val examples detects at `level` with probability >= `power`.

    Power is computed exactly: the discordant pairs D ~ Binom(n, psi), and given D = m the
    candidate wins b ~ Binom(m, (psi + delta) / (2 psi)) of them; the test rejects when
    P(Binom(m, 1/2) >= b) <= level (Connor (1987), Biometrics 43:207-211, for the model).
    `discordance` is psi, the assumed rate of examples on which the two variants disagree; None
    assumes psi = delta (the candidate breaks nothing the champion passed), the most favourable
    case, so the result is a floor: no smaller gain is detectable with this power at any psi.
    Returns math.inf when even delta = 1 is not detectable (0.5**n > level). The search stops at a
    resolution of 1e-4. Raises ValueError on n < 0, level or power outside (0, 1), or a bad psi.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not (0.0 < level < 1.0 and 0.0 < power < 1.0):
        raise ValueError(f"level and power must be in (0, 1), got {level}, {power}")
    if discordance is not None and not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must be in (0, 1], got {discordance}")
    if n == 0 or mcnemar_power(n, level, 1.0, discordance) < power:
        return math.inf
    low, high = 0.0, 1.0
    while high - low > 1e-4:
        mid = (low + high) / 2.0
        if mcnemar_power(n, level, mid, discordance) >= power:
            high = mid
        else:
            low = mid
    return high
