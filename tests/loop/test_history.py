"""What the next attempt reads of the run's past (loop/history.py): which attempts spent their level
under each gate rules, and what an agent is shown of an examples run's attempts."""

from __future__ import annotations

from ratchet.core.state import AttemptState, Champion, RunState
from ratchet.loop.history import level_history, past_attempts, promotions_before

ATTEMPTS = (
    AttemptState(1, tree="a" * 40, verdict="rejected", reason="candidate_failed", units=0),  # failed before a unit
    AttemptState(2, tree="b" * 40, verdict="rejected", reason="no_change"),
    AttemptState(3, gave_up="nothing to try"),
    AttemptState(4, tree="c" * 40, verdict="inconclusive", reason="champion_failed", units=10, candidate_mean=0.4),
    AttemptState(5, tree="d" * 40, verdict="accepted", reason="significant_gain", units=10, candidate_mean=0.9,
                 promoted=True),
    AttemptState(6, tree="e" * 40, verdict="rejected", reason="futility", units=10, candidate_mean=0.5),
)
STATE = RunState(attempts=ATTEMPTS, champion=Champion("f" * 40, "d" * 40, attempt=5), promotions=1)


def test_under_rules_2_only_trials_decided_before_any_job_leave_their_level_unspent():
    assert level_history(STATE, 7, rules=2) == ["not_promoted", "unspent", "unspent", "not_promoted", "promoted",
                                                "not_promoted"]


def test_under_rules_1_a_trial_with_no_complete_unit_left_its_level_unspent():
    assert level_history(STATE, 7, rules=1) == ["unspent", "unspent", "unspent", "not_promoted", "promoted",
                                                "not_promoted"]
    assert level_history(STATE, 4, rules=1) == ["unspent", "unspent", "unspent"]


def test_the_val_block_of_a_trial_is_the_number_of_promotions_before_it():
    assert [promotions_before(STATE, n) for n in (1, 5, 6, 9)] == [0, 0, 1, 1]


def test_an_examples_history_shows_no_val_figure_and_masks_every_reason_reached_with_jobs():
    shown = past_attempts(STATE, examples=True)
    assert [(p.attempt, p.verdict, p.reason) for p in shown] == [
        (1, "rejected", "not_promoted"), (2, "rejected", "no_change"), (4, "rejected", "not_promoted"),
        (5, "accepted", "promoted"), (6, "rejected", "not_promoted")]
    assert all(p.candidate_mean is None for p in shown)
    bench = past_attempts(STATE, examples=False)
    assert [(p.verdict, p.reason, p.candidate_mean) for p in bench][3:] == [
        ("accepted", "significant_gain", 0.9), ("rejected", "futility", 0.5)]
