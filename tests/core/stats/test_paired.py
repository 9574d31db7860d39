"""Paired tests and intervals: values against independent computations and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from ratchet.core.stats.paired import (
    EXACT_MAX_UNITS,
    MC_FLIPS,
    binary_margin_test,
    mcnemar_exact,
    mean_diff_interval,
    min_p_value,
    newcombe_interval,
    sign_flip_test,
    wilson_interval,
)


def brute_force_sign_flip(d: np.ndarray, margin: float) -> float:
    """Enumerate every flip with itertools: fraction whose sum is >= the observed (ties within 1e-9)."""
    x = np.asarray(d, dtype=float) - margin
    observed, tol = x.sum(), 1e-9 * np.abs(x).sum()
    hits = sum(1 for s in itertools.product((1.0, -1.0), repeat=len(x)) if np.dot(s, x) >= observed - tol)
    return hits / 2 ** len(x)


def trinomial_tail(s: int, n: int, p10: float, p01: float) -> float:
    """P(n10 - n01 >= s) by summing the trinomial pmf over every (n10, n01)."""
    total = 0.0
    for n10 in range(n + 1):
        for n01 in range(n + 1 - n10):
            if n10 - n01 >= s:
                coef = math.factorial(n) / (
                    math.factorial(n10) * math.factorial(n01) * math.factorial(n - n10 - n01)
                )
                total += coef * p10**n10 * p01**n01 * (1 - p10 - p01) ** (n - n10 - n01)
    return total


@pytest.mark.parametrize(
    "b,c", [(0, 0), (1, 0), (0, 1), (5, 5), (9, 1), (10, 0), (3, 12), (30, 11), (60, 40)]
)
def test_mcnemar_matches_scipy_binomtest(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_mcnemar_batch_equals_scalars() -> None:
    b, c = np.array([0, 3, 7, 10]), np.array([0, 4, 1, 0])
    assert np.allclose(
        mcnemar_exact(b, c), [mcnemar_exact(int(x), int(y)) for x, y in zip(b, c, strict=True)]
    )


@pytest.mark.parametrize("b,c", [(-1, 2), (1.5, 2)])
def test_mcnemar_refuses_bad_counts(b: float, c: float) -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(b, c)


def test_binary_margin_zero_is_mcnemar() -> None:
    assert binary_margin_test(7, 2, 30, 0.0) == mcnemar_exact(7, 2)


def test_binary_margin_one_or_more_cannot_reject() -> None:
    assert binary_margin_test(10, 0, 10, 1.0) == 1.0


@pytest.mark.parametrize("n,margin", [(6, 0.1), (8, 0.25), (10, 0.05)])
def test_binary_margin_p_value_bounds_the_true_supremum(n: int, margin: float) -> None:
    # The p-value must be >= sup over the null boundary p10 = p01 + margin of P(S >= s): checked at
    # 401 boundary points with the trinomial summed term by term (independent of the grid bound).
    qs = np.linspace(0.0, (1 - margin) / 2, 401)
    for s in range(-2, n + 1):
        sup = max(trinomial_tail(s, n, q + margin, q) for q in qs)
        p = binary_margin_test(max(s, 0), max(-s, 0), n, margin)
        assert p >= sup - 1e-12, f"s={s}: p {p} below the true sup {sup}"
        assert p <= sup + 0.02, f"s={s}: p {p} far above the true sup {sup} (grid too coarse)"


def test_binary_margin_batch_and_monotone_in_gain() -> None:
    b = np.arange(0, 11)
    p = binary_margin_test(b, np.zeros_like(b), 20, 0.1)
    assert np.all(np.diff(p) <= 1e-15)
    assert p[3] == binary_margin_test(3, 0, 20, 0.1)


def test_binary_margin_refuses_counts_beyond_n() -> None:
    with pytest.raises(ValueError):
        binary_margin_test(6, 5, 10, 0.1)


@pytest.mark.parametrize("n", range(1, 13))
def test_sign_flip_enumeration_matches_itertools(n: int) -> None:
    rng = np.random.default_rng(n)
    for d in (rng.normal(size=n), rng.integers(-2, 3, size=n).astype(float), rng.normal(size=n) + 0.5):
        for margin in (0.0, 0.25):
            assert sign_flip_test(d, margin, 0) == pytest.approx(brute_force_sign_flip(d, margin), abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=9), st.sampled_from([0.0, 0.5, 1.0]))
def test_sign_flip_ties_count_as_at_least_observed(values: list[int], margin: float) -> None:
    d = np.array(values, dtype=float) / 10.0  # tenths: sums that tie exactly in real numbers, not in floats
    p = sign_flip_test(d, margin, 0)
    assert p == pytest.approx(brute_force_sign_flip(d, margin), abs=1e-15)
    assert 0.5 ** len(d) <= p <= 1.0


def test_sign_flip_batch_equals_rows_exact_and_monte_carlo() -> None:
    rng = np.random.default_rng(3)
    for n in (7, 20, 25):
        d = rng.normal(size=(5, n)) + 0.3
        rows = [sign_flip_test(row, 0.1, 11) for row in d]
        assert np.array_equal(sign_flip_test(d, 0.1, 11), np.array(rows))


def test_sign_flip_is_deterministic_for_the_same_inputs() -> None:
    d = np.random.default_rng(0).normal(size=30)
    assert sign_flip_test(d, 0.0, 5) == sign_flip_test(d.copy(), 0.0, 5)


def _enumerated_p(d: np.ndarray) -> float:
    """Exact p for n up to ~22, enumerating flips in numpy blocks (not the meet-in-the-middle)."""
    n, observed = len(d), d.sum()
    hits = 0
    block = np.arange(2**14)
    for start in range(0, 2**n, len(block)):
        bits = ((start + block)[:, None] >> np.arange(n)[None, :]) & 1
        hits += int(np.count_nonzero((1 - 2 * bits) @ d >= observed - 1e-9 * np.abs(d).sum()))
    return hits / 2**n


def test_monte_carlo_p_is_close_to_exact_and_never_zero() -> None:
    d = np.random.default_rng(9).normal(size=EXACT_MAX_UNITS + 1) + 0.4
    exact = _enumerated_p(d)
    p = sign_flip_test(d, 0.0, 1)
    se = math.sqrt(exact * (1 - exact) / MC_FLIPS)
    assert abs(p - exact) <= 5 * se + 1 / MC_FLIPS, f"MC p {p} vs exact {exact}: beyond 5 Monte Carlo SE"
    assert sign_flip_test(np.full(30, 5.0), 0.0, 1) == pytest.approx(1 / (MC_FLIPS + 1))


def test_sign_flip_edge_cases() -> None:
    assert sign_flip_test(np.zeros(8), 0.0, 0) == 1.0
    assert sign_flip_test(np.full(8, 0.3), 0.3, 0) == 1.0
    assert sign_flip_test(np.ones(10), 0.0, 0) == 0.5**10 == min_p_value("continuous", 10)
    assert sign_flip_test(np.array([]), 0.0, 0) == 1.0
    with pytest.raises(ValueError):
        sign_flip_test(np.array([1.0, np.nan]), 0.0, 0)
    with pytest.raises(ValueError):
        sign_flip_test(np.ones((2, 2, 2)), 0.0, 0)


def test_min_p_value() -> None:
    assert min_p_value("binary", 10) == 0.5**10
    assert min_p_value("continuous", 20) == 0.5**20
    assert min_p_value("continuous", 21) == pytest.approx(1 / (MC_FLIPS + 1))
    assert min_p_value("binary", 10, 0.2) == pytest.approx(0.6**10)
    with pytest.raises(ValueError):
        min_p_value("ordinal", 10)  # type: ignore[arg-type]


def wilson_by_quadratic(x: int, n: int, z: float) -> tuple[float, float]:
    """Wilson limits as the roots of (x/n - p)^2 = z^2 p (1 - p) / n, solved with numpy.roots."""
    phat = x / n
    roots = np.roots([1 + z * z / n, -(2 * phat + z * z / n), phat * phat])
    return float(min(roots.real)), float(max(roots.real))


@pytest.mark.parametrize("x,n", [(0, 10), (1, 10), (5, 10), (10, 10), (37, 50), (1, 1), (123, 400)])
def test_wilson_matches_the_quadratic_roots(x: int, n: int) -> None:
    low, high = wilson_interval(x, n)
    exp_low, exp_high = wilson_by_quadratic(x, n, 1.959963984540054)
    assert low == pytest.approx(max(0.0, exp_low), abs=1e-12)
    assert high == pytest.approx(min(1.0, exp_high), abs=1e-12)


def test_wilson_known_value_and_edges() -> None:
    assert wilson_interval(0, 10)[1] == pytest.approx(0.27753, abs=1e-5)  # the "rule of three"-like bound
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_newcombe_matches_published_example() -> None:
    # Cavo et al. (2012) table, Fagerland, Lydersen & Laake (2017) ch. 8: estimate -0.0621,
    # Newcombe square-and-add 95% CI -0.1186 to -0.0046.
    low, high = newcombe_interval(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_newcombe_contains_estimate_and_stays_in_range() -> None:
    for counts in [(0, 10, 0, 0), (5, 0, 0, 5), (3, 4, 2, 1), (0, 0, 0, 1)]:
        low, high = newcombe_interval(*counts)
        est = (counts[1] - counts[2]) / sum(counts)
        assert -1.0 <= low <= est <= high <= 1.0
    assert newcombe_interval(0, 0, 0, 0) == (-1.0, 1.0)


def test_mean_diff_interval_is_student_t() -> None:
    d = np.random.default_rng(2).normal(size=15)
    expected = sps.t.interval(0.95, 14, loc=d.mean(), scale=sps.sem(d))
    assert mean_diff_interval(d, 0.95) == pytest.approx(expected, rel=1e-12)


def test_mean_diff_interval_small_and_constant_samples() -> None:
    assert mean_diff_interval(np.array([1.0]), 0.95) == (-math.inf, math.inf)
    assert mean_diff_interval(np.full(5, 0.2), 0.95) == pytest.approx((0.2, 0.2))
    with pytest.raises(ValueError):
        mean_diff_interval(np.ones(3), 1.5)
