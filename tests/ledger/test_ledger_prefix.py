"""`ratchet status` trusts the ledger's first bytes through the index's segment hashes (ledger/prefix.py),
and only while they match: real run directories, real SQLite, a real lock holder."""

from __future__ import annotations

import sqlite3

import pytest

from ratchet.commands.runs import run_status
from ratchet.core.errors import LedgerError
from ratchet.ledger import index as index_module
from ratchet.ledger import prefix
from ratchet.ledger.events import EventLog, read_events
from ratchet.ledger.index import INDEX_SCHEMA, Index

HOLDER = """
import sys, time
from ratchet.ledger.lock import acquire_lock
lock = acquire_lock(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


def _status(run_dir):
    return run_status(run_dir.project_root, run_dir.run_id)


@pytest.fixture
def indexed(written_log):
    """The campaign's run directory with its index in step."""
    with Index(written_log.index) as index:
        index.sync(read_events(written_log.events))
    return written_log


def _without_ledger(result):
    return {k: v for k, v in result.items() if k != "ledger"}


def test_status_reads_the_index_when_the_ledger_starts_with_its_lines_and_agrees_with_the_full_read(indexed):
    fast = _status(indexed)
    assert fast["ledger"] == {"events": len(read_events(indexed.events)), "verified": "prefix_digest",
                              "state_from": "index"}
    indexed.index.unlink()
    full = _status(indexed)
    assert full["ledger"]["verified"] == "full"
    assert _without_ledger(fast) == _without_ledger(full)


def test_an_earlier_line_edited_behind_the_index_is_caught(indexed):
    raw = indexed.events.read_bytes()
    assert raw.count(b"bigger C") == 1
    indexed.events.write_bytes(raw.replace(b"bigger C", b"bigger D"))  # same length, same index
    with pytest.raises(LedgerError) as caught:
        _status(indexed)
    assert caught.value.code == "ledger.broken_chain"


def test_lines_after_the_index_are_accepted_only_while_a_writer_holds_the_lock(indexed, spawn):
    count = len(read_events(indexed.events))
    with EventLog.open(indexed.events) as log:
        log.append("run.resumed", {"pid": 1}, "2026-11-30T09:00:00Z")
    assert _status(indexed)["ledger"]["verified"] == "full"  # no writer: the index lags
    holder = spawn(HOLDER, str(indexed.root))
    assert holder.stdout.readline().strip() == "held"
    assert _status(indexed)["ledger"] == {"events": count, "verified": "prefix_digest", "state_from": "index"}
    raw = indexed.events.read_bytes()
    last_prev = raw.rfind(b'"prev":"sha256:') + len(b'"prev":"sha256:')
    indexed.events.write_bytes(raw[:last_prev] + (b"0" if raw[last_prev:last_prev + 1] != b"0" else b"1")
                               + raw[last_prev + 1:])
    with pytest.raises(LedgerError) as caught:  # a later line off the chain: the full read names it
        _status(indexed)
    assert caught.value.code == "ledger.broken_chain"


def test_segments_built_over_several_sessions_equal_a_rebuild(written_log, tmp_path, monkeypatch):
    monkeypatch.setattr(prefix, "SEGMENT_EVENTS", 4)
    monkeypatch.setattr(index_module, "SEGMENT_EVENTS", 4)
    events = read_events(written_log.events)
    for session_end in (3, 6, 13, len(events)):  # a new Index (a kernel resuming) each time
        with Index(written_log.index) as index:
            index.sync(events[:session_end])
    with Index(written_log.index) as index:
        incremental = index.dump()
    with Index(tmp_path / "rebuilt.sqlite") as rebuilt:
        rebuilt.rebuild(events)
        assert rebuilt.dump() == incremental
    assert len(incremental["chain"]) == (len(events) + 3) // 4
    assert _status(written_log)["ledger"]["verified"] == "prefix_digest"


def test_an_index_of_the_older_schema_is_not_trusted_and_sync_rebuilds_it(indexed):
    with sqlite3.connect(indexed.index) as conn:
        conn.execute("DROP TABLE chain")
        conn.execute("PRAGMA user_version = 0")
    conn.close()
    assert _status(indexed)["ledger"]["verified"] == "full"
    with Index(indexed.index) as index:
        assert index.schema_version() == 1
        index.sync(read_events(indexed.events))
        assert index.schema_version() == INDEX_SCHEMA
    assert _status(indexed)["ledger"]["verified"] == "prefix_digest"


@pytest.mark.parametrize(("gpu_s", "verified"), [(None, "prefix_digest"), (0, "prefix_digest"), (7.5, "full")])
def test_gpu_seconds_send_status_to_the_full_read_only_when_they_count(run_dir, campaign, gpu_s, verified):
    with EventLog.open(run_dir.events) as log, Index(run_dir.index) as index:
        for kind, data, when in campaign:
            if kind == "job.finished":
                data = {**data, "gpu_s": gpu_s}
            index.apply(log.append(kind, data, when))
    fast = _status(run_dir)
    assert fast["ledger"]["verified"] == verified
    run_dir.index.unlink()
    assert _without_ledger(fast) == _without_ledger(_status(run_dir))
