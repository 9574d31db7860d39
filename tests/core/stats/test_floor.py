"""The floor test (`gate.test = "betting"`, gate rules 2): its level at the boundary of the null for
distributions that touch the floor, its monotonicity in the null (so the bound agrees with the
verdict), the gate and its batched twin agreeing, and its power against the rules-1 bets.

Tolerance of simulation asserts: the upper end of the two-sided 95% Clopper-Pearson interval of the
simulated rejection rate must stay within TOLERANCE of the level. With 4,000 replications a true
rate at the level gives an upper end near level + 0.007, so a test that overshoots the level by
more than about a point fails; Ville's inequality makes the true rate at most the level."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import clopper_pearson
from scipy.optimize import brentq
from scipy.stats import norm

from ratchet.core.gate import GateSettings, UnitScore, decide, look_boundaries, look_test
from ratchet.core.stats.betting import betting_test
from ratchet.core.stats.floor import (
    FLOOR_BET_CAP,
    agrapa_bets,
    breached,
    floor_test,
    growth_rate,
    units_needed,
)
from ratchet.core.stats.sequential import ACCEPTED, HARMFUL_TAIL, walk_looks

LEVEL = 0.05
TRIALS = 4_000
UNITS = 200
TOLERANCE = 0.01



def clipped_gaussian_location(floor: float, mean: float, sd: float) -> float:
    """The location mu of N(mu, sd) whose values clipped at `floor` have mean `mean`."""
    def gap(mu: float) -> float:
        a = (floor - mu) / sd
        return floor * norm.cdf(a) + mu * norm.sf(a) + sd * norm.pdf(a) - mean
    return float(brentq(gap, mean - abs(floor) - 10 * sd, mean + 10 * sd))


def boundary_null(family: str, rng: np.random.Generator, shape: tuple[int, int], floor: float,
                  margin: float) -> np.ndarray:
    """Paired differences >= floor with mean exactly `margin` (the boundary of H0)."""
    if family.startswith("two_point"):  # the floor w.p. q, else the value that puts the mean at the margin
        q = float(family.split("_")[-1])
        return np.where(rng.random(shape) < q, floor, (margin - q * floor) / (1 - q))
    if family == "skewed":  # floor + exponential: most units near the floor, a long right tail
        return floor + (margin - floor) * rng.exponential(1.0, shape)
    sd = (margin - floor) / 2
    return np.maximum(rng.normal(clipped_gaussian_location(floor, margin, sd), sd, shape), floor)


def ever_rejects(d: np.ndarray, margin: float, floor: float) -> np.ndarray:
    """Whether the floor test's p-value falls to LEVEL at any unit of each row (trials, n): the
    anytime event Ville's inequality bounds (stronger than rejecting at a few looks)."""
    bets = np.minimum(agrapa_bets(d, margin, floor), FLOOR_BET_CAP / (margin - floor))
    log_wealth = np.cumsum(np.log1p(bets * (d - margin)), axis=1)
    return log_wealth.max(axis=1) >= np.log(1.0 / LEVEL)


@pytest.mark.parametrize("family", ["two_point_0.05", "two_point_0.5", "skewed", "gaussian_clipped"])
@pytest.mark.parametrize("floor,margin", [(-1.0, 0.0), (-0.1, 0.0), (-1.0, 0.2)])
def test_floor_test_holds_its_level_at_every_unit_on_boundary_nulls(family: str, floor: float, margin: float):
    rng = np.random.default_rng([11, len(family), int(-floor * 10), int(margin * 10)])
    d = boundary_null(family, rng, (TRIALS, UNITS), floor, margin)
    assert abs(float(d.mean()) - margin) < 0.02 * (margin - floor), "the simulated null is not at the boundary"
    rejected = int(ever_rejects(d, margin, floor).sum())
    assert clopper_pearson(rejected, TRIALS)[1] <= LEVEL + TOLERANCE, (
        f"{family}, floor {floor}, margin {margin}: p fell to {LEVEL} in {rejected}/{TRIALS} trials")
    p = floor_test(d[:400, :40], margin, floor)  # the gate's own entry point agrees with the walk above
    assert np.all((p <= LEVEL) <= ever_rejects(d[:400, :40], margin, floor))


def test_a_null_that_breaks_the_floor_is_accepted_unless_below_floor_rejects_it():
    """A boundary null (-1 or +1, each w.p. 1/2) with a floor declared ten times too shallow: the
    p-value alone (units clipped to the floor) accepts it far above the level; the gate's below_floor
    rule rejects it, since a unit at -1 shows among the first look's 10 units w.p. 1 - 2**-10. (A
    breach rarer than the looks' units stays unseen: the guarantee assumes a true floor.)"""
    rng = np.random.default_rng(5)
    d = boundary_null("two_point_0.5", rng, (2_000, 40), -1.0, 0.0)
    settings = GateSettings((10, 20, 40), LEVEL, 0.0, "continuous", "max", 0, "betting", max_unit_loss=0.1)
    test = look_test(settings)
    looks = settings.looks
    p = np.stack([test.p_value(d[:, :n], 0.0, LEVEL) for n in looks], axis=1)
    est = np.stack([d[:, :n].mean(1) for n in looks], axis=1)
    guard = np.stack([test.guard(d[:, :n]) for n in looks], axis=1)
    _, plain = walk_looks(p, est, 0.0, [LEVEL] * 3)
    _, gated = walk_looks(p, est, 0.0, [LEVEL] * 3, guard)
    assert np.mean(plain == ACCEPTED) > 5 * LEVEL, "clipping a breached floor should fool the p-value"
    assert np.mean(gated == ACCEPTED) <= LEVEL and np.mean(gated == HARMFUL_TAIL) > 0.8


def test_p_value_is_non_decreasing_in_the_null_when_the_bets_stay_tuned_to_the_margin():
    worst = 0.0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        floor = -rng.uniform(0.05, 2.0)
        d = np.maximum(rng.normal(rng.uniform(-0.2, 0.5), rng.uniform(0.01, 1.0), int(rng.integers(1, 80))), floor)
        bet_margin = rng.uniform(0.0, 0.3)
        nulls = np.linspace(floor + 1e-6, float(d.max()) + 0.1, 200)
        p = np.array([floor_test(d, m, floor, bet_margin=bet_margin) for m in nulls])
        worst = min(worst, float(np.diff(p).min()))
        assert p[-1] == 1.0  # no null above every difference is rejected
    assert worst >= 0.0, f"p fell by {-worst} as the null rose"


@pytest.mark.parametrize("margin", [0.0, 0.01])
def test_floor_bound_clears_the_margin_if_and_only_if_accepted(margin: float):
    verdicts = set()
    for i in range(30):
        rng = np.random.default_rng(i)
        d = np.maximum(rng.normal((i % 6) * 0.01, 0.02, 40), -0.1)
        settings = GateSettings((10, 20, 40), LEVEL, margin, "continuous", "max", i, "betting", max_unit_loss=0.1)
        decision = decide([UnitScore(j, 0.5, 0.5 + float(v)) for j, v in enumerate(d)], settings)
        verdicts.add(decision.verdict)
        assert decision.reason != "below_floor"
        if decision.bound is None:
            assert decision.verdict != "accepted"
        else:
            assert (decision.bound >= margin) == (decision.verdict == "accepted"), decision
    assert {"accepted", "rejected"} <= verdicts


def test_decide_and_the_batched_walk_agree_including_below_floor():
    rng = np.random.default_rng(17)
    d = np.maximum(rng.normal(0.02, 0.03, (40, 40)), -0.1)
    d[::5, 15] = -0.3  # every fifth trial has a unit below the floor, seen at the second look
    settings = GateSettings((10, 20, 40), LEVEL, 0.0, "continuous", "max", 0, "betting", max_unit_loss=0.1)
    test = look_test(settings)
    thresholds = [m.increment for m in look_boundaries(settings, test)]
    p = np.stack([test.p_value(d[:, :n], 0.0, LEVEL) for n in settings.looks], axis=1)
    est = np.stack([d[:, :n].mean(1) for n in settings.looks], axis=1)
    guard = np.stack([test.guard(d[:, :n]) for n in settings.looks], axis=1)
    look, outcome = walk_looks(p, est, 0.0, thresholds, guard)
    names = {ACCEPTED: "significant_gain", HARMFUL_TAIL: "below_floor"}
    for row in range(d.shape[0]):
        one = decide([UnitScore(j, 0.0, float(v)) for j, v in enumerate(d[row])], settings)
        assert one.look == look[row]
        if outcome[row] in names:
            assert one.reason == names[outcome[row]]
    assert breached(d, -0.1).sum() == 8 and (outcome == HARMFUL_TAIL).any()


def test_floor_test_accepts_a_small_gain_in_far_fewer_units_than_the_range_bets():
    """Accuracy in [0, 1], gain 0.005, SD(d) 0.015, level 0.01: with a floor of -0.1 the floor test
    accepts within 300 units in nearly every trial; the rules-1 bets over [-1, 1] in none."""
    rng = np.random.default_rng(23)
    d = np.clip(rng.normal(0.005, 0.015, (300, 300)), -0.1, 1.0)
    level = 0.01
    floor_p = floor_test(d, 0.0, -0.1)
    range_p = betting_test(d, 0.0, (-1.0, 1.0), level, 300)
    assert np.mean(floor_p <= level) >= 0.9 and np.mean(range_p <= level) == 0.0
    assert 80 < units_needed(0.005, 0.015, -0.1, level) < 200  # the planning figure agrees in size
    assert growth_rate(0.005, 0.015, -1.0) == pytest.approx(0.99 * 0.005 - 0.99**2 * (0.015**2 + 0.005**2) / 2)
