"""Multiplicity: the level each trial is granted and the schedule `ratchet check` prints."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

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


def test_attempt_levels_split_the_level_as_a_product() -> None:
    from ratchet.core.stats.multiplicity import attempt_level, attempt_levels

    for t in (1, 7, 20):
        history = ["not_promoted"] * (t - 1)
        levels = attempt_levels(0.05, "campaign", t, 20, history)
        assert levels.trial * levels.confirm == pytest.approx(attempt_level(0.05, "campaign", t, 20, history))
        assert levels.trial > trial_level(0.05, "campaign", t, 20)  # each stage gets more than before
    assert attempt_levels(0.05, "campaign", 1, 20, [], confirm=False) == (trial_level(0.05, "campaign", 1, 20), 1.0)
    assert attempt_levels(0.05, "trial", 5, 20, ["promoted"] * 4).trial == pytest.approx(math.sqrt(0.05))


def test_a_promotion_or_an_unspent_attempt_passes_its_level_on() -> None:
    from ratchet.core.stats.multiplicity import attempt_level

    w = [trial_level(0.05, "campaign", t, 20) for t in range(1, 21)]
    assert attempt_level(0.05, "campaign", 2, 20, ["not_promoted"]) == pytest.approx(w[1])
    assert attempt_level(0.05, "campaign", 2, 20, ["promoted"]) == pytest.approx(w[0] + w[1])
    assert attempt_level(0.05, "campaign", 3, 20, ["unspent", "promoted"]) == pytest.approx(w[0] + w[1] + w[2])
    assert attempt_level(0.05, "campaign", 3, 20, ["promoted", "not_promoted"]) == pytest.approx(w[2])
    # Whatever the history, the levels of the attempts that can spend them sum to at most alpha.
    assert attempt_level(0.05, "campaign", 20, 20, ["promoted"] * 19) == pytest.approx(0.05)


@pytest.mark.parametrize("history", [["promoted"], ["maybe", "promoted"]])
def test_bad_history_is_refused(history: list) -> None:
    from ratchet.core.stats.multiplicity import attempt_level

    with pytest.raises(RatchetError) as err:
        attempt_level(0.05, "campaign", 3, 20, history)
    assert err.value.code == "gate.bad_history"


def test_fallback_keeps_any_false_promotion_within_alpha_under_adaptive_agents() -> None:
    """A simulated adaptive campaign: after a promotion the agent switches to proposing nulls; each
    stage accepts a null with probability exactly its level (the worst a valid test allows). Tolerance:
    3 standard errors of the simulated rate over 4,000 campaigns."""
    import numpy as np

    from ratchet.core.stats.multiplicity import attempt_levels

    rng = np.random.default_rng(2)
    runs, attempts, alpha, false = 4_000, 20, 0.05, 0
    for _ in range(runs):
        history: list = []
        real_left = 3  # the agent holds three real gains and tries them first
        bad = False
        for t in range(1, attempts + 1):
            trial, confirm = attempt_levels(alpha, "campaign", t, attempts, history)
            if real_left:
                real_left -= 1
                history.append("promoted")  # a real gain: always promoted (the worst case for passing on)
            elif rng.random() < trial * confirm:
                bad = True
                break
            else:
                history.append("not_promoted")
        false += bad
    rate = false / runs
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs), rate


@given(st.lists(st.sampled_from(["promoted", "not_promoted", "unspent"]), max_size=60), st.integers(1, 80))
def test_attempt_level_is_the_online_fallback_sum_exactly(history, max_attempts):
    """The level carried forward through every attempt that did not spend it (promoted or unspent)
    and reset by each not_promoted one, summed from attempt 1 as the module docstring defines it:
    the implementation, which starts from the last reset, gives the same float to the bit."""
    from ratchet.core.stats.multiplicity import attempt_level

    attempt = len(history) + 1
    assume(attempt <= max_attempts)
    level = 0.0
    for t in range(1, attempt + 1):
        carried = level if t > 1 and history[t - 2] != "not_promoted" else 0.0
        level = 0.05 * campaign_weight(t, max_attempts) + carried
    assert attempt_level(0.05, "campaign", attempt, max_attempts, history) == level
