"""The harmful-tail guard (stats/tail_guard.py): rules 2's false alarms under Gaussian differences stay
within the stated rate at every n checked, it still fires on a lopsided null's large loss, it spares a
look whose units all gained, and rules 1 keeps the fixed 6 robust SDs that older runs were judged by.

Tolerance: a simulated rate is checked by its two-sided 95% Clopper-Pearson interval (Clopper &
Pearson 1934) over LOOKS looks: rules 2 is designed to half the stated rate, so its upper bound
clears the rate unless the table is wrong; rules 1 (about 1% at 10 units) must clear it from below.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import clopper_pearson

from ratchet.core.gate import GateSettings, UnitScore, decide, look_test
from ratchet.core.gate_design import gate_design
from ratchet.core.stats.tail_guard import (
    TAIL_GUARD_FALSE_ALARM,
    TAIL_GUARD_SCALES,
    TAIL_THRESHOLDS,
    harmful_tail,
    tail_threshold,
)

LOOKS = 100_000
SEED = 20261202
CI_FLAKE = [0.155, 0.151, 0.150, 0.132, 0.150, 0.147, 0.163, 0.150]
"""A real 8-unit look whose units all gained; rules 1 rejected it as harmful_tail (6.07 robust SDs)."""



def lopsided(rng: np.random.Generator, q: float, shape: tuple[int, int]) -> np.ndarray:
    """+1 w.p. 1 - q, -(1 - q)/q w.p. q (mean 0), plus N(0, 1) noise truncated to +-4."""
    return np.where(rng.random(shape) < q, -(1 - q) / q, 1.0) + np.clip(rng.standard_normal(shape), -4, 4)


def unit_scores(d: list[float]) -> list[UnitScore]:
    return [UnitScore(i, 1.0, 1.0 + x) for i, x in enumerate(d)]


@pytest.mark.parametrize("n", [3, 5, 10, 20, 40, 80])
def test_gaussian_false_alarms_per_look_stay_within_the_stated_rate(n: int) -> None:
    x = np.random.default_rng([SEED, n]).normal(0.3, 2.0, (LOOKS, n))  # any mean and SD: scale-free
    fired = int(np.count_nonzero(harmful_tail(x, rules=2)))
    low, high = clopper_pearson(fired, LOOKS)
    assert high <= TAIL_GUARD_FALSE_ALARM, (
        f"n={n}: {fired} of {LOOKS:,} Gaussian looks fired, 95% CP [{low:.2e}, {high:.2e}] "
        f"exceeds the stated {TAIL_GUARD_FALSE_ALARM:g}"
    )


def test_rules_1_fires_on_about_one_in_a_hundred_gaussian_looks_of_10_units() -> None:
    x = np.random.default_rng(SEED).standard_normal((LOOKS, 10))
    fired = int(np.count_nonzero(harmful_tail(x, rules=1)))
    low, high = clopper_pearson(fired, LOOKS)
    assert low > TAIL_GUARD_FALSE_ALARM and 0.008 < fired / LOOKS < 0.012, (
        f"rules 1 at 10 units: {fired} of {LOOKS:,} fired, 95% CP [{low:.2e}, {high:.2e}]; "
        "the fixed 6 robust SDs fire on about 1% of such looks"
    )


@pytest.mark.parametrize(("q", "n", "least"), [(0.05, 10, 0.85), (0.05, 40, 0.99), (0.10, 20, 0.75), (0.10, 40, 0.95)])
def test_a_lopsided_nulls_large_loss_still_fires(q: float, n: int, least: float) -> None:
    d = lopsided(np.random.default_rng([SEED, n]), q, (4000, n))
    shows = (d < -(1 - q) / q + 4.5).any(axis=1)  # at least one large loss among the units
    fired = np.asarray(harmful_tail(d, rules=2))
    rate = fired[shows].mean()
    assert rate >= least, (
        f"q={q}, n={n}: the guard fired on {rate:.1%} of {shows.sum()} looks showing a loss; at least {least:.0%} "
        "expected (measured 96%, 100%, 82% and 98% with this seed; rules 1: 100%, 100%, 94%, 99%)"
    )
    one_loss = np.r_[np.full(n - 1, 1.0), -(1 - q) / q]
    assert harmful_tail(one_loss + np.random.default_rng(1).normal(0, 0.5, n), rules=2)


def test_a_look_whose_units_all_gained_does_not_fire_under_rules_2_and_did_under_rules_1() -> None:
    assert harmful_tail(np.array(CI_FLAKE), rules=1) and not harmful_tail(np.array(CI_FLAKE), rules=2)
    assert not harmful_tail(np.r_[np.full(19, 0.01), 0.009], rules=2)  # ties: the worst unit still won
    old = decide(unit_scores(CI_FLAKE), GateSettings((8,), 0.05, 0.0, "continuous", "max", 1, rules=1))
    new = decide(unit_scores(CI_FLAKE), GateSettings((8,), 0.05, 0.0, "continuous", "max", 1, rules=2))
    assert (old.verdict, old.reason) == ("rejected", "harmful_tail")
    assert (new.verdict, new.reason) == ("accepted", "significant_gain")


def test_rules_1_is_the_fixed_six_robust_sds_at_every_n() -> None:
    for n in (3, 10, 40, 200):
        d = np.r_[np.linspace(-1.0, 1.0, n - 1), 0.0]
        s = 1.4826 * np.median(np.abs(d - np.median(d)))
        just_below = d.copy()
        just_below[0] = np.median(d) - TAIL_GUARD_SCALES * s * 1.01
        just_above = d.copy()
        just_above[0] = np.median(d) - TAIL_GUARD_SCALES * s * 0.99
        assert harmful_tail(just_below, rules=1) and not harmful_tail(just_above, rules=1), n
        assert look_test(GateSettings((n,), 0.05, 0.0, "continuous", "max", 1, rules=1)).guard(just_below)


def test_thresholds_fall_with_n_so_an_untabled_n_steps_down_to_a_larger_threshold() -> None:
    ns = sorted(TAIL_THRESHOLDS)
    assert ns[0] == 3 and all(n in TAIL_THRESHOLDS for n in range(3, 41))
    falling = [n for n in ns if n >= 5]  # the step rule's premise: c(n) never rises beyond the table's start
    assert all(TAIL_THRESHOLDS[a] >= TAIL_THRESHOLDS[b] for a, b in zip(falling, falling[1:], strict=False))
    assert tail_threshold(80) == TAIL_THRESHOLDS[max(n for n in ns if n <= 80)] >= tail_threshold(96)
    assert tail_threshold(10**6) == TAIL_THRESHOLDS[ns[-1]]
    with pytest.raises(ValueError):
        tail_threshold(2)
    assert not harmful_tail(np.array([0.0, -100.0]), rules=2)  # fewer than 3 units: nothing to judge


def test_a_run_records_the_guard_it_is_judged_by() -> None:
    design = gate_design("guarded_sign_flip", None)
    guard = design["tail_guard"]
    assert design["tail_guard_scales"] is None and guard["false_alarm_per_look"] == TAIL_GUARD_FALSE_ALARM
    assert dict((n, c) for n, c in guard["thresholds"]) == dict(TAIL_THRESHOLDS)
    assert gate_design("sign_flip", None)["tail_guard"] is None
