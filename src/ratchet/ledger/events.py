"""The ledger: the run's append-only, hash-chained event log `runs/<run_id>/events.jsonl`.

Each line is one canonical JSON object (RFC 8785) `{"seq", "ts", "kind", "prev", "data"}` followed
by "\\n": `seq` contiguous from 0, `ts` an ISO-8601 UTC string given by the caller, `prev` the
digest of the previous line's bytes (without its newline; `GENESIS_PREV` for seq 0). An event is
written with one os.write on an O_APPEND descriptor and fsynced before `append` returns.

Reading verifies every line and never skips one: a torn last line (`ledger.torn`), a seq gap
(`ledger.seq_gap`), a broken hash chain (`ledger.broken_chain`) or a malformed line
(`ledger.malformed`) raises LedgerLineError naming the 1-based line. Only a torn LAST line can be
repaired, and only on request (`EventLog.open(..., repair=True)`, i.e. an explicit resume): it is
truncated and a `ledger.repaired` event records the line and the bytes dropped.

The writer must hold the run lock (`ratchet.ledger.lock`); this module does not take it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from ratchet.canonical import CanonicalError, canonical_bytes, digest_bytes
from ratchet.errors import LedgerError
from ratchet.ledger.files import FILE_MODE, fsync_dir, read_nofollow

EventKind = Literal[
    "run.started",
    "run.resumed",
    "attempt.started",
    "agent.launched",
    "attempt.submitted",
    "attempt.gave_up",
    "trial.planned",
    "job.started",
    "job.finished",
    "trial.judged",
    "champion.promoted",
    "run.stopped",
    "ledger.repaired",
]

EVENT_KINDS: Mapping[str, str] = {
    "run.started": "a campaign began: run id, contract digest, baseline commit/tree, salt, limits",
    "run.resumed": "a kernel (data.pid) resumed an interrupted run; a new wall-clock session starts",
    "attempt.started": "attempt data.attempt (1-based, unique in the run) began",
    "agent.launched": "the agent launched its own experiments (data.jobs) during an attempt",
    "attempt.submitted": "the agent submitted a candidate tree with a report (data.report_blob)",
    "attempt.gave_up": "the agent gave up the attempt without a candidate (data.reason)",
    "trial.planned": "a trial's plan was compiled (stage trial | confirm | holdout, data.plan_digest)",
    "job.started": "a job (variant x unit) started on an executor as process data.pid",
    "job.finished": "a job ended: state, metric value or reason, seconds, units charged",
    "trial.judged": "the gate's verdict on a trial stage (data.verdict, data.reason, estimate, interval)",
    "champion.promoted": "an accepted candidate became the champion (data.commit, data.tree)",
    "run.stopped": "the campaign stopped (data.stop_reason; data.budget when budget_exhausted)",
    "ledger.repaired": "a torn last line (data.line) was truncated (data.truncated_bytes) on resume",
}
"""Every event kind, with one line saying what it records. Closed: any other kind is malformed."""

assert set(get_args(EventKind)) == set(EVENT_KINDS)

GENESIS_PREV = "sha256:" + "0" * 64
"""The `prev` of the event with seq 0."""

LINE_FIELDS = frozenset({"seq", "ts", "kind", "prev", "data"})
"""The keys of one event line, exactly."""

TORN_HINT = (
    "an explicit `ratchet run --resume RUN_ID` truncates the torn line and records a ledger.repaired event"
)
TAMPER_HINT = "events.jsonl was changed after it was written; restore it from a backup or start a new run"


class LedgerLineError(LedgerError):
    """A LedgerError about one line of events.jsonl; `line` is its 1-based line number."""

    def __init__(self, code: str, message: str, line: int, hint: str | None = None):
        super().__init__(code, message, hint)
        self.line = line


@dataclass(frozen=True)
class Event:
    """One verified ledger event. `digest` is `sha256:<hex>` of its line's bytes (no newline);
    `data` is the parsed JSON object exactly as stored (treat it as read-only)."""

    seq: int
    ts: str
    kind: EventKind
    prev: str
    data: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class Torn:
    """A torn last line: 1-based `line`, byte `offset` where it starts, `length` bytes to drop."""

    line: int
    offset: int
    length: int


def format_ts(now: str | dt.datetime) -> str:
    """`now` as an ISO-8601 UTC string; a str is checked and returned as is.

    Raises ValueError for an unparsable string, a naive datetime or a non-UTC offset.
    """
    if isinstance(now, dt.datetime):
        if now.utcoffset() is None:
            raise ValueError("ledger timestamps need a timezone-aware datetime")
        return now.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    parsed = dt.datetime.fromisoformat(now)
    if parsed.utcoffset() != dt.timedelta(0):
        raise ValueError(f"ledger timestamp {now!r} is not UTC")
    return now


def encode_event(seq: int, ts: str, kind: str, prev: str, data: Mapping[str, Any]) -> bytes:
    """The canonical bytes of one event line, without the trailing newline. Raises CanonicalError."""
    return canonical_bytes({"seq": seq, "ts": ts, "kind": kind, "prev": prev, "data": data})


def _malformed(line_no: int, what: str) -> LedgerLineError:
    return LedgerLineError("ledger.malformed", f"events.jsonl line {line_no}: {what}", line_no, TAMPER_HINT)


_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
"""canonical.is_digest as one compiled match (it runs on every line of every read)."""

_FAST_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""The stdlib's C encoder: on the lines `_LineReader.is_canonical` lets it judge, its output is
byte-identical to RFC 8785."""

_MAX_SAFE_DIGITS = 15
"""Integer tokens longer than this may lie beyond 2**53 - 1, which RFC 8785 refuses."""


class _LineReader:
    """Parses ledger lines exactly as json.loads does, and notes number tokens on which Python's
    JSON and RFC 8785 may disagree: an exponent (Python writes 1e-05, RFC 8785 0.00001), an integral
    float (2.0 against 2) and integers of more than _MAX_SAFE_DIGITS characters. One per scan or
    append (the note is per instance, not shared between threads)."""

    def __init__(self) -> None:
        self.risky = False
        self._decoder = json.JSONDecoder(parse_float=self._float, parse_int=self._int)

    def _float(self, text: str) -> float:
        if "e" in text or "E" in text or text.endswith(".0"):
            self.risky = True
        return float(text)

    def _int(self, text: str) -> int:
        if len(text) > _MAX_SAFE_DIGITS:
            self.risky = True
        return int(text)

    def loads(self, line: bytes) -> Any:
        """json.loads(line), step for step (encoding detection, surrogatepass). Raises ValueError."""
        self.risky = False
        return self._decoder.decode(line.decode(json.detect_encoding(line), "surrogatepass"))

    def is_canonical(self, obj: Any, line: bytes) -> bool:
        """True when `line` (just read by `loads` into `obj`) is the RFC 8785 form of `obj`.

        Fast path: on an ASCII line (keys then sort the same by code point as by UTF-16 unit, and
        both encoders escape the same characters in strings) without a risky number, RFC 8785 and
        the stdlib's C encoder write the same bytes, so the line is canonical when the latter
        writes it back byte for byte. Every other line, and any line the fast path does not
        confirm, is decided by the exact check canonical_bytes(obj) == line (which raises
        CanonicalError/ValueError for values without a canonical form).
        """
        if not self.risky and line.isascii():
            try:
                if _FAST_ENCODER.encode(obj).encode("utf-8") == line:
                    return True
            except (ValueError, UnicodeEncodeError):
                pass  # NaN/Infinity or a lone surrogate: the exact check names the defect
        return canonical_bytes(obj) == line


def _check_fields(obj: Any, line_no: int) -> None:
    if not isinstance(obj, dict):
        raise _malformed(line_no, "not a JSON object")
    if obj.keys() != LINE_FIELDS:
        raise _malformed(line_no, f"keys {sorted(obj)} are not exactly {sorted(LINE_FIELDS)}")
    if not isinstance(obj["seq"], int) or isinstance(obj["seq"], bool) or obj["seq"] < 0:
        raise _malformed(line_no, f"seq {obj['seq']!r} is not a non-negative integer")
    if obj["kind"] not in EVENT_KINDS:
        raise _malformed(line_no, f"unknown event kind {obj['kind']!r}")
    if not isinstance(obj["prev"], str) or _DIGEST_RE.fullmatch(obj["prev"]) is None:
        raise _malformed(line_no, f"prev {obj['prev']!r} is not a sha256 digest")
    if not isinstance(obj["data"], dict):
        raise _malformed(line_no, "data is not a JSON object")
    try:
        format_ts(obj["ts"])
    except (TypeError, ValueError):
        raise _malformed(line_no, f"ts {obj['ts']!r} is not an ISO-8601 UTC timestamp") from None


def _parse_line(line: bytes, line_no: int, seq: int, prev: str, reader: _LineReader | None = None,
                obj: Any = None) -> Event:
    """Verify one complete line against the expected `seq` and `prev`. `reader` and `obj`: the
    reader that already parsed the line and what it read (the line is parsed here when no reader
    is given). Raises ValueError when the line is not JSON, LedgerLineError for any other defect."""
    if reader is None:
        reader = _LineReader()
        obj = reader.loads(line)
    _check_fields(obj, line_no)
    try:
        canonical = reader.is_canonical(obj, line)
    except (CanonicalError, ValueError) as err:  # rfc8785 refuses integers beyond 2**53
        raise _malformed(line_no, f"no canonical JSON form: {err}") from None
    if not canonical:
        raise _malformed(line_no, "not in canonical JSON form")
    if obj["seq"] != seq:
        raise LedgerLineError(
            "ledger.seq_gap",
            f"events.jsonl line {line_no} has seq {obj['seq']}, expected {seq}: "
            "events are missing or reordered",
            line_no,
            TAMPER_HINT,
        )
    if obj["prev"] != prev:
        changed = max(line_no - 1, 1)
        raise LedgerLineError(
            "ledger.broken_chain",
            f"events.jsonl line {changed} no longer matches the digest recorded in line {line_no} (prev): "
            f"line {changed} was changed after it was written",
            changed,
            TAMPER_HINT,
        )
    return Event(obj["seq"], obj["ts"], obj["kind"], obj["prev"], obj["data"], digest_bytes(line))


def scan_events(raw: bytes) -> tuple[list[Event], Torn | None]:
    """Verify the bytes of an events.jsonl; return the events of its complete lines and the torn
    last line, if any (no trailing newline, or a last line that is not JSON).

    Raises LedgerLineError (ledger.malformed / ledger.seq_gap / ledger.broken_chain) for any other
    defect; nothing is skipped.
    """
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    events: list[Event] = []
    prev, offset = GENESIS_PREV, 0
    reader = _LineReader()
    for index, line in enumerate(complete):
        line_no = index + 1
        try:
            obj = reader.loads(line)
        except ValueError:
            if line_no == len(complete) and not tail:
                return events, Torn(line_no, offset, len(line) + 1)
            raise _malformed(line_no, "not valid JSON") from None
        event = _parse_line(line, line_no, len(events), prev, reader, obj)
        events.append(event)
        prev, offset = event.digest, offset + len(line) + 1
    torn = Torn(len(complete) + 1, offset, len(tail)) if tail else None
    return events, torn


def torn_error(torn: Torn) -> LedgerLineError:
    """The `ledger.torn` error for a torn last line."""
    return LedgerLineError(
        "ledger.torn",
        f"events.jsonl line {torn.line} is torn ({torn.length} bytes of an unfinished write): "
        "the process writing it was killed mid-write",
        torn.line,
        TORN_HINT,
    )


_PREV_AT = b'","prev":"sha256:'
"""What precedes a line's top-level prev digest: canonical JSON puts the keys in the order data,
kind, prev, seq, ts, so the last occurrence in a line is the top-level one."""


@dataclass(frozen=True)
class Chain:
    """The hash chain of the first lines of an events.jsonl, checked over its raw bytes by
    `check_chain`.

    raw: all the bytes read; lines: the complete lines checked (no newline), in order;
    last_digest: the digest of the last line checked (GENESIS_PREV when none); later_lines: complete
    lines after them (not checked); torn: bytes after the last newline (a line being written or
    left torn by a killed writer).
    """

    raw: bytes
    lines: list[bytes]
    last_digest: str
    later_lines: int
    torn: bool


def check_chain(raw: bytes, count: int | None = None) -> Chain | None:
    """Check the hash chain of the first `count` lines (all complete lines when None) of the bytes
    of an events.jsonl, without parsing their JSON.

    For every line k checked: its `prev` is the sha256 digest of line k-1 (GENESIS_PREV for the
    first) and its `seq` is k. The fields are found where the writer puts them (canonical JSON
    sorts the top-level keys: data, kind, prev, seq, ts), and every line is hashed: a full chain
    check, not a sample. It does not check each line's own form (canonical JSON, known kind,
    timestamp): that was done when the line was appended and whenever `read_events` reads it. A
    reader that trusts this check must therefore also match the last digest against one a verified
    reader recorded (the index's, ledger/index.py), which by the chain vouches for every line before.

    Returns None when the bytes hold fewer than `count` complete lines or any line checked is not
    chained as the writer chains it: `scan_events` then gives the precise verdict.
    """
    lines = raw.split(b"\n")
    tail = lines.pop()
    count = len(lines) if count is None else count
    if not 0 <= count <= len(lines):
        return None
    later = len(lines) - count
    del lines[count:]
    sha256 = hashlib.sha256
    digests = [sha256(line).hexdigest().encode() for line in lines]  # the bulk of the cost
    ats = [line.rfind(_PREV_AT) for line in lines]
    if -1 in ats:
        return None
    prevs = [GENESIS_PREV[7:].encode(), *digests[:-1]]
    for seq, (line, at, prev) in enumerate(zip(lines, ats, prevs, strict=True)):
        if not line.startswith(b'%s","seq":%d,"ts":"' % (prev, seq), at + 17):
            return None
    last = "sha256:" + digests[-1].decode() if digests else GENESIS_PREV
    return Chain(raw, lines, last, later, bool(tail))


def read_log_bytes(path: str | os.PathLike[str]) -> bytes:
    """The raw bytes of the events.jsonl at `path` (never follows a symlink). Raises LedgerError
    `ledger.missing` or `ledger.unreadable`."""
    return _read_raw(path, missing_ok=False)


def _read_raw(path: str | os.PathLike[str], missing_ok: bool) -> bytes:
    """The bytes of the log file; b"" when missing and `missing_ok`. Raises LedgerError
    `ledger.missing`, or `ledger.unreadable` for a symlink, FIFO or unreadable file."""
    try:
        return read_nofollow(path)
    except FileNotFoundError:
        if missing_ok:
            return b""
        raise LedgerError(
            "ledger.missing", f"{os.fspath(path)} does not exist", "is this a run directory?"
        ) from None
    except OSError as err:
        raise LedgerError(
            "ledger.unreadable", f"{os.fspath(path)} cannot be read as a regular file: {err}"
        ) from None


def scan_log(path: str | os.PathLike[str]) -> tuple[list[Event], Torn | None]:
    """Like read_events, but a torn last line is returned instead of raised (for `status`, which
    shows what is complete). Raises every other error of read_events."""
    return scan_events(_read_raw(path, missing_ok=False))


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Read and verify every event of the events.jsonl at `path` (never follows a symlink).

    Raises LedgerError `ledger.missing` / `ledger.unreadable`, or LedgerLineError `ledger.torn` /
    `ledger.malformed` / `ledger.seq_gap` / `ledger.broken_chain`.
    """
    events, torn = scan_events(_read_raw(path, missing_ok=False))
    if torn is not None:
        raise torn_error(torn)
    return events


class EventLog:
    """The writer of one events.jsonl. Create with `EventLog.open`; the caller holds the run lock.

    `events` are the verified events so far (oldest first); `append` adds one durably.
    """

    def __init__(self, path: Path, events: list[Event], size: int):
        self.path = path
        self._events = events
        self._size = size
        self._fd: int | None = None
        self._failed: str | None = None

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, repair: bool = False, now: str | dt.datetime | None = None
    ) -> EventLog:
        """Read and verify the log at `path` (missing: an empty log, created on first append).

        A torn last line raises `ledger.torn` unless `repair` is true; then it is truncated and a
        `ledger.repaired` {"line", "truncated_bytes"} event is appended with timestamp `now`
        (required for a repair: ValueError without it). Other defects always raise (see
        read_events for the codes).
        """
        path = Path(path)
        raw = _read_raw(path, missing_ok=True)
        events, torn = scan_events(raw)
        if torn is None:
            return cls(path, events, len(raw))
        if not repair:
            raise torn_error(torn)
        if now is None:
            raise ValueError("repairing a torn ledger needs `now` for the ledger.repaired event")
        _truncate(path, torn.offset)
        log = cls(path, events, torn.offset)
        log.append("ledger.repaired", {"line": torn.line, "truncated_bytes": torn.length}, now)
        return log

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event of the log, oldest first."""
        return tuple(self._events)

    @property
    def last_seq(self) -> int:
        """The seq of the last event; -1 when the log is empty."""
        return len(self._events) - 1

    @property
    def last_digest(self) -> str:
        """The digest of the last event's line; GENESIS_PREV when the log is empty."""
        return self._events[-1].digest if self._events else GENESIS_PREV

    def append(self, kind: EventKind, data: Mapping[str, Any], now: str | dt.datetime) -> Event:
        """Append one event durably (one os.write of the whole line, then fsync) and return it.

        `now`: ISO-8601 UTC string (or aware datetime). Raises ValueError for an unknown kind or a
        bad timestamp, CanonicalError for data without a JSON form or that would not read back as
        written (an integral float >= 2**53), nothing being written then; LedgerError
        `ledger.concurrent_write` when the file changed under this writer and `ledger.write_failed`
        when the disk refused the write (the log then refuses further appends).
        """
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; known: {sorted(EVENT_KINDS)}")
        if self._failed:
            raise LedgerError(
                "ledger.write_failed", f"an earlier append to {self.path} failed: {self._failed}"
            )
        line = encode_event(len(self._events), format_ts(now), kind, self.last_digest, data)
        try:
            event = _parse_line(line, len(self._events) + 1, len(self._events), self.last_digest)
        except LedgerLineError as err:  # e.g. a float 2.0**53 is written as an integer JSON cannot hold
            raise CanonicalError(
                "canonical.no_round_trip", f"{kind} data would not read back as written: {err.message}"
            ) from None
        fd = self._writer()
        if os.fstat(fd).st_size != self._size:
            raise LedgerError(
                "ledger.concurrent_write",
                f"{self.path} changed under this writer (another process wrote to it)",
                "only the process holding the run lock may write the ledger",
            )
        self._write_line(fd, line + b"\n")
        self._events.append(event)
        self._size += len(line) + 1
        return event

    def _write_line(self, fd: int, payload: bytes) -> None:
        try:
            written = os.write(fd, payload)
            if written != len(payload):
                raise OSError(f"short write: {written} of {len(payload)} bytes")
            os.fsync(fd)
        except OSError as err:
            self._failed = str(err)
            raise LedgerError(
                "ledger.write_failed",
                f"could not append to {self.path}: {err}",
                "free disk space, then resume the run explicitly (a torn line is repaired)",
            ) from err

    def _writer(self) -> int:
        if self._fd is None:
            created = not os.path.lexists(self.path)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            self._fd = os.open(self.path, flags, FILE_MODE)
            if created:
                fsync_dir(self.path.parent)
        return self._fd

    def close(self) -> None:
        """Close the write descriptor (appending again reopens it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate(path: Path, size: int) -> None:
    """Cut the file at `path` to `size` bytes and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
