"""The gate's tests (issues 13.2, 13.3, 14): Monte Carlo flips chosen from the level, p-value labels,
bounds that agree with verdicts, the betting test's guarantee on lopsided nulls, guarantee helpers.

Tolerance of simulation asserts: the upper end of a two-sided 95% Clopper-Pearson interval of the
simulated rate must reach the level (a rate whose interval lies above the level fails)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import clopper_pearson

from ratchet.core.errors import RatchetError
from ratchet.core.gate import GateSettings, UnitScore, decide, look_boundaries, look_test
from ratchet.core.stats.betting import betting_test
from ratchet.core.stats.guarantee import GATE_TESTS, guarantee, ruled_out_frequency, unseen_chance
from ratchet.core.stats.paired import EXACT_MAX_UNITS, MC_MAX_FLIPS, mc_flips, min_p_value
from ratchet.core.stats.sequential import ACCEPTED, walk_looks

LOOKS = (10, 20, 40)



@pytest.mark.parametrize("threshold", [0.05, 1e-3, 1e-4, 1e-5, 1e-6])
def test_attainable_p_never_worsens_with_more_units(threshold: float) -> None:
    reachable = [min_p_value("continuous", n, 0.0, threshold) <= threshold for n in range(1, 201)]
    first = reachable.index(True)
    assert all(reachable[first:]), f"threshold {threshold}: reachable at {first + 1} units, lost later"
    if threshold >= 0.5**EXACT_MAX_UNITS:
        assert first + 1 <= EXACT_MAX_UNITS
    for n in range(EXACT_MAX_UNITS + 1, 60):
        assert min_p_value("continuous", n, 0.0, threshold) <= max(threshold / 20, 1 / (MC_MAX_FLIPS + 1))


def test_monte_carlo_flips_grow_as_the_threshold_shrinks() -> None:
    assert mc_flips(None) == mc_flips(0.05) == 20_000
    assert mc_flips(1e-4) == 200_000
    assert mc_flips(1e-9) == MC_MAX_FLIPS
    with pytest.raises(ValueError):
        mc_flips(0.0)


def scores(d: np.ndarray) -> list[UnitScore]:
    return [UnitScore(i, 0.5, 0.5 + float(v)) for i, v in enumerate(d)]


@pytest.mark.parametrize(
    "kind,test,n,label",
    [
        ("continuous", "sign_flip", 10, "exact"),
        ("continuous", "sign_flip", 40, "monte_carlo"),
        ("continuous", "guarded_sign_flip", 40, "monte_carlo"),
        ("continuous", "betting", 40, "bound"),
    ],
)
def test_every_p_value_carries_its_label(kind: str, test: str, n: int, label: str) -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.0, 0.05, n) * 0 + rng.uniform(-0.2, 0.2, n)
    settings = GateSettings((n,), 0.05, 0.0, kind, "max", 1, test, (0.0, 1.0))  # type: ignore[arg-type]
    decision = decide(scores(d), settings)
    assert decision.p_value_kind == label and decision.to_json()["p_value_kind"] == label
    assert decision.interval_kind == "descriptive_student_t" and decision.test == test


@pytest.mark.parametrize("test", ["guarded_sign_flip", "betting"])
@pytest.mark.parametrize("margin", [0.0, 0.05])
def test_bound_clears_the_margin_if_and_only_if_accepted(test: str, margin: float) -> None:
    rng = np.random.default_rng(11)
    verdicts = set()
    for i in range(40):
        gain = (i % 8) * 0.03
        d = np.clip(rng.normal(gain, 0.15, 40), -0.45, 0.45)
        settings = GateSettings(LOOKS, 0.05, margin, "continuous", "max", i, test, (0.0, 1.0))  # type: ignore[arg-type]
        decision = decide(scores(d), settings)
        verdicts.add(decision.verdict)
        if decision.bound is not None:
            assert (decision.bound >= margin) == (decision.verdict == "accepted"), decision
        else:
            assert decision.verdict != "accepted"
    assert {"accepted", "rejected"} <= verdicts


def test_binary_bound_agrees_with_the_verdict() -> None:
    for passes in range(0, 21, 2):
        champ = [0.0] * 20
        cand = [1.0] * passes + [0.0] * (20 - passes)
        settings = GateSettings((20,), 0.05, 0.1, "binary", "max", 0)
        decision = decide([UnitScore(i, a, b) for i, (a, b) in enumerate(zip(champ, cand, strict=True))], settings)
        accepted = decision.verdict == "accepted"
        assert (decision.bound is not None and decision.bound >= 0.1) == accepted
        assert decision.p_value_kind == "bound" and decision.interval_kind == "descriptive_newcombe"


def test_betting_needs_a_range_or_a_floor_and_rules_1_refuses_scores_outside_the_range() -> None:
    with pytest.raises(RatchetError) as err:
        GateSettings(LOOKS, 0.05, 0.0, "continuous", "max", 0, "betting")
    assert err.value.code == "gate.bad_settings"
    assert "max_unit_loss" in err.value.message and "metric_range" in err.value.message
    with pytest.raises(RatchetError) as err:
        GateSettings(LOOKS, 0.05, 0.0, "continuous", "max", 0, "betting", rules=1, max_unit_loss=1.0)
    assert err.value.code == "gate.bad_settings" and "metric_range" in err.value.message
    old = GateSettings((10,), 0.05, 0.0, "continuous", "max", 0, "betting", (0.0, 1.0), rules=1)
    with pytest.raises(RatchetError) as err:
        decide([UnitScore(i, 0.5, 1.5) for i in range(10)], old)
    assert err.value.code == "gate.bad_score"
    floor = GateSettings((10,), 0.05, 0.0, "continuous", "max", 0, "betting", (0.0, 1.0))
    assert decide([UnitScore(i, 0.5, 1.5) for i in range(10)], floor).verdict == "accepted"  # d = 1 >= floor -1


def test_betting_p_value_is_non_decreasing_in_the_margin() -> None:
    rng = np.random.default_rng(5)
    d = rng.uniform(-0.3, 0.6, (50, 40))
    margins = np.linspace(-0.9, 0.9, 37)
    p = np.stack([betting_test(d, m, (-1.0, 1.0), 0.01, 40) for m in margins], axis=1)
    assert np.all(np.diff(p, axis=1) >= -1e-12)


def lopsided(rng: np.random.Generator, shape: tuple[int, int], q: float, shift: float = 0.0) -> np.ndarray:
    """+1 w.p. 1 - q, -(1 - q)/q w.p. q (mean 0), plus N(0, 1) noise truncated to [-4, 4], + shift."""
    big = rng.random(shape) < q
    noise = np.clip(rng.normal(0.0, 1.0, shape), -4.0, 4.0)
    return np.where(big, -(1 - q) / q, 1.0) + noise + shift


@pytest.mark.parametrize("q", [0.05, 0.10])
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_betting_meets_its_level_on_lopsided_nulls_at_every_look(q: float, margin: float) -> None:
    trials, level, half_range = 4_000, 0.05, 12.5  # scores in [0, 25]: d in [-25, 25]
    rng = np.random.default_rng([7, int(q * 100), int(margin * 10)])
    d = lopsided(rng, (trials, LOOKS[-1]), q, shift=margin)
    settings = GateSettings(LOOKS, level, margin, "continuous", "max", 0, "betting", (0.0, 2 * half_range))
    test = look_test(settings)
    thresholds = [m.increment for m in look_boundaries(settings, test)]
    assert thresholds == [level] * 3  # anytime-valid: the full level at every look
    p = np.stack([test.p_value(d[:, :n], margin, level) for n in LOOKS], axis=1)
    est = np.stack([d[:, :n].mean(1) for n in LOOKS], axis=1)
    _, outcome = walk_looks(p, est, margin, thresholds)
    accepted = int(np.sum(outcome == ACCEPTED))
    assert clopper_pearson(accepted, trials)[0] <= level, f"betting accepted {accepted}/{trials} lopsided nulls (q {q})"
    assert float(np.mean(p.min(axis=1) <= level)) <= level + 3 * math.sqrt(level / trials)


def test_sign_flip_is_fooled_by_a_lopsided_null_as_its_guarantee_says() -> None:
    trials, level = 2_000, 0.05
    rng = np.random.default_rng(13)
    d = lopsided(rng, (trials, LOOKS[-1]), 0.05)
    settings = GateSettings(LOOKS, level, 0.0, "continuous", "max", 0, "sign_flip")
    test = look_test(settings)
    thresholds = [m.increment for m in look_boundaries(settings, test)]
    p = np.stack([test.p_value(d[:, :n], 0.0, t) for n, t in zip(LOOKS, thresholds, strict=True)], axis=1)
    est = np.stack([d[:, :n].mean(1) for n in LOOKS], axis=1)
    _, outcome = walk_looks(p, est, 0.0, thresholds)
    assert clopper_pearson(int(np.sum(outcome == ACCEPTED)), trials)[0] > level  # outside its guarantee: well above


def test_guarantee_sentences_and_what_units_cannot_see() -> None:
    assert all(guarantee(t).startswith("P(accept) <=") for t in (*GATE_TESTS, "binary"))
    assert unseen_chance(0.05, 40) == pytest.approx(0.1285, abs=1e-4)
    assert ruled_out_frequency(40) == pytest.approx(1 - 0.05 ** (1 / 40))
    assert 2.9 / 100 < ruled_out_frequency(100) < 3.1 / 100
    assert ruled_out_frequency(0) == 1.0
    with pytest.raises(ValueError):
        unseen_chance(1.5, 3)
