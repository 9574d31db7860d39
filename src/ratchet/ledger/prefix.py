"""The verified prefix of a ledger, as its index records it: what lets `ratchet status` trust the
first bytes of events.jsonl after one SHA-256 pass instead of re-reading every line.

The index (index.py) hashes the bytes of every event it is given, in segments of SEGMENT_EVENTS
events: segment k holds the lines of seqs k*SEGMENT_EVENTS .. (k+1)*SEGMENT_EVENTS - 1 (the last
one partial), newlines included, and its row in the index's `chain` table is (segment, end_seq,
end_offset, sha256 hex of its bytes). The line bytes are rebuilt from the event (canonical JSON,
so one event has one line) and must hash to the event's digest, so the segments hash exactly the
lines the kernel verified and wrote. Segments are fixed by seq, so an index built event by event
over several sessions and one rebuilt at once hold the same rows.

A reader (`prefix_end`) re-hashes those byte ranges of the file it read (C-speed SHA-256, no
parsing) and compares: equal hashes mean the file starts with exactly the verified lines. Any
difference, or rows that do not cover the index's events, answers None: the caller then verifies
every line. Pure: bytes in, no file touched.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SEGMENT_EVENTS = 4096
"""Events per hashed segment. A kernel re-opening an index re-hashes at most this many lines of its
last, partial segment (rebuilt from the index's own rows); a reader hashes one range per segment."""

SegmentRow = tuple[int, int, int, str]
"""One row of the index's `chain` table: (segment, end_seq, end_offset in bytes, sha256 hex)."""


def line_bytes(seq: int, ts: str, kind: str, prev: str, data_json: str) -> bytes:
    """The canonical line of an event (no newline), from its fields and `data_json`, the canonical
    JSON text of its data (what the index stores). RFC 8785 orders the top-level keys data, kind,
    prev, seq, ts; the three strings are written by Python's encoder, which agrees with RFC 8785 on
    them (and the caller compares the line's digest with the event's, so a difference cannot pass)."""
    dumps = json.dumps
    return (f'{{"data":{data_json},"kind":{dumps(kind, ensure_ascii=False)},'
            f'"prev":{dumps(prev, ensure_ascii=False)},"seq":{seq},"ts":{dumps(ts, ensure_ascii=False)}}}'
            ).encode()


@dataclass
class Segment:
    """The segment an index is appending to: `number`, its byte range [start, end), the seq of its
    last line (`end_seq`, -1 before any), and the running SHA-256 of its bytes."""

    number: int
    start: int
    end: int
    end_seq: int
    hasher: Any

    @classmethod
    def first(cls) -> Segment:
        """The empty segment 0 of an empty ledger."""
        return cls(0, 0, 0, -1, hashlib.sha256())

    def add(self, seq: int, line: bytes) -> Segment:
        """The segment holding `line` (seq `seq`, which must follow end_seq) once it is added:
        this one, or the next when this one is full. Raises ValueError when seq does not follow."""
        if seq != self.end_seq + 1:
            raise ValueError(f"seq {seq} does not follow seq {self.end_seq}")
        seg = self
        if seq // SEGMENT_EVENTS != self.number:
            seg = Segment(self.number + 1, self.end, self.end, self.end_seq, hashlib.sha256())
        seg.hasher.update(line)
        seg.hasher.update(b"\n")
        seg.end += len(line) + 1
        seg.end_seq = seq
        return seg

    def row(self) -> SegmentRow:
        """This segment's row of the `chain` table."""
        return (self.number, self.end_seq, self.end, self.hasher.hexdigest())


def prefix_end(raw: bytes, rows: Sequence[SegmentRow], last_seq: int, last_digest: str) -> int | None:
    """The length of the prefix of `raw` (an events.jsonl's bytes) that the index's `chain` rows
    vouch for, or None when they do not.

    rows: the `chain` table ordered by segment; last_seq, last_digest: the index's last event. The
    rows must be segments 0, 1, ... with contiguous byte ranges from 0, the last ending on
    `last_seq`; each range of `raw` must hash to its row; the last line of the prefix must have
    `last_digest`. Then raw[:end] holds exactly the lines 0..last_seq the kernel verified.
    """
    if not rows or rows[-1][1] != last_seq:
        return None
    view, start = memoryview(raw), 0
    for number, (segment, _end_seq, end, sha) in enumerate(rows):
        if segment != number or not start < end <= len(raw):
            return None
        if hashlib.sha256(view[start:end]).hexdigest() != sha:
            return None
        start = end
    line_start = raw.rfind(b"\n", 0, start - 1) + 1
    if "sha256:" + hashlib.sha256(view[line_start:start - 1]).hexdigest() != last_digest:
        return None
    return start
