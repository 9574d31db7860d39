"""Multiplicity: the level each trial is granted and the schedule `ratchet check` prints."""

from __future__ import annotations

import math

import pytest

from ratchet.core.errors import RatchetError
from ratchet.core.stats.multiplicity import campaign_weight, level_schedule, trial_level


@pytest.mark.parametrize("max_attempts", [1, 2, 20, 200])
def test_campaign_weights_positive_front_loaded_sum_to_one(max_attempts: int) -> None:
    weights = [campaign_weight(t, max_attempts) for t in range(1, max_attempts + 1)]
    assert all(w > 0 for w in weights)
    assert all(a >= b for a, b in zip(weights, weights[1:], strict=False))
    assert math.fsum(weights) == pytest.approx(1.0) and math.fsum(weights) <= 1.0 + 1e-12


def test_campaign_levels_sum_to_alpha() -> None:
    levels = [trial_level(0.05, "campaign", t, 20) for t in range(1, 21)]
    assert math.fsum(levels) == pytest.approx(0.05)
    assert levels[0] == pytest.approx(0.05 / sum(1 / t for t in range(1, 21)))


def test_trials_beyond_max_attempts_get_level_zero() -> None:
    assert trial_level(0.05, "campaign", 21, 20) == 0.0


def test_trial_multiplicity_grants_alpha_every_time() -> None:
    assert trial_level(0.05, "trial", 1, 20) == trial_level(0.05, "trial", 500, 20) == 0.05


@pytest.mark.parametrize(
    "args,code",
    [
        ((0.0, "campaign", 1, 20), "gate.bad_alpha"),
        ((1.0, "campaign", 1, 20), "gate.bad_alpha"),
        ((0.05, "family", 1, 20), "gate.bad_multiplicity"),
        ((0.05, "campaign", 0, 20), "gate.bad_trial_index"),
        ((0.05, "campaign", 1, 0), "gate.bad_max_attempts"),
    ],
)
def test_bad_inputs_have_codes(args: tuple, code: str) -> None:
    with pytest.raises(RatchetError) as err:
        trial_level(*args)
    assert err.value.code == code


def test_schedule_flags_unreachable_first_look() -> None:
    rows = level_schedule(0.05, "campaign", 20, (10, 20, 40), "continuous")
    assert [r.trial for r in rows] == list(range(1, 21))
    assert rows[0].reachable_first and rows[0].reachable
    assert not rows[19].reachable_first and rows[19].reachable
    assert rows[0].min_p_first == 0.5**10
    assert math.fsum(rows[0].increments) == pytest.approx(rows[0].level)
    assert rows[0].to_json()["increments"] == list(rows[0].increments)


def test_schedule_flags_a_trial_that_can_never_promote() -> None:
    rows = level_schedule(0.05, "campaign", 20, (5,), "binary")
    assert not any(r.reachable for r in rows)  # 0.5**5 = 0.031 > every granted level
    assert level_schedule(0.05, "trial", 3, (5,), "binary")[0].reachable
