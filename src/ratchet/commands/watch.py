"""`ratchet watch [RUN]`: read a run's frame (its status and what it is doing now) without taking
its lock, once or live.

A frame is the `ratchet status` result (read from the index when it vouches for the ledger, see
runs.run_status) plus the ledger's tail from the latest `attempt.started` on: the open trial's jobs
and the agent's latest launch. The tail is read backwards from the end of events.jsonl, at most
TAIL_BYTES_MAX bytes, and only parsed (its lines were verified by the kernel that wrote them and
the chain up to the index by run_status); a line being written (no newline yet) is left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from ratchet.commands.runs import find_run, run_status
from ratchet.core.errors import RatchetError
from ratchet.core.events import line_payload
from ratchet.core.payloads import AttemptStarted, Payload, RunStarted
from ratchet.ledger.rundir import RunDir
from ratchet.present.watch import build_frame, watch_loop

TAIL_BYTES_MAX = 8 * 1024 * 1024
"""How far back from the end of events.jsonl the tail is read, bytes (a trial of 40 looks x 2
variants is ~60 KiB; an agent's launches add a few KiB each)."""

TAIL_CHUNK_BYTES = 64 * 1024
"""The first backward read, bytes; doubled until the latest attempt.started is in the buffer."""

_ATTEMPT_MARK = b'"kind":"attempt.started"'  # canonical JSON: `data` sorts first, then `kind`


def tail_events(path: Path, limit: int = TAIL_BYTES_MAX) -> list[Payload]:
    """The payloads of the complete ledger lines from the last `attempt.started` on (or the last
    `limit` bytes when it is further back), oldest first (a line that does not read as its kind's
    model is left out: the tail is not verified); [] when the file is missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size
        want = min(TAIL_CHUNK_BYTES, size)
        while True:
            buffer = os.pread(fd, want, size - want)
            if _ATTEMPT_MARK in buffer or want >= min(size, limit):
                break
            want = min(want * 2, size, limit)
    finally:
        os.close(fd)
    lines = buffer.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line still being written
    if want < size:
        lines = lines[1:]  # the first line is cut
    events = []
    for line in lines:
        try:
            payload = line_payload(json.loads(line))
        except ValueError:
            continue
        if payload is not None:
            events.append(payload)
    starts = [i for i, e in enumerate(events) if isinstance(e, AttemptStarted)]
    return events[starts[-1]:] if starts else events


def run_facts(run: RunDir) -> dict[str, Any]:
    """{"target_kind", "direction"} as run.started (the ledger's first line) records them; {} when
    unreadable."""
    try:
        with open(run.events, "rb") as f:
            started = line_payload(json.loads(f.readline() or b"{}"))
    except (OSError, ValueError):
        return {}
    if not isinstance(started, RunStarted):
        return {}
    return {"target_kind": started.target_kind, "direction": started.direction}


def read_frame(project_root: Path, run_id: str | None) -> dict[str, Any]:
    """One frame of run `run_id` (the latest campaign when None): see present.watch.build_frame.
    Raises DataError `run.not_found` / `run.bad_id`, LedgerError for a damaged ledger (as status)."""
    run = find_run(project_root, run_id)
    return _frame(run, run_facts(run))


def _frame(run: RunDir, facts: dict[str, Any]) -> dict[str, Any]:
    return build_frame(run_status(run.project_root, run.run_id), tail_events(run.events), facts)


def live_frame(run: RunDir, facts: dict[str, Any]) -> dict[str, Any]:
    """_frame, or {run_id, error} when the ledger cannot be read now (the live view keeps trying)."""
    try:
        return _frame(run, facts)
    except RatchetError as exc:
        return {"run_id": run.run_id, "error": exc.to_json()}


def watch_run(project_root: Path, run_id: str | None, console: Console) -> dict[str, Any]:
    """Draw the run's frame live on `console` until `q` or Ctrl-C; returns the last frame."""
    run = find_run(project_root, run_id)
    facts = run_facts(run)

    def changed() -> tuple[int, int] | None:
        try:
            st = os.stat(run.events)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    return watch_loop(lambda: live_frame(run, facts), changed, console)
