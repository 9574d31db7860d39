"""events.jsonl: append, hash chain, verification, torn-line repair (real files, real processes)."""

from __future__ import annotations

import hashlib
import json
import os
import signal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ratchet.core.canonical import CanonicalError, canonical_bytes
from ratchet.core.errors import LedgerError
from ratchet.ledger.events import (
    EVENT_KINDS,
    GENESIS_PREV,
    EventLog,
    LedgerLineError,
    encode_event,
    read_events,
    scan_log,
)

NOW = "2026-11-30T06:36:50Z"


def lines_of(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def test_append_then_reopen_reads_the_same_events(written_log, campaign):
    events = read_events(written_log.events)
    assert [(e.kind, e.ts) for e in events] == [(kind, when) for kind, _, when in campaign]
    assert [e.seq for e in events] == list(range(len(campaign)))
    reopened = EventLog.open(written_log.events)
    assert reopened.events == tuple(events)
    assert reopened.last_seq == len(campaign) - 1
    assert events[0].data["baseline"] == campaign[0][1]["baseline"]


def test_each_line_is_canonical_json_and_prev_is_the_digest_of_the_previous_line(written_log):
    raw_lines = lines_of(written_log.events)
    events = read_events(written_log.events)
    assert written_log.events.read_bytes().endswith(b"\n")
    assert events[0].prev == GENESIS_PREV == "sha256:" + "0" * 64
    for line, event in zip(raw_lines, events, strict=True):
        obj = json.loads(line)
        assert set(obj) == {"seq", "ts", "kind", "prev", "data"}
        assert canonical_bytes(obj) == line
        assert event.digest == "sha256:" + hashlib.sha256(line).hexdigest()
    for before, after in zip(events, events[1:], strict=False):
        assert after.prev == before.digest


def test_append_returns_the_event_as_read_back(run_dir):
    with EventLog.open(run_dir.events) as log:
        event = log.append("attempt.started", {"attempt": 1, "pair": (1, 2)}, NOW)
    assert event.data == {"attempt": 1, "pair": [1, 2]}
    assert read_events(run_dir.events) == [event]


def test_appending_continues_the_chain_after_reopen(written_log):
    before = read_events(written_log.events)
    with EventLog.open(written_log.events) as log:
        added = log.append("run.resumed", {"pid": 1}, NOW)
    assert added.seq == len(before) and added.prev == before[-1].digest
    assert read_events(written_log.events)[-1] == added


def test_event_file_is_created_private_with_mode_0600(run_dir):
    old = os.umask(0)
    try:
        EventLog.open(run_dir.events).append("run.resumed", {"pid": 1}, NOW)
    finally:
        os.umask(old)
    assert run_dir.events.stat().st_mode & 0o777 == 0o600


def test_tampering_one_byte_of_an_earlier_event_breaks_the_chain_at_its_line(written_log):
    raw = bytearray(written_log.events.read_bytes())
    lines = lines_of(written_log.events)
    start = sum(len(line) + 1 for line in lines[:2])  # line 3 begins here
    at = raw.index(b"probe", start)
    raw[at] = ord("P")
    written_log.events.write_bytes(bytes(raw))
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert caught.value.code == "ledger.broken_chain"
    assert caught.value.line == 3
    assert "line 3" in caught.value.message


def test_a_missing_event_is_a_seq_gap_at_its_line(written_log):
    lines = lines_of(written_log.events)
    written_log.events.write_bytes(b"".join(line + b"\n" for i, line in enumerate(lines) if i != 4))
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert (caught.value.code, caught.value.line) == ("ledger.seq_gap", 5)
    assert "line 5" in caught.value.message


def test_two_swapped_events_are_detected(written_log):
    lines = lines_of(written_log.events)
    lines[3], lines[4] = lines[4], lines[3]
    written_log.events.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert (caught.value.code, caught.value.line) == ("ledger.seq_gap", 4)


def _append_raw(path, obj_bytes: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(obj_bytes + b"\n")


def test_unknown_kind_is_malformed_even_with_a_valid_chain(written_log):
    events = read_events(written_log.events)
    _append_raw(written_log.events, encode_event(len(events), NOW, "run.exploded", events[-1].digest, {}))
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert (caught.value.code, caught.value.line) == ("ledger.malformed", len(events) + 1)
    assert "run.exploded" in caught.value.message


def _python_json(obj) -> bytes:
    """Compact sorted JSON as Python writes it (not RFC 8785 for big integers and some floats)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda obj: json.dumps(obj, indent=1).replace("\n", "").encode(),  # not canonical
        lambda obj: canonical_bytes({**obj, "extra": 1}),
        lambda obj: canonical_bytes({**obj, "data": [1]}),
        lambda obj: canonical_bytes({**obj, "ts": "yesterday"}),
        lambda obj: canonical_bytes({**obj, "ts": "2026-11-30T06:36:50+01:00"}),
        lambda obj: canonical_bytes({**obj, "seq": "3"}),
        lambda obj: canonical_bytes({**obj, "prev": "sha256:xyz"}),
        lambda obj: b"[1, 2]",
        lambda obj: _python_json({**obj, "data": {"n": 2**60}}),
        lambda obj: _python_json({**obj, "data": {"n": [-(2**60)]}}),
        lambda obj: _python_json({**obj, "data": {"x": 2.0}}),
        lambda obj: _python_json({**obj, "data": {"x": 1e-05}}),
        lambda obj: _python_json({**obj, "data": {"x": [1.5, [0.0]]}}),
        lambda obj: _python_json({**obj, "data": {"s": 'say "2.5"', "x": 3.0}}),
        lambda obj: _python_json({**obj, "data": {"s": "1e5 2.0 12345678901234567", "x": 12345678901234567}}),
    ],
    ids=[
        "not_canonical",
        "extra_key",
        "data_not_object",
        "bad_ts",
        "non_utc_ts",
        "seq_string",
        "bad_prev",
        "array",
        "integer_beyond_2_53",
        "negative_integer_beyond_2_53_in_a_list",
        "integral_float",
        "exponent_float",
        "integral_float_in_a_nested_list",
        "integral_float_beside_an_escaped_string",
        "long_integer_beside_a_string_of_number_text",
    ],
)
def test_malformed_lines_are_refused_with_their_line_number(written_log, mutate):
    events = read_events(written_log.events)
    obj = json.loads(encode_event(len(events), NOW, "run.resumed", events[-1].digest, {"pid": 1}))
    _append_raw(written_log.events, mutate(obj))
    _append_raw(written_log.events, encode_event(len(events) + 1, NOW, "run.resumed", GENESIS_PREV, {}))
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert (caught.value.code, caught.value.line) == ("ledger.malformed", len(events) + 1)


def test_an_unparsable_middle_line_is_malformed_not_torn(written_log):
    lines = lines_of(written_log.events)
    lines[2] = lines[2][:10]
    written_log.events.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(LedgerLineError) as caught:
        EventLog.open(written_log.events, repair=True, now=NOW)
    assert (caught.value.code, caught.value.line) == ("ledger.malformed", 3)


def test_repair_refuses_any_damage_but_a_torn_last_line(written_log):
    raw = written_log.events.read_bytes().replace(b"probe", b"probE")
    written_log.events.write_bytes(raw + b'{"seq":')
    with pytest.raises(LedgerLineError) as caught:
        EventLog.open(written_log.events, repair=True, now=NOW)
    assert caught.value.code == "ledger.broken_chain"
    assert written_log.events.read_bytes().endswith(b'{"seq":')  # nothing truncated


TORN_CHILD = """
import os, signal, sys
from ratchet.ledger.events import EventLog, encode_event
log = EventLog.open(sys.argv[1])
for i in range(3):
    log.append("job.started", {"job_id": f"j{i}", "attempt": 1, "stage": "trial", "variant": "candidate",
                               "unit": i, "pid": os.getpid()}, "2026-11-30T06:36:50Z")
data = {"job_id": "j0", "value": 0.5}
line = encode_event(3, "2026-11-30T06:36:51Z", "job.finished", log.last_digest, data)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, line[: len(line) // 2])
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_torn_last_line_from_a_killed_writer_is_detected_and_repaired_on_request(run_dir, spawn):
    child = spawn(TORN_CHILD, str(run_dir.events))
    assert child.wait(timeout=60) == -signal.SIGKILL
    torn_size = run_dir.events.stat().st_size
    with pytest.raises(LedgerLineError) as caught:
        EventLog.open(run_dir.events)
    assert (caught.value.code, caught.value.line) == ("ledger.torn", 4)
    assert "line 4" in caught.value.message and "resume" in caught.value.hint
    with pytest.raises(LedgerError) as also:
        read_events(run_dir.events)
    assert also.value.code == "ledger.torn"
    complete, torn = scan_log(run_dir.events)
    assert len(complete) == 3 and torn.line == 4

    log = EventLog.open(run_dir.events, repair=True, now=NOW)
    repaired = log.events[-1]
    assert repaired.kind == "ledger.repaired" and repaired.seq == 3
    intact_size = sum(len(line) + 1 for line in lines_of(run_dir.events)[:3])
    assert repaired.data == {"line": 4, "truncated_bytes": torn_size - intact_size}
    log.append("run.resumed", {"pid": os.getpid()}, NOW)
    log.close()
    events = read_events(run_dir.events)
    assert [e.kind for e in events] == ["job.started"] * 3 + ["ledger.repaired", "run.resumed"]


def test_an_unparsable_last_line_with_a_newline_is_torn(written_log):
    written_log.events.write_bytes(written_log.events.read_bytes() + b"\x00\x00\x00\n")
    with pytest.raises(LedgerLineError) as caught:
        read_events(written_log.events)
    assert caught.value.code == "ledger.torn"
    log = EventLog.open(written_log.events, repair=True, now=NOW)
    assert log.events[-1].data == {"line": caught.value.line, "truncated_bytes": 4}


def test_a_torn_first_line_is_repaired_into_a_log_starting_with_the_repair(run_dir):
    run_dir.events.write_bytes(b'{"data":{"run_id":')
    log = EventLog.open(run_dir.events, repair=True, now=NOW)
    assert [(e.seq, e.kind, e.prev) for e in log.events] == [(0, "ledger.repaired", GENESIS_PREV)]
    assert read_events(run_dir.events) == list(log.events)


def test_repair_needs_a_timestamp(written_log):
    written_log.events.write_bytes(written_log.events.read_bytes() + b"{")
    with pytest.raises(ValueError):
        EventLog.open(written_log.events, repair=True)


def test_a_clean_log_opened_with_repair_is_unchanged(written_log):
    before = written_log.events.read_bytes()
    EventLog.open(written_log.events, repair=True, now=NOW)
    assert written_log.events.read_bytes() == before


def test_unknown_kinds_and_bad_timestamps_are_refused_before_writing(run_dir):
    log = EventLog.open(run_dir.events)
    with pytest.raises(ValueError):
        log.append("run.exploded", {}, NOW)
    with pytest.raises(ValueError):
        log.append("run.resumed", {}, "2026-11-30T06:36:50")  # naive
    assert not run_dir.events.exists()


def test_a_second_writer_on_the_same_file_is_detected(run_dir):
    first, second = EventLog.open(run_dir.events), EventLog.open(run_dir.events)
    first.append("run.resumed", {"pid": 1}, NOW)
    with pytest.raises(LedgerError) as caught:
        second.append("run.resumed", {"pid": 2}, NOW)
    assert caught.value.code == "ledger.concurrent_write"
    assert len(read_events(run_dir.events)) == 1


def test_a_symlinked_event_file_is_refused(run_dir, tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"")
    run_dir.events.symlink_to(target)
    with pytest.raises(LedgerError) as caught:
        read_events(run_dir.events)
    assert caught.value.code == "ledger.unreadable"
    with pytest.raises(LedgerError) as also:
        EventLog.open(run_dir.events)
    assert also.value.code == "ledger.unreadable"
    assert target.read_bytes() == b""


def test_a_missing_log_is_reported(run_dir):
    with pytest.raises(LedgerError) as caught:
        read_events(run_dir.events)
    assert caught.value.code == "ledger.missing"


def test_every_kind_has_a_one_line_description():
    from typing import get_args

    from ratchet.core.events import EventKind

    assert set(EVENT_KINDS) == set(get_args(EventKind)) and len(EVENT_KINDS) >= 13
    assert all(text and "\n" not in text for text in EVENT_KINDS.values())


def test_data_that_would_not_read_back_is_refused_before_writing(run_dir):
    log = EventLog.open(run_dir.events)
    with pytest.raises(CanonicalError) as caught:
        log.append("agent.launched", {"value": 2.0**53}, NOW)  # written as an integer beyond JSON's range
    assert caught.value.code == "canonical.no_round_trip"
    with pytest.raises(CanonicalError):
        log.append("agent.launched", {"value": float("nan")}, NOW)
    assert not run_dir.events.exists()


finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not (f.is_integer() and abs(f) > 2**53 - 1)  # refused by canonical_bytes, tested above
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | finite_floats | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payloads=st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=4), min_size=1, max_size=5)
)
def test_any_json_data_round_trips_through_the_log(tmp_path_factory, payloads):
    path = tmp_path_factory.mktemp("log") / "events.jsonl"
    with EventLog.open(path) as log:
        written = [log.append("agent.launched", data, NOW) for data in payloads]
    read = read_events(path)
    assert read == written
    assert [json.loads(canonical_bytes(e.data)) for e in read] == [
        json.loads(canonical_bytes(p)) for p in payloads
    ]
