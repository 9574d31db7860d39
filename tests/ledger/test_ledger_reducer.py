"""fold(events) -> RunState: the run's state as a pure reduction over its ledger."""

from __future__ import annotations

import dataclasses

import pytest
from payload_data import judged, started

from ratchet.core.errors import LedgerError
from ratchet.core.state import Champion, RunState, TreeRef, fold
from ratchet.ledger.events import EventLog, read_events
from ratchet.ledger.index import Index
from ratchet.ledger.snapshot import Snapshot

NOW = "2026-11-30T06:36:50Z"


@pytest.fixture
def events(written_log):
    return read_events(written_log.events)


def upto(events, kind, nth=1):
    """Events up to and including the nth event of `kind`."""
    seen = 0
    for i, event in enumerate(events):
        seen += event.kind == kind
        if seen == nth:
            return events[: i + 1]
    raise AssertionError(f"no {nth}th {kind}")


def test_an_empty_ledger_folds_to_the_initial_state():
    state = fold([])
    assert state == RunState()
    assert (state.run_id, state.state, state.attempts, state.last_seq) == (None, "running", (), -1)


def test_run_started_sets_the_baseline_as_champion(events):
    state = fold(events[:1])
    assert state.run_id == "20261130-063650-ab12"
    assert state.baseline == TreeRef("c0" * 20, "t0" * 20)
    assert state.champion == Champion("c0" * 20, "t0" * 20, None, None, None)
    assert (state.salt, state.sandbox, state.direction, state.target_kind) == (
        "s41t",
        "none",
        "max",
        "benchmark",
    )
    assert state.limits["max_attempts"] == 5 and state.holdout_reserve == 4
    assert state.state == "running" and state.sessions == 1


def test_a_whole_campaign_folds_to_what_status_shows(events):
    state = fold(events)
    assert (state.state, state.stop_reason, state.stop_budget) == ("stopped", "plateau", None)
    assert state.champion == Champion("c1" * 20, "a1" * 20, 0.2, (0.1, 0.3), 1)
    assert state.promotions == 1
    assert [a.attempt for a in state.attempts] == [1, 2, 3] and state.last_attempt == 3
    first, second, third = state.attempts
    assert (first.verdict, first.reason, first.estimate, first.interval) == (
        "accepted",
        "significant",
        0.25,
        (0.15, 0.35),
    )
    assert (first.p_value, first.units, first.level, first.launches) == (0.004, 2, 0.025, 1)
    assert first.confirm.verdict == "accepted" and first.confirm.estimate == 0.2
    assert first.params == {"C": 10.0} and first.tree == "a1" * 20
    assert (second.verdict, second.reason, second.interval, second.confirm) == (
        "rejected",
        "futility",
        None,
        None,
    )
    assert (third.gave_up, third.verdict) == ("no idea", None)
    assert state.holdout.verdict == "accepted" and state.holdout.estimate == 0.18
    assert state.trials_run == 2
    assert state.consecutive_without_promotion == 1
    assert state.open_trial is None
    assert state.last_seq == len(events) - 1


def test_budget_counts_attempts_units_and_cpu_but_not_cached_jobs(events):
    used = fold(events).budget_used
    assert used.attempts == 3
    assert used.evaluations == 5  # j1 j2 j4 j5 j6; j3 was cached
    assert used.cpu_hours == pytest.approx((4 * 36.0 + 72.0) / 3600)
    assert used.gpu_hours == 0.0


def test_wall_time_is_summed_per_session(events):
    resumed = next(i for i, e in enumerate(events) if e.kind == "run.resumed")
    first_session = 10.0 * (resumed - 1)  # run.started at 0 s to the last event before the resume
    second_session = 10.0 * (len(events) - 1 - resumed)
    assert fold(events).budget_used.wall_s == pytest.approx(first_session + second_session)
    assert fold(events[:resumed]).budget_used.wall_s == pytest.approx(first_session)


def test_jobs_started_and_not_finished_are_running(events):
    interrupted = fold(upto(events, "run.stopped"))
    assert interrupted.state == "interrupted" and interrupted.stop_reason == "interrupted"
    assert dict(interrupted.running_jobs) == {"j6": 4242}
    assert "j6" not in interrupted.finished_jobs and interrupted.finished_jobs["j5"].value == 0.7
    resumed = fold(upto(events, "run.resumed"))
    assert resumed.state == "running" and resumed.stop_reason is None and resumed.sessions == 2
    assert dict(resumed.running_jobs) == {"j6": 4242}
    final = fold(events)
    assert dict(final.running_jobs) == {} and final.finished_jobs["j6"].units_charged == 1


def test_an_open_trial_is_the_last_plan_not_yet_judged(events):
    assert fold(upto(events, "trial.planned", 2)).open_trial.stage == "confirm"
    assert fold(upto(events, "trial.judged", 1)).open_trial is None
    assert fold(upto(events, "trial.planned", 3)).open_trial.attempt == 2


def test_a_promotion_resets_the_count_of_trials_without_one(events):
    assert fold(upto(events, "trial.judged", 2)).consecutive_without_promotion == 1
    assert fold(upto(events, "champion.promoted")).consecutive_without_promotion == 0
    assert fold(upto(events, "trial.judged", 3)).consecutive_without_promotion == 1


def test_a_final_stop_names_the_exhausted_budget(run_dir):
    with EventLog.open(run_dir.events) as log:
        log.append("run.started", started("r"), NOW)
        log.append(
            "run.stopped", {"stop_reason": "budget_exhausted", "budget": "max_attempts", "detail": None}, NOW
        )
    state = fold(read_events(run_dir.events))
    assert (state.state, state.stop_reason, state.stop_budget) == (
        "stopped",
        "budget_exhausted",
        "max_attempts",
    )


def test_extra_keys_are_ignored_and_missing_optional_keys_read_as_their_defaults(run_dir):
    with EventLog.open(run_dir.events) as log:
        log.append("ledger.repaired", {"line": 1, "truncated_bytes": 9}, NOW)
        data = {**started("r"), "new_field": [1]}
        del data["holdout_reserve"], data["ledger_format"]  # keys an older build did not write
        log.append("run.started", data, NOW)
        log.append("attempt.started", {"attempt": 7}, NOW)
        log.append("attempt.gave_up", {"attempt": 7, "reason": "old", "surprise": 1}, NOW)
        log.append("trial.judged", judged(7, "rejected"), NOW)
    events = read_events(run_dir.events)
    state = fold(events)
    assert state.repairs == 1 and state.baseline == TreeRef("c", "t") and state.holdout_reserve == 0
    assert events[1].payload.ledger_format == 1
    assert state.attempt(7).verdict == "rejected" and state.budget_used.attempts == 1
    assert state.attempt(7).stops_campaign  # a give-up recorded before `stops_campaign` ended the campaign


def test_a_missing_required_key_is_a_malformed_event_named_by_its_seq(run_dir):
    with EventLog.open(run_dir.events) as log:
        log.append("run.started", started("r"), NOW)
        log.append("job.finished", {"job_id": "j", "units_charged": None, "cpu_s": None}, NOW)
    with pytest.raises(LedgerError) as caught:
        fold(read_events(run_dir.events))
    assert caught.value.code == "ledger.malformed" and "event 1 (job.finished)" in caught.value.message


def test_the_state_is_frozen(events):
    state = fold(events)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.promotions = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        state.running_jobs["x"] = 1  # type: ignore[index]


def test_fold_is_pure_and_repeatable(events):
    assert fold(events) == fold(list(events)) == fold(iter(events))


def test_the_state_after_each_event_lists_every_attempt_as_it_stands(events, run_dir):
    """Folder.result() re-lists only the attempts touched since it was last asked (what verify asks
    before every plan): after every event of a campaign, and with attempt numbers out of order,
    its attempts are every attempt's fields so far, in number order."""
    from ratchet.core.state import AttemptState, Folder

    with EventLog.open(run_dir.events) as log:
        for number in (3, 1, 2):
            log.append("attempt.started", {"attempt": number}, NOW)
            log.append("trial.judged", judged(1, "rejected"), NOW)
    for ledger in (events, read_events(run_dir.events)):
        folder = Folder()
        for i, event in enumerate(ledger):
            folder.step(event)
            expected = tuple(AttemptState(**folder.attempts[n]) for n in sorted(folder.attempts))
            assert folder.result(jobs=False).attempts == expected, f"after event {i}"


def test_the_fold_keeps_when_each_attempt_planned_its_trial_and_was_decided(events):
    from ratchet.loop.history import level_timeline

    state = fold(events)
    seq = {(e.kind, e.payload.attempt, getattr(e.payload, "stage", None)): e.seq for e in events
           if hasattr(e.payload, "attempt")}
    first, second, third = state.attempts
    # attempt 1: accepted by its trial and its confirmation, decided by its promotion
    assert (first.planned_seq, first.decided_seq) == (seq["trial.planned", 1, "trial"],
                                                      seq["champion.promoted", 1, None])
    assert (second.planned_seq, second.decided_seq) == (seq["trial.planned", 2, "trial"],
                                                        seq["trial.judged", 2, "trial"])
    assert (third.planned_seq, third.decided_seq) == (None, seq["attempt.gave_up", 3, None])
    assert level_timeline(state) == [("planned", 1), ("decided", 1, "promoted"), ("planned", 2),
                                     ("decided", 2, "not_promoted"), ("decided", 3, "unspent")]
    # before attempt 1's promotion is recorded it is still running: no decision step
    before = fold(upto(events, "trial.judged", 2))
    assert before.attempts[0].decided_seq is None and level_timeline(before) == [("planned", 1)]


def test_a_trial_that_measured_a_champion_replaced_since_does_not_set_the_champions_mean(run_dir):
    """Two attempts in flight: attempt 1 is promoted (its candidate's mean becomes the champion's);
    attempt 2's trial, judged later against the baseline it was submitted against, must not put the
    baseline's mean back as the champion's (the margin and the target stop read it)."""
    with EventLog.open(run_dir.events) as log:
        log.append("run.started", started("r"), NOW)
        for attempt in (1, 2):
            log.append("attempt.started", {"attempt": attempt, "worker": attempt}, NOW)
            log.append("attempt.submitted", {"attempt": attempt, "tree": f"t{attempt}", "summary": "s",
                                             "report_blob": "", "params": None, "invalid": None}, NOW)
        log.append("trial.judged", {**judged(1, "accepted"), "champion_mean": 0.5, "candidate_mean": 0.9}, NOW)
        log.append("champion.promoted", {"attempt": 1, "commit": "c1", "tree": "t1", "estimate": 0.4,
                                         "interval": None, "mean": 0.9, "lcb": 0.85, "branch": "b"}, NOW)
        log.append("trial.judged", {**judged(2, "accepted"), "champion_mean": 0.5, "candidate_mean": 0.8}, NOW)
    events = read_events(run_dir.events)
    state = fold(events)
    assert state.champion.commit == "c1"
    assert (state.champion_mean, state.champion_bound) == (0.9, 0.85)
    assert state.attempt(2).champion_mean == 0.5  # the attempt keeps what its own trial measured
    with Index(run_dir.index) as index:  # `ratchet status` reads it from the index: the same mean
        index.rebuild(events)
    with Snapshot.open(run_dir.index) as snapshot:
        shown = snapshot.status_state(run_dir.events.read_bytes())
    assert shown is not None and shown.champion_mean == 0.9
