"""Paired tests and intervals for one trial: candidate against champion on the same units.

Pure: values in, values out; randomness only through a seed argument. Every test here is one-sided
(is the candidate better by more than the margin?) and returns p-values that are exact or
conservative, never optimistic (docs/gate.md). The core tests accept a batch of trials at once
(a 2-D array, one row per trial): the simulation tests drive the very same code the gate calls.

- binary scores: exact McNemar (margin 0), an exact unconditional test (margin > 0), Wilson
  intervals for pass rates and Newcombe's interval for the paired difference of pass rates;
- continuous scores: the sign-flip permutation test of the mean paired difference and a
  Student t interval for it.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

import numpy as np
from scipy import stats as _sps

from ratchet.core.vocab import PValueKind

Kind = Literal["binary", "continuous"]
P_VALUE_KINDS: tuple[PValueKind, ...] = ("exact", "bound", "monte_carlo")

EXACT_MAX_UNITS = 20  # sign-flip: all 2**n flips are enumerated up to this many units
MC_FLIPS = 20_000  # sign-flip: the fewest random flips drawn beyond EXACT_MAX_UNITS (Phipson & Smyth 2010)
MC_RESOLUTION = 20  # sign-flip: flips are drawn so the Monte Carlo floor 1/(B+1) is <= threshold / this
MC_MAX_FLIPS = 2**22  # sign-flip: the most flips drawn (floor 2.4e-7, below the exact floor 0.5**20)
_FLIP_CHUNK = 16_384  # flips per block in Monte Carlo counting (with _ROW_CHUNK rows: ~32 MB of sums)
TIE_RTOL = 1e-9  # a flipped sum within this fraction of sum(|x|) of the observed one is a tie (counts as >=)
MARGIN_GRID = 512  # binary margin test: intervals the nuisance parameter's range is cut into
Z95 = 1.959963984540054  # standard normal 97.5% quantile: two-sided 95% intervals
_ROW_CHUNK = 256  # trials per block in batched sign-flip counting (bounds memory to ~40 MB)


def _as_counts(value: object, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iub" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise ValueError(f"{name} must hold whole counts, got {value!r}")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return arr


def _scalar_or_array(arr: np.ndarray) -> float | np.ndarray:
    return float(arr) if arr.ndim == 0 else arr


def mcnemar_exact(b: int | np.ndarray, c: int | np.ndarray) -> float | np.ndarray:
    """One-sided exact McNemar p-value that the candidate is better.

    b: units where the candidate passes and the champion fails; c: the reverse (counts >= 0, ints or
    equal-shape integer arrays for a batch of trials). Returns P(Binom(b + c, 1/2) >= b), a float for
    scalar input, else an array of b's shape; 1.0 where b + c == 0. Raises ValueError on negative or
    fractional counts. Source: McNemar (1947), Psychometrika 12:153-157 (exact conditional form).
    """
    b_arr, c_arr = _as_counts(b, "b"), _as_counts(c, "c")
    p = _sps.binom.sf(b_arr - 1, b_arr + c_arr, 0.5)
    p = np.where(b_arr + c_arr == 0, 1.0, np.clip(p, 0.0, 1.0))
    return _scalar_or_array(np.asarray(p, dtype=float))


def _margin_tail(s_values: np.ndarray, n: int, margin: float) -> np.ndarray:
    """Upper bound of sup over H0 of P(n10 - n01 >= s) for each s in `s_values` (1-D ints)."""
    q_max = (1.0 - margin) / 2.0
    q = np.linspace(0.0, q_max, MARGIN_GRID + 1)
    p01, p10 = q[:-1, None], q[1:, None] + margin  # interval j: p01 at its low end, p10 at its high end
    k = np.arange(n + 1)[None, :]
    w = _sps.binom.pmf(k, n, p01)  # P(n01 = k), shape (grid, n + 1)
    r = np.clip(p10 / (1.0 - p01), 0.0, 1.0)  # P(+1 | not -1)
    out = np.empty(len(s_values))
    for i, s in enumerate(s_values):
        tail = _sps.binom.sf(k + s - 1, n - k, r)  # P(n10 >= k + s | n01 = k)
        out[i] = float(np.max(np.sum(w * tail, axis=1)))
    return np.clip(out, 0.0, 1.0)


def binary_margin_test(b: int | np.ndarray, c: int | np.ndarray, n: int, margin: float) -> float | np.ndarray:
    """One-sided p-value for H0: p10 - p01 <= margin on paired binary scores.

    b = n10 (candidate passes, champion fails), c = n01 (the reverse), n the number of units (ties
    included); ints, or equal-shape arrays for a batch of trials with the same n. margin in [0, 1]
    is the smallest gain in pass rate worth promoting. margin == 0 is the exact McNemar test;
    margin >= 1 cannot be exceeded and gives 1.0.

    For margin > 0 the test is exact unconditional (Suissa & Shuster 1985, Stat Med 4:371; margin
    form after Sidik 2003, J Biopharm Stat 13:309): statistic S = n10 - n01 and
    p = sup over H0 of P(S >= s_obs). Moving probability from -1 to 0 or from 0 to +1 raises S
    stochastically, so the sup lies on the boundary p10 = p01 + margin, p01 = q in [0, (1-margin)/2].
    The boundary is cut into MARGIN_GRID intervals; on each, the trinomial (p10 = q_high + margin,
    p01 = q_low) dominates every point of the interval, so the maximum over intervals is an upper
    bound of the sup: the p-value is conservative, never optimistic.
    Raises ValueError on bad counts (b + c > n) or a margin outside [0, inf).
    """
    b_arr, c_arr = _as_counts(b, "b"), _as_counts(c, "c")
    if np.any(b_arr + c_arr > n):
        raise ValueError(f"b + c must be <= n = {n}")
    if not (math.isfinite(margin) and margin >= 0.0):
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")
    if margin == 0.0:
        return mcnemar_exact(b_arr, c_arr)
    if margin >= 1.0:
        return _scalar_or_array(np.ones(b_arr.shape))
    s = b_arr - c_arr
    uniq, inverse = np.unique(s, return_inverse=True)
    p = _margin_tail(uniq, n, float(margin))[inverse.reshape(s.shape)]
    return _scalar_or_array(np.asarray(p, dtype=float))


@functools.lru_cache(maxsize=EXACT_MAX_UNITS + 1)
def _sign_matrix(n: int) -> np.ndarray:
    """All 2**n sign vectors as a (2**n, n) float array, read-only (built once per n: every exact
    p-value and each bisection step of a bound asks for the two halves); row 0 is all +1."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    signs = 1.0 - 2.0 * bits
    signs.setflags(write=False)
    return signs


def _count_exact(x: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Per row of x (trials, n <= EXACT_MAX_UNITS): how many of the 2**n flips have sum >= threshold.

    Every flip is counted (full enumeration), split in two halves: sum = a + b with a from the first
    half's 2**h flips and b from the second's, so counting b >= threshold - a over sorted b needs
    O(2**(n/2) log) work per trial instead of O(2**n) (meet in the middle).
    """
    n = x.shape[1]
    h = n // 2
    left, right = _sign_matrix(h), _sign_matrix(n - h)
    counts = np.empty(x.shape[0], dtype=np.int64)
    for start in range(0, x.shape[0], _ROW_CHUNK):
        rows = slice(start, start + _ROW_CHUNK)
        a = x[rows, :h] @ left.T
        b = np.sort(x[rows, h:] @ right.T, axis=1)
        for i in range(a.shape[0]):
            below = np.searchsorted(b[i], threshold[rows][i] - a[i], side="left")
            counts[start + i] = b.shape[1] * a.shape[1] - int(below.sum())
    return counts


def mc_flips(threshold: float | None) -> int:
    """Random sign flips B drawn beyond EXACT_MAX_UNITS for a look whose p-value threshold is `threshold`.

    B = clip(ceil(MC_RESOLUTION / threshold), MC_FLIPS, MC_MAX_FLIPS), so the smallest Monte Carlo
    p-value 1 / (B + 1) is at most threshold / MC_RESOLUTION (or 2.4e-7 at the cap, below the exact
    floor 0.5**EXACT_MAX_UNITS): a threshold the test reaches with EXACT_MAX_UNITS units stays
    reachable with more units. threshold None or >= MC_RESOLUTION / MC_FLIPS: MC_FLIPS.
    Raises ValueError on a threshold that is not a finite number > 0.
    """
    if threshold is None:
        return MC_FLIPS
    if not (math.isfinite(threshold) and threshold > 0.0):
        raise ValueError(f"threshold must be finite and > 0, got {threshold!r}")
    return int(min(MC_MAX_FLIPS, max(MC_FLIPS, math.ceil(MC_RESOLUTION / threshold))))


def _count_random(x: np.ndarray, threshold: np.ndarray, rng_seed: int, flips: int) -> np.ndarray:
    """Per row of x: how many of `flips` random flips (the same for every row, drawn in blocks from
    np.random.default_rng(rng_seed)) have sum >= threshold."""
    rng = np.random.default_rng(rng_seed)
    counts = np.zeros(x.shape[0], dtype=np.int64)
    for done in range(0, flips, _FLIP_CHUNK):
        block = min(_FLIP_CHUNK, flips - done)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(block, x.shape[1]))
        for start in range(0, x.shape[0], _ROW_CHUNK):
            rows = slice(start, start + _ROW_CHUNK)
            sums = x[rows] @ signs.T
            counts[rows] += np.count_nonzero(sums >= threshold[rows][:, None], axis=1)
    return counts


def sign_flip_test(
    d: np.ndarray, margin: float, rng_seed: int, threshold: float | None = None
) -> float | np.ndarray:
    """One-sided sign-flip permutation p-value for H0: mean(d) <= margin.

    d: paired differences (direction-normalised, metric units), shape (n,) for one trial or
    (trials, n) for a batch; finite. Under H0 with d - margin symmetric about 0, every sign flip of
    x = d - margin is equally likely, and p = P(flipped sum >= observed sum).
    n <= EXACT_MAX_UNITS: exact, all 2**n flips enumerated, p = count / 2**n (the identity flip
    included, so p >= 0.5**n). Larger n: B = mc_flips(threshold) flips from
    np.random.default_rng(rng_seed) (the same for every row; `threshold` is the p-value threshold
    the result will be compared with, so B is chosen from the level at stake) and
    p = (1 + count) / (B + 1), valid, never optimistic (Phipson & Smyth 2010, SAGMB 9:39;
    Hemerik & Goeman 2018, JRSS-B 80:137).
    Flipped sums within TIE_RTOL * sum(|x|) of the observed one count as >= (float ties).
    Returns a float for 1-D input, an array (trials,) for 2-D; 1.0 when n == 0. Deterministic for
    the same inputs. Raises ValueError on non-finite values or more than 2 dimensions.
    Source: Fisher (1935), The Design of Experiments §21; Good (2005), Permutation Tests.
    """
    x = np.asarray(d, dtype=float)
    if x.ndim not in (1, 2):
        raise ValueError(f"d must be 1-D (units) or 2-D (trials, units), got shape {x.shape}")
    if not (np.all(np.isfinite(x)) and math.isfinite(margin)):
        raise ValueError("d and margin must be finite")
    single = x.ndim == 1
    x = np.atleast_2d(x) - margin
    n = x.shape[1]
    if n == 0:
        p = np.ones(x.shape[0])
    else:
        observed = x.sum(axis=1) - TIE_RTOL * np.abs(x).sum(axis=1)
        if n <= EXACT_MAX_UNITS:
            p = _count_exact(x, observed) / float(2**n)
        else:
            flips = mc_flips(threshold)
            p = (1.0 + _count_random(x, observed, rng_seed, flips)) / (flips + 1.0)
    return float(p[0]) if single else p


def sign_flip_curve(d: np.ndarray, rng_seed: int, threshold: float | None = None) -> Any:
    """The sign-flip p-value of one trial as a function of the null mean m: m -> p(m), the same
    p-values as sign_flip_test(d, m, rng_seed, threshold) up to float rounding, for inverting the test
    (bounds.lower_bound). Beyond EXACT_MAX_UNITS the flips are drawn once and their sums kept
    (2 floats per flip), so each m costs O(B) instead of O(B n). d: shape (n,), finite.
    """
    x = np.asarray(d, dtype=float).ravel()
    n = x.size
    if n <= EXACT_MAX_UNITS:
        return lambda m: float(sign_flip_test(x, m, rng_seed, threshold))
    flips = mc_flips(threshold)
    rng = np.random.default_rng(rng_seed)
    sums, counts = np.empty(flips), np.empty(flips)
    for done in range(0, flips, _FLIP_CHUNK):
        block = min(_FLIP_CHUNK, flips - done)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(block, n))
        sums[done : done + block], counts[done : done + block] = signs @ x, signs.sum(axis=1)

    def p_of(m: float) -> float:
        shifted = x - m
        observed = shifted.sum() - TIE_RTOL * np.abs(shifted).sum()
        return (1.0 + np.count_nonzero(sums - m * counts >= observed)) / (flips + 1.0)

    return p_of


def min_p_value(kind: Kind, n: int, margin: float = 0.0, threshold: float | None = None) -> float:
    """The smallest p-value the gate's paired test can produce with n units (n >= 0).

    binary, margin 0 (McNemar): 0.5**n, reached when all n units favour the candidate; binary,
    margin m > 0: ((1 + m) / 2)**n, the unconditional test's value at n10 = n.
    continuous (sign-flip): 0.5**n while it enumerates (n <= EXACT_MAX_UNITS), else the Monte Carlo
    floor 1 / (mc_flips(threshold) + 1) <= threshold / MC_RESOLUTION: a threshold reachable with
    fewer units stays reachable with more. A threshold below this cannot be reached.
    Raises ValueError on an unknown kind or n < 0.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if kind == "binary":
        return 0.5**n if margin == 0.0 else float(binary_margin_test(n, 0, n, margin))
    if kind == "continuous":
        return 0.5**n if n <= EXACT_MAX_UNITS else 1.0 / (mc_flips(threshold) + 1.0)
    raise ValueError(f"kind must be 'binary' or 'continuous', got {kind!r}")


def p_value_kind(kind: Kind, n: int, margin: float = 0.0) -> PValueKind:
    """The label of the paired test's p-value with n units: binary margin 0 (McNemar) and sign-flip
    up to EXACT_MAX_UNITS are `exact`; the binary margin test is a `bound`; sign-flip beyond
    EXACT_MAX_UNITS is `monte_carlo`."""
    if kind == "binary":
        return "exact" if margin == 0.0 else "bound"
    return "exact" if n <= EXACT_MAX_UNITS else "monte_carlo"


def wilson_interval(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    passes, n: counts (0 <= passes <= n); z: the normal quantile (default two-sided 95%).
    Returns (low, high) in [0, 1]; (0.0, 1.0) when n == 0. Raises ValueError on bad counts.
    Source: Wilson (1927), JASA 22:209-212.
    """
    if not (0 <= passes <= n):
        raise ValueError(f"need 0 <= passes <= n, got passes={passes}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p, z2 = passes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_interval(
    n11: int, n10: int, n01: int, n00: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Interval for the paired difference of pass rates, candidate minus champion.

    n11 both pass, n10 candidate passes and champion fails, n01 the reverse, n00 both fail.
    Returns (low, high) within [-1, 1] around (n10 - n01) / n; (-1.0, 1.0) when n == 0.
    Newcombe's method 10: Wilson limits of each pass rate combined by square-and-add with the
    continuity-corrected phi correlation. Source: Newcombe (1998), Stat Med 17:2635-2650.
    """
    n = n11 + n10 + n01 + n00
    if min(n11, n10, n01, n00) < 0:
        raise ValueError("counts must be >= 0")
    if n == 0:
        return (-1.0, 1.0)
    z = float(_sps.norm.ppf(0.5 + confidence / 2.0))
    p1, p2 = (n11 + n10) / n, (n11 + n01) / n
    l1, u1 = wilson_interval(n11 + n10, n, z)
    l2, u2 = wilson_interval(n11 + n01, n, z)
    margins = (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    cross = n11 * n00 - n10 * n01
    phi = 0.0
    if margins > 0:
        corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
        phi = corrected / math.sqrt(margins)
    est = p1 - p2
    low = est - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = est + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return (max(-1.0, low), min(1.0, high))


def mean_diff_interval(d: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Student t interval for the mean paired difference (for display, not for the decision).

    d: paired differences, shape (n,), finite, metric units. Returns (low, high) =
    mean -/+ t_{(1+confidence)/2, n-1} * sd / sqrt(n), two-sided at `confidence` in (0, 1).
    With n < 2 the spread is unknown and the interval is unbounded: (-inf, inf) (never NaN);
    callers that need JSON report it as no interval. Source: Student (1908), Biometrika 6:1-25.
    Raises ValueError on a bad confidence or non-finite values.
    """
    x = np.asarray(d, dtype=float).ravel()
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not np.all(np.isfinite(x)):
        raise ValueError("d must be finite")
    if x.size < 2:
        return (-math.inf, math.inf)
    mean, sem = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(x.size)
    half = _t_quantile(0.5 + confidence / 2.0, x.size - 1) * sem
    return (mean - half, mean + half)


@functools.lru_cache(maxsize=1024)
def _t_quantile(q: float, df: int) -> float:
    """Student t quantile (scipy's t.ppf costs ~0.2 ms a call; a run asks for few distinct df)."""
    return float(_sps.t.ppf(q, df))
