"""The skewness of paired differences, and the warning when they are far from symmetric.

The sign-flip test behind the default `guarded_sign_flip` is exact only when d - m is symmetric about
0. Each trial records the skewness of its deciding look's d (`trial.judged` data.skewness), a
calibration that of its A/A differences; `ratchet check` and the report warn through `skew_warning`
when it is far from 0, quoting the false-promotion rate measured for the nearest skewed null
(`SKEWED_NULLS`, from benchmarks/results/skewed_nulls.md).

Pure: plain numbers in, numbers and sentences out (numpy only for the batched statistic).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SKEW_WARN = 1.0
"""|G1| above which paired differences are called far from symmetric. Measured
(benchmarks/results/skewed_nulls.md): under Gaussian noise |G1| > 1 over 20 units in 5.4% of samples,
over 40 units in 1.1%; under t(2) noise, symmetric but heavy-tailed, in 51% and 56%; on the left-
skewed nulls of SKEWED_NULLS in 49-98%. A prompt to look, not a test."""

SKEW_MIN_UNITS = 20
"""Units a skewness needs before it can warn: under Gaussian noise G1's standard error is
sqrt(6 n (n - 1) / ((n - 2)(n + 1)(n + 3))) (Joanes & Gill 1998), 0.69 over 10 units, 0.51 over
20, 0.37 over 40, so |G1| > 1 over fewer units says little."""


SPREAD_RTOL = 1e-9
"""Differences that vary by no more than this fraction of their largest magnitude have no spread:
they are one value up to float rounding (a deterministic gain computed as (a + noise) - noise), whose
G1 would be the rounding's, not the data's."""


def sample_skewness(d: Sequence[float] | np.ndarray) -> float | None | np.ndarray:
    """The adjusted Fisher-Pearson coefficient of skewness G1 of d, shape (n,) or (rows, n).

    G1 = sqrt(n (n - 1)) / (n - 2) * m3 / m2**1.5, with m_k = mean((d - mean(d))**k) (the biased
    central moments): what scipy.stats.skew(d, bias=False) returns, and Excel's SKEW.
    Source: Joanes & Gill (1998), "Comparing measures of sample skewness and kurtosis", The
    Statistician 47:183-189 (their G1). Dimensionless: negative means a longer left tail (rare large
    losses when d is direction-normalised). 1-D input: a float, or None when n < 3, when the values
    have no spread (max - min <= SPREAD_RTOL * max |d|: one value up to rounding), or when d holds a
    non-finite value. 2-D input: an array (rows,) with
    NaN where the 1-D call gives None. Raises ValueError on more than 2 dimensions.
    """
    x = np.asarray(d, dtype=float)
    if x.ndim not in (1, 2):
        raise ValueError(f"d must be 1-D (units) or 2-D (rows, units), got shape {x.shape}")
    rows = np.atleast_2d(x)
    n = rows.shape[1]
    out = np.full(rows.shape[0], np.nan)
    if n >= 3:
        finite = np.all(np.isfinite(rows), axis=1)
        clean = np.where(finite[:, None], rows, 0.0)
        dev = clean - clean.mean(axis=1, keepdims=True)
        m2, m3 = (dev**2).mean(axis=1), (dev**3).mean(axis=1)
        spread = finite & (np.ptp(clean, axis=1) > SPREAD_RTOL * np.abs(clean).max(axis=1)) & (m2 > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            g1 = math.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5
        out = np.where(spread, g1, np.nan)
    if x.ndim == 2:
        return out
    value = float(out[0])
    return value if math.isfinite(value) else None


def skew_corrected_p(d: Sequence[float] | np.ndarray, margin: float = 0.0) -> float | np.ndarray:
    """Hall's skewness-corrected studentized p-value of H0: mean(d) <= margin, per row of d, shape
    (n,) or (rows, n), metric units, direction-normalised.

    x = d - margin, S = mean(x) / s (s the sample SD), gamma = k3 / s**3 with
    k3 = n sum (x - mean)**3 / ((n - 1)(n - 2)), T = sqrt(n) (S + gamma S**2 / 3 + gamma**2 S**3 / 27
    + gamma / (6 n)), p = P(t_{n-1} >= T). T is non-decreasing in S (dT/dS = sqrt(n) (1 + gamma S / 3)**2),
    so p is non-decreasing in the margin and the bound it gives agrees with it. A left-skewed sample
    (gamma < 0) needs a larger S than Student's t would. Rows with no spread: p = 0 when mean(x) > 0,
    else 1; fewer than 3 units (no skewness to estimate): p = 0, the sign-flip alone decides.
    Source: Hall (1992), "On the removal of skewness by transformation", JRSS-B 54:221-228; Johnson
    (1978), "Modified t tests and confidence intervals for asymmetrical populations", JASA 73:536-544.
    Returns a float for 1-D input, an array (rows,) for 2-D.
    """
    from scipy.stats import t as student_t

    x = np.atleast_2d(np.asarray(d, dtype=float)) - margin
    n = x.shape[1]
    if n < 3:
        out = np.zeros(x.shape[0])
    else:
        mean = x.mean(axis=1)
        dev = x - mean[:, None]
        s = np.sqrt((dev**2).sum(axis=1) / (n - 1))
        k3 = n * (dev**3).sum(axis=1) / ((n - 1) * (n - 2))
        spread = s > SPREAD_RTOL * np.maximum(np.abs(x).max(axis=1), 1e-300)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            big_s = np.where(spread, mean / np.where(spread, s, 1.0), 0.0)
            gamma = np.where(spread, k3 / np.where(spread, s, 1.0) ** 3, 0.0)
            t = math.sqrt(n) * (big_s + gamma * big_s**2 / 3 + gamma**2 * big_s**3 / 27 + gamma / (6 * n))
            p = student_t.sf(t, n - 1)
        out = np.where(spread, p, np.where(mean > 0, 0.0, 1.0))
    return float(out[0]) if np.ndim(d) == 1 else out


@dataclass(frozen=True)
class SkewedNull:
    """A mean-zero null family of the skewed-nulls benchmark and what the default test did with it.

    name: the family as the warning names it; population: its skewness (the distribution's own);
    typical: the median sample G1 over 40 units (what a trial on it usually records); run_rate: the
    measured share of 20-attempt runs (campaign multiplicity, confirmation on) that promoted
    something, in [0, 1]."""

    name: str
    population: float
    typical: float
    run_rate: float


SKEWED_NULLS: tuple[SkewedNull, ...] = (
    SkewedNull("+1 w.p. 0.95 / -19 w.p. 0.05 with N(0, 1) noise", -3.82, -3.91, 0.7265),
    SkewedNull("a centred lognormal (sigma 1), left-skewed", -6.18, -2.31, 0.021),
    SkewedNull("1 - Exp(1) (exponential, left-skewed)", -2.0, -1.53, 0.016),
    SkewedNull("2 - Gamma(2) (left-skewed)", -1.41, -1.12, 0.0345),
    SkewedNull("Gamma(2) - 2 (right-skewed)", 1.41, 1.12, 0.01),
    SkewedNull("Exp(1) - 1 (exponential, right-skewed)", 2.0, 1.53, 0.0045),
    SkewedNull("a centred lognormal (sigma 1), right-skewed", 6.18, 2.31, 0.0015),
)
"""Measured by benchmarks/skewed_nulls.py (benchmarks/results/skewed_nulls.md: 2,000 runs of 20
attempts per family, `guarded_sign_flip` of gate rules 2 as built, gate.units [10, 20, 40], alpha
0.05, campaign multiplicity, confirmation on 40 fresh units; run_rate's 95% Clopper-Pearson
intervals are in that file). Families whose losses are rarer (+0.1 w.p. 0.99 / -9.9 w.p. 0.01:
12.1% of runs with N(0, 1) noise, 100% with N(0, 0.1^2)) are left out: their samples usually show
no loss (median G1 over 40 units -0.25), so no recorded skewness can point to them."""


RIGHT_SKEW_NOTE = 0.05
"""A nearest family promoted in at most this share of runs (alpha 0.05: every continuous skewed null
measured, either direction) gets the note that the default kept its level there, though nothing
certifies it; only left skew (rare large losses) gets the advice to consider `betting`."""


def nearest_null(g1: float) -> SkewedNull:
    """The SKEWED_NULLS family whose typical 40-unit G1 is nearest to `g1` (dimensionless)."""
    return min(SKEWED_NULLS, key=lambda f: abs(f.typical - g1))


def skew_warning(g1: float | None, units: int, what: str = "the paired differences",
                 over: str | None = None) -> str | None:
    """The warning for a skewness `g1` (G1 over `units` units of `what`; `over` replaces the words
    "over <units> units" when g1 summarises several samples), or None when there is nothing to say:
    g1 None, units < SKEW_MIN_UNITS, or |g1| <= SKEW_WARN.

    The sentence names the direction, the nearest measured family (`nearest_null`) and the share of
    20-attempt runs the default test promoted on it (with a note when that share is at most
    RIGHT_SKEW_NOTE), and for left skew points to the test that does not need symmetry."""
    if g1 is None or not math.isfinite(g1) or units < SKEW_MIN_UNITS or abs(g1) <= SKEW_WARN:
        return None
    family = nearest_null(g1)
    side, tail = ("left-skewed", "rare large losses") if g1 < 0 else ("right-skewed", "rare large gains")
    rate = f"about {100 * family.run_rate:.0f}%" if family.run_rate >= 0.005 else "under 0.5%"
    said = (f"{what} are {side} (G1 = {g1:+.2f} {over or f'over {units} units'}: {tail}), while the default "
            "test is exact only for symmetric differences (its skew correction is approximate): a mean-zero "
            f"null like {family.name} "
            f"(typical G1 {family.typical:+.2f}) is promoted by it in {rate} of 20-attempt runs "
            "(benchmarks/results/skewed_nulls.md)")
    if family.run_rate <= RIGHT_SKEW_NOTE:
        said += "; on that shape it stayed within its level, but nothing certifies it"
    if g1 < 0:
        said += "; where a rare large loss is a real risk, consider `gate.test = \"betting\"` with `gate.max_unit_loss`"
    return said
