"""The ledger: the run's append-only, hash-chained event log `runs/<run_id>/events.jsonl`.

Each line is one canonical JSON event (the format: `core/events.py`). An event is written with one
os.write on an O_APPEND descriptor and fsynced before `append` returns.

Reading verifies every line and never skips one (verify.py): a torn last line (`ledger.torn`), a
seq gap (`ledger.seq_gap`), a broken hash chain (`ledger.broken_chain`) or a malformed line
(`ledger.malformed`) raises LedgerLineError naming the 1-based line. Only a torn LAST line can be
repaired, and only on request (`EventLog.open(..., repair=True)`, i.e. an explicit resume): it is
truncated and a `ledger.repaired` event records the line and the bytes dropped.

The writer must hold the run lock (`ratchet.ledger.lock`); this module does not take it. The names
of `core/events.py` and `verify.py` are importable from here too.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ratchet.core.canonical import CanonicalError
from ratchet.core.errors import LedgerError
from ratchet.core.events import (
    EVENT_KINDS,
    GENESIS_PREV,
    LINE_FIELDS,
    TAMPER_HINT,
    TORN_HINT,
    Event,
    EventKind,
    LedgerLineError,
    Torn,
    encode_event,
    format_ts,
)
from ratchet.core.payloads import LedgerRepaired
from ratchet.ledger.files import FILE_MODE, fsync_dir, read_nofollow
from ratchet.ledger.verify import Chain, check_chain, scan_events, torn_error, verify_line

__all__ = [
    "EVENT_KINDS",
    "GENESIS_PREV",
    "LINE_FIELDS",
    "TAMPER_HINT",
    "TORN_HINT",
    "Chain",
    "Event",
    "EventKind",
    "EventLog",
    "LedgerLineError",
    "Torn",
    "check_chain",
    "encode_event",
    "format_ts",
    "read_events",
    "read_log_bytes",
    "scan_events",
    "scan_log",
    "torn_error",
    "verify_line",
]


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
        log.append(LedgerRepaired.kind, LedgerRepaired(line=torn.line, truncated_bytes=torn.length).to_data(), now)
        return log

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event of the log, oldest first."""
        return tuple(self._events)

    def events_after(self, seq: int) -> tuple[Event, ...]:
        """The events after `seq` (all of them for -1), oldest first: a copy of only those, for a
        reader that keeps up with a growing log."""
        return tuple(self._events[max(seq + 1, 0):])

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
            event = verify_line(line, len(self._events) + 1, len(self._events), self.last_digest)
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
