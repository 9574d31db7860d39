"""core.stats.calibration on plain numbers: the spreads of seeds measured twice, the detectable gain
per look, the units suggested for a gain, and (by simulation) that the detectable gain is what the
real sign-flip test detects with 80% power."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from ratchet.core.stats.calibration import (
    Noise,
    detectable_continuous,
    estimate_noise,
    level_effects,
    look_effects,
    scaled_looks,
    units_for_effect,
)
from ratchet.core.stats.paired import sign_flip_test


def test_a_deterministic_benchmark_has_no_repeat_noise_and_plans_with_its_seed_spread():
    values = [0.12, -0.05, 0.31, 0.02, -0.17, 0.08]
    noise = estimate_noise([(v, v) for v in values])
    assert noise.deterministic and not noise.constant
    assert noise.repeat_sd == 0.0 and noise.paired_sd_low == 0.0
    assert noise.seed_sd == pytest.approx(statistics.stdev(values), rel=1e-12)
    assert noise.paired_sd == pytest.approx(noise.seed_sd, rel=1e-12), "a deterministic benchmark planned with zero SD"
    assert noise.paired_sd_high == pytest.approx(math.sqrt(2) * noise.seed_sd, rel=1e-12)
    assert noise.mean == pytest.approx(statistics.fmean(values))
    detectable = look_effects(noise.paired_sd, [10, 20], 0.05)
    assert all(look.detectable is not None and look.detectable > 0 for look in detectable)


def test_noise_per_run_without_a_seed_effect_is_all_repeat_noise():
    noise = estimate_noise([(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)])
    assert noise.repeat_sd == pytest.approx(math.sqrt(8 / 6))  # sum of squared differences / (2 n)
    assert noise.seed_sd == 0.0, "every seed's mean is 2: no seed effect"
    assert noise.paired_sd == pytest.approx(math.sqrt(2 * 8 / 6))
    assert not noise.deterministic and not noise.constant


def test_seed_and_repeat_variances_are_separated_by_their_moments():
    noise = estimate_noise([(0.0, 2.0), (4.0, 6.0)])
    # repeat variance (4 + 4) / 4 = 2; seed means 1 and 5, variance 8, minus half the repeat variance = 7
    assert noise.repeat_sd == pytest.approx(math.sqrt(2.0))
    assert noise.seed_sd == pytest.approx(math.sqrt(7.0))
    assert noise.total_sd == pytest.approx(3.0)
    assert noise.paired_sd == pytest.approx(math.sqrt(2 * 2 + 7))
    assert (noise.paired_sd_low, noise.paired_sd_high) == (pytest.approx(2.0), pytest.approx(math.sqrt(18)))


def test_a_constant_benchmark_detects_any_gain_past_the_margin():
    noise = estimate_noise([(0.5, 0.5)] * 4)
    assert noise.constant and noise.paired_sd == 0.0
    looks = look_effects(noise.paired_sd, [10, 20], 0.05, margin=0.01)
    assert [look.detectable for look in looks] == [0.01, 0.01]


@pytest.mark.parametrize("pairs", [[], [(1.0, 1.0)], [(1.0, math.nan), (2.0, 2.0)], [(1.0, 1.0), (math.inf, 0.0)]])
def test_too_few_seeds_or_a_non_finite_value_is_refused(pairs):
    with pytest.raises(ValueError):
        estimate_noise(pairs)


def test_noise_round_trips_through_json_and_refuses_a_stranger():
    noise = estimate_noise([(0.0, 2.0), (4.0, 6.0)])
    assert Noise.from_json(noise.to_json()) == noise
    with pytest.raises(ValueError):
        Noise.from_json({"seeds": 2})


def test_detectable_gain_is_the_t_formula_with_the_margin_added():
    expected = (1.72913 + 0.86095) / math.sqrt(20)  # t_{0.95,19} + t_{0.8,19} from printed tables
    assert detectable_continuous(1.0, 20, 0.05) == pytest.approx(expected, rel=1e-5)
    assert detectable_continuous(2.0, 20, 0.05, margin=0.3) == pytest.approx(0.3 + 2 * expected, rel=1e-5)
    assert detectable_continuous(1.0, 1, 0.05) == math.inf
    assert detectable_continuous(1.0, 20, 0.0) == math.inf
    with pytest.raises(ValueError):
        detectable_continuous(-1.0, 20, 0.05)


def test_a_look_the_exact_test_cannot_reach_detects_nothing():
    looks = look_effects(1.0, [3, 40], 0.01)  # 3 units: the sign-flip test's smallest p-value is 1/8
    assert looks[0].detectable is None and looks[0].threshold == 0.0
    assert looks[1].detectable is not None
    assert look_effects(1.0, [3], 0.01)[0].detectable is None


def test_later_looks_and_larger_levels_detect_smaller_gains():
    first, last = level_effects(1.0, alpha=0.05, multiplicity="campaign", max_attempts=20, looks=[10, 20, 40])
    assert (first.trial, last.trial) == (1, 20) and first.level > last.level
    gains = [look.detectable for look in first.looks]
    assert gains == sorted(gains, reverse=True)
    assert last.looks[-1].detectable > first.looks[-1].detectable
    (only,) = level_effects(1.0, alpha=0.05, multiplicity="trial", max_attempts=20, looks=[10, 20, 40])
    assert only.level == 0.05


def test_binary_looks_use_the_exact_mcnemar_floor():
    from ratchet.core.stats.power import mde_binary

    looks = look_effects(0.0, [20, 200], 0.05, kind="binary")
    assert looks[1].detectable == pytest.approx(mde_binary(200, looks[1].threshold))
    assert looks[1].detectable < looks[0].detectable


@pytest.mark.parametrize(("last", "expected"), [(80, (20, 40, 80)), (3, (1, 2, 3)), (1, (1,)), (40, (10, 20, 40))])
def test_scaled_looks_keep_the_gate_units_proportions(last, expected):
    assert scaled_looks([10, 20, 40], last) == expected


@pytest.mark.parametrize("kind", ["continuous", "binary"])
def test_suggested_units_are_the_fewest_whose_last_look_detects_the_effect(kind):
    level, effect = 0.01, (0.3 if kind == "continuous" else 0.15)
    looks = units_for_effect(effect, 1.0, [10, 20, 40], level, kind)
    assert looks is not None and len(looks) == 3
    assert look_effects(1.0, looks, level, kind)[-1].detectable <= effect
    fewer = scaled_looks([10, 20, 40], looks[-1] - 1)
    assert look_effects(1.0, fewer, level, kind)[-1].detectable > effect, "not the fewest units"


def test_no_units_are_suggested_for_an_effect_at_the_margin_or_out_of_reach():
    assert units_for_effect(0.1, 1.0, [10], 0.05, margin=0.1) is None
    assert units_for_effect(1e-6, 1.0, [10], 0.05) is None
    with pytest.raises(ValueError):
        units_for_effect(0.0, 1.0, [10], 0.05)


# Simulation: at the detectable gain the real sign-flip test accepts with about the power asked. The
# t approximation is not exact for a permutation test on few units, so the claim is "within 0.05 of
# 0.8"; the check allows for the simulation's own error with a 99.9% Clopper-Pearson interval.
SIM_TRIALS = 2000
POWER_TOLERANCE = 0.05


@pytest.mark.parametrize(("units", "level"), [(20, 0.05), (12, 0.01)])
def test_the_sign_flip_test_has_the_power_asked_at_the_detectable_gain(units, level):
    (look,) = look_effects(1.0, [units], level)
    rng = np.random.default_rng(7 + units)
    d = rng.normal(look.detectable, 1.0, size=(SIM_TRIALS, units))
    accepted = int(np.sum(np.asarray(sign_flip_test(d, 0.0, 1)) <= look.threshold))
    ci = sps.binomtest(accepted, SIM_TRIALS).proportion_ci(0.999, method="exact")
    assert ci.low <= 0.8 + POWER_TOLERANCE and ci.high >= 0.8 - POWER_TOLERANCE, (
        f"power {accepted / SIM_TRIALS:.3f} (99.9% CI {ci.low:.3f}..{ci.high:.3f}) at the detectable gain "
        f"{look.detectable:.3f}, expected 0.8 +/- {POWER_TOLERANCE}")
