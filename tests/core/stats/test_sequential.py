"""Looks: spending, boundaries (with unreachable increments carried forward), the stopping walk."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ratchet.core.errors import PlanError
from ratchet.core.stats.sequential import (
    ACCEPTED,
    CONTINUE,
    FUTILITY,
    NOT_SIGNIFICANT,
    boundaries,
    expected_units,
    futile,
    spending,
    spent,
    validate_looks,
    walk_looks,
)


def test_pocock_spending_is_the_rule_before_and_sums_to_level() -> None:
    inc = spending(0.05, (10, 20, 40), "pocock")
    assert inc[0] == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.25))
    assert inc[0] + inc[1] == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.5))
    assert math.fsum(inc) <= 0.05 + 1e-18
    assert math.fsum(inc) == pytest.approx(0.05)
    assert all(x > 0 for x in inc)


def test_default_linear_spending_keeps_half_the_level_for_the_last_look() -> None:
    inc = spending(0.05, (10, 20, 40))
    assert inc == pytest.approx((0.0125, 0.0125, 0.025))
    assert inc[-1] > spending(0.05, (10, 20, 40), "pocock")[-1]
    assert math.fsum(inc) <= 0.05 + 1e-18


def test_spending_still_lets_a_clear_gain_stop_at_the_first_look() -> None:
    # A quarter of the units gets a quarter of the level (O'Brien-Fleming would give ~0).
    assert spending(0.05, (10, 20, 40))[0] >= 0.25 * 0.05 - 1e-15


def test_unknown_spending_is_refused() -> None:
    with pytest.raises(ValueError, match="spending"):
        spent(0.05, 0.5, "obf")  # type: ignore[arg-type]


def test_single_look_spends_the_whole_level() -> None:
    assert spending(0.01, (40,)) == (0.01,)
    assert spent(0.01, 1.0) == 0.01


@pytest.mark.parametrize(
    "looks,code",
    [
        ((), "plan.no_units"),
        ((10, 10), "plan.bad_looks"),
        ((20, 10), "plan.bad_looks"),
        ((0, 10), "plan.bad_looks"),
        ((-5,), "plan.bad_looks"),
        ((10.5, 20), "plan.bad_looks"),
        ((True, 2), "plan.bad_looks"),
    ],
)
def test_bad_looks_are_refused_with_codes(looks: tuple, code: str) -> None:
    with pytest.raises(PlanError) as err:
        validate_looks(looks)
    assert err.value.code == code


def test_boundaries_carry_unreachable_increment_forward() -> None:
    level = 0.05 * 0.1 / sum(1 / t for t in range(1, 21))  # trial 10 of 20 under `campaign`
    marks = boundaries(level, (10, 20, 40), "continuous")
    raw = spending(level, (10, 20, 40))
    assert raw[0] < 0.5**10
    assert not marks[0].reachable and marks[0].increment == 0.0
    assert marks[1].increment == pytest.approx(raw[0] + raw[1])
    assert marks[1].reachable and marks[2].reachable
    assert math.fsum(m.increment for m in marks) <= level * (1 + 1e-12)
    assert [m.interim for m in marks] == [True, True, False]


def test_boundaries_keep_reachable_increments() -> None:
    marks = boundaries(0.05, (10, 20, 40), "continuous")
    assert tuple(m.increment for m in marks) == spending(0.05, (10, 20, 40))
    assert marks[0].to_json()["units"] == 10


def test_boundaries_unreachable_everywhere() -> None:
    marks = boundaries(0.001, (3, 5), "binary")
    assert not marks[-1].reachable
    assert marks[-1].increment == pytest.approx(0.001)


def test_level_zero_never_accepts() -> None:
    marks = boundaries(0.0, (10, 20), "continuous")
    assert all(m.increment == 0.0 for m in marks)


def test_futile_is_no_gain_beyond_margin() -> None:
    assert futile(0.0, 0.0) and futile(0.1, 0.1) and not futile(0.11, 0.1)
    assert list(futile(np.array([-1.0, 2.0]), 0.0)) == [True, False]


def test_walk_looks_outcomes() -> None:
    thresholds = [0.01, 0.01, 0.02]
    p = np.array([[0.005, 1, 1], [0.6, 1, 1], [0.2, 0.005, 1], [0.2, 0.3, 0.4], [0.2, 0.3, 0.01]])
    est = np.array([[1, 1, 1], [-1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]], dtype=float)
    look, outcome = walk_looks(p, est, 0.0, thresholds)
    assert list(outcome) == [ACCEPTED, FUTILITY, ACCEPTED, NOT_SIGNIFICANT, ACCEPTED]
    assert list(look) == [0, 0, 1, 2, 2]


def test_walk_looks_continues_before_the_last_look() -> None:
    look, outcome = walk_looks(np.array([[0.2, 0.3]]), np.array([[0.5, 0.5]]), 0.0, [0.01, 0.01, 0.02])
    assert (int(look[0]), int(outcome[0])) == (1, CONTINUE)


def test_walk_looks_ignores_looks_after_a_stop() -> None:
    # Calling with more looks than needed gives the same result as stopping at the first decisive one.
    one = walk_looks(np.array([[0.6]]), np.array([[-0.2]]), 0.0, [0.01, 0.02])
    two = walk_looks(np.array([[0.6, 0.001]]), np.array([[-0.2, 3.0]]), 0.0, [0.01, 0.02])
    assert (int(one[0][0]), int(one[1][0])) == (int(two[0][0]), int(two[1][0])) == (0, FUTILITY)


def test_walk_looks_refuses_bad_shapes() -> None:
    with pytest.raises(ValueError):
        walk_looks(np.ones((2, 3)), np.ones((2, 3)), 0.0, [0.1, 0.1])


def test_expected_units() -> None:
    assert expected_units(np.array([0, 1, 2, 2]), (10, 20, 40)) == 27.5
