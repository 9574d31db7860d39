"""Whether trials can reach their levels: what each look can stop for, and the smallest last look
that lets a trial accept (pure, from core.stats' own floors)."""

from __future__ import annotations

from ratchet.core.reach import look_stops, units_to_reach
from ratchet.core.stats.paired import min_p_value


def test_the_smallest_last_look_that_reaches_a_level_is_the_first_whose_floor_is_below_it():
    assert units_to_reach(0.001, (4,), "binary") == 10  # 0.5**10 = 0.000977 <= 0.001 < 0.5**9
    assert units_to_reach(0.05, (40,), "binary") == 40  # already reachable: the looks are kept
    margin = 0.2  # the unconditional test's floor ((1 + m) / 2) ** n falls more slowly
    n = units_to_reach(0.01, (4,), "binary", margin)
    assert n is not None and min_p_value("binary", n, margin) <= 0.01 < min_p_value("binary", n - 1, margin)
    assert units_to_reach(1e-9, (4,), "binary", cap=20) is None  # 0.5**20 is still above 1e-9


def test_a_look_below_its_floor_is_futility_only_and_a_last_one_cannot_accept():
    assert look_stops(0.0171, (8, 16, 32), "continuous") == ("efficacy", "efficacy", "efficacy")
    assert look_stops(0.00854, (8, 16, 32), "continuous") == ("futility only", "efficacy", "efficacy")
    assert look_stops(0.05, (2, 4), "binary") == ("futility only", "cannot accept")
