"""One line of the ledger `runs/<run_id>/events.jsonl`: its fields, the closed list of event kinds,
the Event it reads as, and the errors a line can raise.

A line is one canonical JSON object (RFC 8785) `{"seq", "ts", "kind", "prev", "data"}` followed by
"\\n": `seq` contiguous from 0, `ts` an ISO-8601 UTC string given by the caller, `prev` the digest
of the previous line's bytes (without its newline; `GENESIS_PREV` for seq 0), `kind` one of
EVENT_KINDS. Pure: no file is touched here (verify.py checks lines, events.py reads and writes the
file).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import msgspec

from ratchet.core.canonical import canonical_bytes
from ratchet.core.errors import LedgerError
from ratchet.core.payloads import MODELS, PAYLOADS, EventKind, Payload, describe, read_payload

EVENT_KINDS: Mapping[str, str] = {model.kind: describe(model) for model in MODELS}
"""Every event kind, with one line saying what it records (from its payload model,
core.payloads). Closed: any other kind is malformed."""

assert set(get_args(EventKind)) == set(EVENT_KINDS)

LEDGER_FORMAT = 3
"""The ledger format this build writes (`run.started` data.ledger_format; a run without it is format
1). A change to what events mean or hold bumps it; RESUMABLE_FORMATS says which this build resumes.

1: no recorded preflight, examples plans of their own format, every give-up ending the campaign.
2: the preflight recorded (stage `preflight`), examples plans as `Plan`s over example ids, give-ups
   ending only their attempt (`stops_campaign`), agent legs and model calls recorded.
3: budget charges (`model.reserved.charge`, `model.called.charged`) keyed by resource name
   (`model_calls`, `input_tokens`, `output_tokens`, `usd`; zeros left out) where format 2 wrote
   `calls` and every key."""

RESUMABLE_FORMATS: frozenset[int] = frozenset({2, 3})
"""Formats this build resumes: format 2 reads the same but for its charges' `calls` key, which
`core.budget.Charge.from_json` reads too."""

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


_convert = msgspec.convert


@dataclass(frozen=True)
class Event:
    """One verified ledger event. `digest` is `sha256:<hex>` of its line's bytes (no newline);
    `data` is the parsed JSON object exactly as stored (treat it as read-only): readers read
    `payload`, its typed model."""

    seq: int
    ts: str
    kind: EventKind
    prev: str
    data: dict[str, Any]
    digest: str
    _payload: Payload | None = field(default=None, compare=False, repr=False)

    @property
    def payload(self) -> Payload:
        """The event's data as its kind's model (core.payloads), built on first use. Raises
        LedgerError `ledger.malformed` when a key holds a wrong type or a required key is missing."""
        payload = self._payload
        if payload is None:
            try:
                payload = _convert(self.data, PAYLOADS[self.kind])  # read_payload, inlined: once per event
            except msgspec.ValidationError as exc:
                raise LedgerError("ledger.malformed", f"event {self.seq} ({self.kind}): its data does not read "
                                  f"as a {self.kind} payload: {exc}", TAMPER_HINT) from None
            object.__setattr__(self, "_payload", payload)  # a cache: the event stays what it was
        return payload


def line_payload(line: Any) -> Payload | None:
    """The payload of one parsed ledger line that was not verified (a fast path reading one line
    or a live tail): None when `line` is not an event object of a known kind or its data does not
    read as that kind's model."""
    if not isinstance(line, dict) or line.get("kind") not in EVENT_KINDS or not isinstance(line.get("data"), dict):
        return None
    try:
        return read_payload(line["kind"], line["data"])
    except msgspec.ValidationError:
        return None


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

