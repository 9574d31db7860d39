"""index.sqlite: derived from the events, incremental or rebuilt, the same either way (real SQLite)."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest
from payload_data import started

from ratchet.core.errors import LedgerError
from ratchet.core.state import fold
from ratchet.ledger.events import EventLog, read_events
from ratchet.ledger.index import Index

NOW = "2026-11-30T06:36:50Z"


@pytest.fixture
def events(written_log):
    return read_events(written_log.events)


def test_rebuilt_index_equals_the_incrementally_built_one(run_dir, campaign, tmp_path):
    with EventLog.open(run_dir.events) as log, Index(run_dir.index) as live:
        for kind, data, when in campaign:
            assert live.apply(log.append(kind, data, when))
        incremental = live.dump()
    with Index(tmp_path / "rebuilt.sqlite") as rebuilt:
        rebuilt.rebuild(read_events(run_dir.events))
        assert rebuilt.dump() == incremental
    with Index(run_dir.index) as reopened:
        assert reopened.dump() == incremental
        reopened.rebuild(read_events(run_dir.events))
        assert reopened.dump() == incremental
    assert len(incremental["events"]) == len(campaign)


def test_applying_a_stored_event_again_changes_nothing(run_dir, events):
    with Index(run_dir.index) as index:
        for event in events:
            index.apply(event)
        before = index.dump()
        assert not any(index.apply(event) for event in events)
        assert index.dump() == before


def test_an_event_that_does_not_follow_is_refused(run_dir, events):
    with Index(run_dir.index) as index:
        index.apply(events[0])
        with pytest.raises(LedgerError) as gap:
            index.apply(events[2])
        assert gap.value.code == "ledger.index_stale"
        forged = dataclasses.replace(events[0], digest="sha256:" + "f" * 64)
        with pytest.raises(LedgerError) as other:
            index.apply(forged)
        assert other.value.code == "ledger.index_stale"
        assert index.last_seq() == 0


def test_sync_adds_new_events_and_rebuilds_a_disagreeing_index(run_dir, events, tmp_path):
    with Index(run_dir.index) as index:
        assert index.sync(events[:5]) == 5
        assert index.sync(events) == len(events) - 5
        assert index.sync(events) == 0
        expected = index.dump()
    other_log = tmp_path / "other.jsonl"
    with EventLog.open(other_log) as log:
        log.append("run.started", started("other"), NOW)
    with Index(run_dir.index) as index:
        assert index.sync(read_events(other_log)) == 1
        assert index.query_meta()["run_id"] == "other"
        index.sync(events)
        assert index.dump() == expected


def test_queries_agree_with_the_reducer(run_dir, events):
    state = fold(events)
    with Index(run_dir.index) as index:
        index.rebuild(events)
        attempts = index.query_attempts()
        assert [row["attempt"] for row in attempts] == [a.attempt for a in state.attempts]
        for row, attempt in zip(attempts, state.attempts, strict=True):
            assert (row["verdict"], row["reason"], row["estimate"], row["p_value"], row["units"]) == (
                attempt.verdict,
                attempt.reason,
                attempt.estimate,
                attempt.p_value,
                attempt.units,
            )
            interval = None if row["interval_lo"] is None else (row["interval_lo"], row["interval_hi"])
            assert interval == attempt.interval and row["gave_up"] == attempt.gave_up
        assert attempts[0]["params"] == {"C": 10.0} and attempts[0]["confirm_verdict"] == "accepted"
        jobs = {row["job_id"]: row for row in index.query_jobs()}
        assert set(jobs) == set(state.finished_jobs) | set(state.running_jobs)
        assert jobs["j3"]["cached"] is True and jobs["j2"]["value"] == 0.7 and jobs["j6"]["pid"] == 4242
        assert [r["job_id"] for r in index.query_jobs(attempt=2)] == ["j5", "j6"]
        assert index.query_jobs(state="running") == []
        meta = index.query_meta()
        assert (meta["state"], meta["stop_reason"], meta["run_id"]) == (
            state.state,
            state.stop_reason,
            state.run_id,
        )
        assert [j["stage"] for j in index.query_judgments()] == ["confirm", "trial", "trial", "holdout"]
        assert index.query_judgments("holdout")[0]["estimate"] == state.holdout.estimate
        assert [p["commit_hash"] for p in index.query_promotions()] == [state.champion.commit]
        assert [e["seq"] for e in index.query_events(kind="run.stopped")] == [
            e.seq for e in events if e.kind == "run.stopped"
        ]
        assert index.query_events(since_seq=len(events) - 2)[0]["data"] == events[-1].data


def test_running_jobs_show_as_running_until_finished(run_dir, events):
    stop = next(i for i, e in enumerate(events) if e.kind == "run.stopped")
    with Index(run_dir.index) as index:
        index.sync(events[: stop + 1])
        assert [(r["job_id"], r["state"]) for r in index.query_jobs(state="running")] == [("j6", "running")]
        assert index.query_meta()["state"] == "interrupted"


def test_the_index_uses_wal_mode(run_dir, events):
    with Index(run_dir.index) as index:
        index.rebuild(events)
    conn = sqlite3.connect(run_dir.index)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
