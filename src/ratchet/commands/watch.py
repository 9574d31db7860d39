"""`ratchet watch [RUN]`: read a run's frame (its status and what it is doing now) without taking
its lock, once or live.

A frame is the `ratchet status` result (read from the index when it vouches for the ledger, see
runs.run_status) plus the ledger's tail from the latest `attempt.started` on: the open trial's jobs
and the agent's latest launch. The tail is read backwards from the end of events.jsonl, at most
TAIL_BYTES_MAX bytes, and only parsed (its lines were verified by the kernel that wrote them and
the chain up to the index by run_status); a line being written (no newline yet) is left out.

The live view started before its run can be read (a `ratchet run` still checking the contract, the
repository and the sandbox before it creates the run directory and writes run.started) waits for
it, at most RUN_WAIT_S, saying so; `--once` and `--json` read what is there now.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from ratchet.commands.runs import find_run, run_status
from ratchet.core.errors import DataError, RatchetError
from ratchet.core.events import line_payload
from ratchet.core.payloads import AttemptStarted, Payload, RunStarted
from ratchet.ledger.lock import is_locked
from ratchet.ledger.project_lock import ACTIVE_DIR
from ratchet.ledger.rundir import RATCHET_DIR, RunDir, open_run
from ratchet.present.watch import build_frame, wait_loop, watch_loop

RUN_WAIT_S = 120.0
"""How long the live view waits for its run to appear, seconds (a `ratchet run` starting up on a
loaded machine takes a few seconds before its run directory and run.started exist)."""

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


def ready_run(project_root: Path, run_id: str | None) -> RunDir | None:
    """The run the live view shows, or None while it is yet to appear.

    `run_id` given: the run once its run.started is written (or once nobody holds its lock: a run
    killed before it started is shown as it is). None: the latest campaign (as `ratchet status`),
    unless a `ratchet run` holds the project lock and that campaign is not the one it writes (the
    new run is yet to appear): None then, and None when there is no run at all.
    Raises DataError `run.bad_id` / `run.not_found` for a `run_id` that names no run."""
    if run_id is not None:
        run = open_run(project_root, run_id)
        return run if run_facts(run) or is_locked(run.root) is None else None
    try:
        run = find_run(project_root, None)
    except DataError as exc:
        if exc.code != "run.not_found":
            raise
        return None
    written = is_locked(run.root) is not None
    if not run_facts(run):
        return None if written or _starting(project_root) else run
    return run if written or not _starting(project_root) else None


def _starting(project_root: Path) -> bool:
    """Whether a `ratchet run` holds the project lock (ledger.project_lock) of `project_root`."""
    return is_locked(project_root / RATCHET_DIR / ACTIVE_DIR) is not None


class _RunWaiter:
    """`ready_run` polled by the live view, which also gives up early when the `ratchet run` that
    held the project lock ended before its run appeared (its own output says why)."""

    def __init__(self, project_root: Path, run_id: str | None):
        self.project_root, self.run_id = project_root, run_id
        self.seen_starting = False

    def __call__(self) -> RunDir | None:
        run = ready_run(self.project_root, self.run_id)
        if run is not None or self.run_id is not None:
            return run
        if _starting(self.project_root):
            self.seen_starting = True
        elif self.seen_starting and ready_run(self.project_root, None) is None:
            raise DataError("run.not_found", f"the `ratchet run` that was starting in {self.project_root} ended "
                            "before its run started", hint="its own output says why (a contract, git or sandbox "
                            "error); fix that and run it again")
        return None


def await_run(project_root: Path, run_id: str | None, console: Console, wait_s: float = RUN_WAIT_S
              ) -> RunDir | None:
    """The run to watch (`ready_run`), waiting up to `wait_s` seconds for it with a line on
    `console` that says so; None when the user left (`q`, Ctrl-C) while waiting.
    Raises DataError `run.not_found` when it did not appear in time, and what `ready_run` raises."""
    find = _RunWaiter(project_root, run_id)
    run = find()
    if run is not None:
        return run
    what = f"run {run_id} to start" if run_id else "a run to start"
    message = (f"waiting for {what} in {project_root} (`ratchet run` creates it after checking the contract, "
               "the repository and the sandbox)")
    run, left = wait_loop(find, message, console, wait_s)
    if run is None and not left:
        raise DataError("run.not_found", f"no run started in {project_root} within {wait_s:g} s of waiting",
                        hint=f"start one with `ratchet run {project_root}`, then watch it again; "
                             f"`ratchet runs --dir {project_root}` lists the runs")
    return run


def watch_run(project_root: Path, run_id: str | None, console: Console, wait_s: float = RUN_WAIT_S
              ) -> dict[str, Any]:
    """Draw the run's frame live on `console` until `q` or Ctrl-C, after waiting for the run to
    appear (`await_run`); returns the last frame ({} when left before it)."""
    run = await_run(project_root, run_id, console, wait_s)
    if run is None:
        return {}
    facts = run_facts(run)

    def changed() -> tuple[int, int] | None:
        try:
            st = os.stat(run.events)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    return watch_loop(lambda: live_frame(run, facts), changed, console)
