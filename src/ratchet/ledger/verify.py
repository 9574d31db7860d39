"""Verifying the ledger's lines: every line of an events.jsonl parsed and checked (`scan_events`),
or the hash chain of its lines from some offset on checked over the raw bytes (`check_chain`).

`scan_events` never skips a line: a seq gap (`ledger.seq_gap`), a broken hash chain
(`ledger.broken_chain`) or a malformed line (`ledger.malformed`: not JSON, not canonical, unknown
kind, bad field) raises LedgerLineError naming the 1-based line; a torn LAST line (no newline, or
not JSON) is returned for the caller to raise (`torn_error`) or repair. Pure: takes bytes, touches
no file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from ratchet.core.canonical import CanonicalError, canonical_bytes, digest_bytes
from ratchet.core.events import (
    EVENT_KINDS,
    GENESIS_PREV,
    LINE_FIELDS,
    TAMPER_HINT,
    TORN_HINT,
    Event,
    LedgerLineError,
    Torn,
    format_ts,
)


def _malformed(line_no: int, what: str) -> LedgerLineError:
    return LedgerLineError("ledger.malformed", f"events.jsonl line {line_no}: {what}", line_no, TAMPER_HINT)


_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
"""canonical.is_digest as one compiled match (it runs on every line of every read)."""

_FAST_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""The stdlib's C encoder: on the lines `_LineReader.is_canonical` lets it judge, its output is
byte-identical to RFC 8785."""

_MAX_SAFE_DIGITS = 15
"""Integer tokens longer than this may lie beyond 2**53 - 1, which RFC 8785 refuses."""

_DIGIT_CLASSES = bytes(48 if 48 <= c <= 57 else 46 if c == 46 else 32 for c in range(256))
"""bytes.translate table: digits to `0`, `.` kept, everything else to a space."""

_LONG_RUN = b" " + b"0" * (_MAX_SAFE_DIGITS + 1)
"""A digit run longer than _MAX_SAFE_DIGITS after a non-digit that is not `.`, once translated
(digits inside strings, a hex digest, may match too: the exact check then decides)."""


def _risky_outside_strings(text: bytes) -> bool:
    """True when `text`, a JSON line's text outside its strings (numbers, literals, punctuation),
    holds a number with an exponent, an integral float (`2.0`: a `.0` that ends its token) or an
    integer of more than _MAX_SAFE_DIGITS digits."""
    if b"E" in text or b"e" in text.replace(b"true", b"").replace(b"false", b""):
        return True
    if b".0," in text or b".0}" in text or b".0]" in text:
        return True
    return _LONG_RUN in text.translate(_DIGIT_CLASSES)


_orjson_loads = orjson.loads
_orjson_dumps = orjson.dumps


class _LineReader:
    """Parses ledger lines exactly as json.loads does, and notes number tokens on which Python's
    JSON and RFC 8785 may disagree: an exponent (Python writes 1e-05, RFC 8785 0.00001), an integral
    float (2.0 against 2) and integers of more than _MAX_SAFE_DIGITS characters. One per scan or
    append (the note is per instance, not shared between threads).

    A line without a backslash is parsed by orjson (which reads every JSON number, string and
    literal to the same Python value as json.loads) and its number tokens are found in its text
    outside the strings (split at `"`: without escapes, every `"` opens or closes a string). A line
    with a backslash, or one orjson refuses, is parsed by json.loads step for step with a hook on
    every float token (its errors are then json.loads's own)."""

    def __init__(self) -> None:
        self.risky = False
        self._by_orjson = False  # the last line was parsed by orjson (so it has no backslash)
        self._decoder = json.JSONDecoder(parse_float=self._float)  # ints: the C fast path, no hook

    def _float(self, text: str) -> float:
        if "e" in text or "E" in text or text.endswith(".0"):
            self.risky = True
        return float(text)

    def loads(self, line: bytes) -> Any:
        """json.loads(line), to the same value (errors: ValueError)."""
        if b"\\" not in line:
            try:
                obj = _orjson_loads(line)
            except ValueError:
                pass  # refused (NaN, a huge integer, a BOM...): json.loads decides, as before
            else:
                self.risky = _risky_outside_strings(b"".join(line.split(b'"')[::2]))
                self._by_orjson = True
                return obj
        self.risky = self._by_orjson = False
        obj = self._decoder.decode(line.decode(json.detect_encoding(line), "surrogatepass"))
        self.risky = self.risky or _LONG_RUN in line.translate(_DIGIT_CLASSES)
        return obj

    def is_canonical(self, obj: Any, line: bytes) -> bool:
        """True when `line` (just read by `loads` into `obj`) is the RFC 8785 form of `obj`.

        Fast path: on an ASCII line (keys then sort the same by code point as by UTF-16 unit, and
        both encoders escape the same characters in strings) without a risky number, RFC 8785 and
        the stdlib's C encoder write the same bytes, so the line is canonical when the latter
        writes it back byte for byte. A line orjson parsed (no backslash: its strings need no
        escape) is written back by orjson instead, several times faster: on such a line orjson
        writes what RFC 8785 writes too (floats as the shortest round-trip digits; positional from
        1e-5 to below 1e16, where ECMAScript is too, which is positional from 1e-6 to below 1e21;
        outside that range orjson writes an exponent, which the risky-number note or the comparison
        turns away; tests/ledger/test_ledger_reader.py checks it). Every other line, and
        any line the fast path does not confirm, is decided by the exact check
        canonical_bytes(obj) == line (which raises CanonicalError/ValueError for values without a
        canonical form).
        """
        if not self.risky and line.isascii():
            try:
                if self._by_orjson and _orjson_dumps(obj, option=orjson.OPT_SORT_KEYS) == line:
                    return True
                if not self._by_orjson and _FAST_ENCODER.encode(obj).encode("utf-8") == line:
                    return True
            except (ValueError, TypeError, UnicodeEncodeError):
                pass  # NaN/Infinity or a lone surrogate: the exact check names the defect
        return canonical_bytes(obj) == line


_FROM_ISO = dt.datetime.fromisoformat


def _check_fields(obj: Any, line_no: int, prev: str) -> None:
    if not isinstance(obj, dict):
        raise _malformed(line_no, "not a JSON object")
    if obj.keys() != LINE_FIELDS:
        raise _malformed(line_no, f"keys {sorted(obj)} are not exactly {sorted(LINE_FIELDS)}")
    if not isinstance(obj["seq"], int) or isinstance(obj["seq"], bool) or obj["seq"] < 0:
        raise _malformed(line_no, f"seq {obj['seq']!r} is not a non-negative integer")
    if obj["kind"] not in EVENT_KINDS:
        raise _malformed(line_no, f"unknown event kind {obj['kind']!r}")
    if obj["prev"] != prev and (not isinstance(obj["prev"], str) or _DIGEST_RE.fullmatch(obj["prev"]) is None):
        raise _malformed(line_no, f"prev {obj['prev']!r} is not a sha256 digest")  # (the expected prev is one)
    if not isinstance(obj["data"], dict):
        raise _malformed(line_no, "data is not a JSON object")
    ts = obj["ts"]
    try:
        if isinstance(ts, str) and ts.endswith("Z"):
            _FROM_ISO(ts)  # a trailing Z is UTC: only the text needs checking (the writer's form)
        else:
            format_ts(ts)
    except (TypeError, ValueError):
        raise _malformed(line_no, f"ts {obj['ts']!r} is not an ISO-8601 UTC timestamp") from None


def verify_line(line: bytes, line_no: int, seq: int, prev: str, reader: _LineReader | None = None,
                obj: Any = None) -> Event:
    """Verify one complete line against the expected `seq` and `prev`. `reader` and `obj`: the
    reader that already parsed the line and what it read (the line is parsed here when no reader
    is given). Raises ValueError when the line is not JSON, LedgerLineError for any other defect."""
    if reader is None:
        reader = _LineReader()
        obj = reader.loads(line)
    _check_fields(obj, line_no, prev)
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
        event = verify_line(line, line_no, len(events), prev, reader, obj)
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
    """Lines of an events.jsonl whose hash chain `check_chain` checked over the raw bytes.

    count: the complete lines checked; last_digest: the digest of the last one (the `prev` given
    when none); torn: bytes follow the last newline (a line being written, or left torn by a
    killed writer).
    """

    count: int
    last_digest: str
    torn: bool


def check_chain(raw: bytes, start: int = 0, seq: int = 0, prev: str = GENESIS_PREV) -> Chain | None:
    """Check the hash chain of every complete line of `raw` (an events.jsonl's bytes) from byte
    `start` (a line start) on, without parsing their JSON: the first line has seq `seq` and `prev`
    `prev`, and each later line k's `prev` is the sha256 digest of line k-1 and its seq one more.

    The fields are found where the writer puts them (canonical JSON sorts the top-level keys: data,
    kind, prev, seq, ts), and every line is hashed. It does not check each line's own form
    (canonical JSON, known kind, timestamp): `scan_events` does. Returns None when any line checked
    is not chained as the writer chains it: `scan_events` then gives the precise verdict.
    """
    lines = raw[start:].split(b"\n")
    tail = lines.pop()
    sha256 = hashlib.sha256
    digests = [sha256(line).hexdigest().encode() for line in lines]
    ats = [line.rfind(_PREV_AT) for line in lines]
    if -1 in ats:
        return None
    prevs = [prev[7:].encode(), *digests[:-1]]
    for number, (line, at, expected) in enumerate(zip(lines, ats, prevs, strict=True)):
        if not line.startswith(b'%s","seq":%d,"ts":"' % (expected, seq + number), at + 17):
            return None
    last = "sha256:" + digests[-1].decode() if digests else prev
    return Chain(len(lines), last, bool(tail))
