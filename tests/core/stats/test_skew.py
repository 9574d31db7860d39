"""The skewness statistic trials record, and the warning it drives (core.stats.skew)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import clopper_pearson
from scipy import stats as sps

from ratchet.core.stats.skew import (
    RIGHT_SKEW_NOTE,
    SKEW_MIN_UNITS,
    SKEW_WARN,
    SKEWED_NULLS,
    nearest_null,
    sample_skewness,
    skew_warning,
)

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "skewed_nulls.md"



@pytest.mark.parametrize("n", [3, 4, 10, 40, 333])
def test_sample_skewness_is_scipys_adjusted_fisher_pearson_g1(n: int):
    rng = np.random.default_rng(n)
    for d in (rng.normal(size=n), rng.lognormal(size=n), 1.0 - rng.exponential(size=n), rng.integers(-3, 4, n)):
        if np.ptp(d) == 0:
            continue
        assert sample_skewness(d) == pytest.approx(float(sps.skew(d, bias=False)), rel=1e-10, abs=1e-12)
    batch = rng.gamma(2.0, size=(50, n))
    assert np.allclose(sample_skewness(batch), sps.skew(batch, axis=1, bias=False), rtol=1e-10, atol=1e-12)


def test_sample_skewness_is_none_below_three_units_or_without_spread():
    assert sample_skewness([]) is None and sample_skewness([1.0, 5.0]) is None
    assert sample_skewness([2.5, 2.5, 2.5, 2.5]) is None
    # one value up to float rounding, as (a + noise) - noise gives: no spread, not a skew of the rounding
    assert sample_skewness([(-9.0 + 0.1234567) - 0.1234567, 9.0 - 18.0, -9.0, -9.0]) is None
    assert sample_skewness([1.0, 2.0, math.inf]) is None and sample_skewness([1.0, 2.0, math.nan]) is None
    assert sample_skewness([0.0, 0.0, 1.0]) == pytest.approx(sps.skew([0.0, 0.0, 1.0], bias=False))
    batch = sample_skewness(np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 3.0]]))
    assert isinstance(batch, np.ndarray) and math.isnan(batch[0]) and batch[1] > 0
    with pytest.raises(ValueError):
        sample_skewness(np.zeros((2, 2, 3)))


def test_the_warning_needs_enough_units_and_a_skew_beyond_the_threshold():
    assert skew_warning(None, 40) is None
    assert skew_warning(-SKEW_WARN, 40) is None and skew_warning(SKEW_WARN, 40) is None
    assert skew_warning(-3.0, SKEW_MIN_UNITS - 1) is None
    assert skew_warning(-SKEW_WARN - 0.01, SKEW_MIN_UNITS) is not None


def test_a_left_skew_names_the_nearest_family_its_measured_rate_and_the_betting_test():
    said = skew_warning(-2.3, 40)
    assert said is not None
    assert said.startswith("the paired differences are left-skewed (G1 = -2.30 over 40 units: rare large losses)")
    family = nearest_null(-2.3)
    assert family.name in said and f"about {100 * family.run_rate:.0f}% of 20-attempt runs" in said
    assert "benchmarks/results/skewed_nulls.md" in said and '`gate.test = "betting"` with `gate.max_unit_loss`' in said


def test_a_right_skew_is_said_without_advice_when_its_family_kept_the_level():
    said = skew_warning(1.6, 40, "the A/A differences", over="over 30 seeds")
    assert said is not None and said.startswith("the A/A differences are right-skewed (G1 = +1.60 over 30 seeds")
    assert nearest_null(1.6).run_rate <= RIGHT_SKEW_NOTE and "betting" not in said
    assert "nothing certifies it" in said


def test_the_rate_table_quotes_the_committed_benchmark():
    """Each SKEWED_NULLS row is a family of benchmarks/results/skewed_nulls.md: its run rate is the
    default rule's runs that promoted / runs, its typical G1 the median G1 over 40 units."""
    text = RESULTS.read_text(encoding="utf-8")
    runs = int(re.search(r"([\d,]+) runs of 20 attempts per family", text)[1].replace(",", ""))
    rows = re.findall(r"^- [\w.%-]+: .*?\bdefault \d+ / (\d+),.*median G1 over 40 units ([-+]\d+\.\d+)$", text, re.M)
    measured = [(int(promoted) / runs, float(g1)) for promoted, g1 in rows]
    assert len(measured) >= len(SKEWED_NULLS)
    for family in SKEWED_NULLS:
        assert any(abs(rate - family.run_rate) < 1e-9 and abs(g1 - family.typical) <= 0.005 for rate, g1 in measured), \
            f"{family.name}: rate {family.run_rate}, typical G1 {family.typical} is not in {RESULTS.name}"


def test_gaussian_noise_crosses_the_threshold_as_rarely_as_the_docstring_says():
    """SKEW_WARN's docstring: |G1| > 1 in 5.4% of Gaussian samples of 20 units, 1.1% of 40 units.
    20,000 samples each; the 99.9% Clopper-Pearson interval must hold the figure (fixed seed)."""
    rng = np.random.default_rng(7)
    for n, quoted in ((20, 0.054), (40, 0.011)):
        g1 = sample_skewness(rng.normal(size=(20_000, n)))
        fires = int((np.abs(g1) > SKEW_WARN).sum())
        low, high = clopper_pearson(fires, 20_000, 0.999)
        assert low <= quoted <= high, f"{n} units: {fires} of 20,000 fired, CP 99.9% [{low:.4f}, {high:.4f}]"
