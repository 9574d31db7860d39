"""The channel's state files, written before each leg (`write_leg_state`: the tool, the message,
`state/queue.json`, `launches.json`, `budget.json`, `history.json`, the CLI's home folders), and
what `ratchet-sys queue` and `ratchet-sys launches` show, with the watcher keeping the queue fresh.

- `state/queue.json`: every job of the attempt's launches, in launch order (`QueuedJob.to_json`:
  launch, index, command, why, state, value), then with several workers the jobs of the other
  attempts in flight (with their attempt and worker); written before each leg and, while the leg
  runs, every QUEUE_REFRESH_S by `QueueWatcher` from a source function.
- `state/launches.json`: the run's launches so far, earlier attempts' included (`LaunchSummary`
  rows: attempt, launch number, name, job count, states), from the loop's record of the run when it
  passes one (`CommandAgent.launches_view`), else from this attempt's own launches.

Everything is written through the hardened `Channel`; the agent may plant anything in `state/`.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.legs import AGENT_STATE_ENV, HOME_DIR
from ratchet.agents.command.limits import TOOL_NAME

STATE_DIR = "state"
QUEUE_FILE = "queue.json"
LAUNCHES_FILE = "launches.json"

TOOL_SOURCE = Path(__file__).with_name("tool.py")
"""The `ratchet-sys` program copied into the channel before each leg."""

QUEUE_REFRESH_S = 3.0
"""Seconds between two writes of `state/queue.json` while a leg runs."""

RESULT_CAP_BYTES = 4096
"""Bytes of a delivered `result.json` read back after a kernel restart (the kernel writes ~100)."""

QUEUED = "queued"
"""A job's state before its result came back (`running` once a source can tell it started)."""


def job_state(result_state: str | None) -> str:
    """The state `ratchet-sys` shows for a job: `queued` without a result, `succeeded` for a job
    that ended ok with its metric read, else its recorded state (`failed`, `timeout`, `no_metric`,
    `refused`: core.vocab.MeasurementState, or `refused` when the budget ran none)."""
    if result_state is None:
        return QUEUED
    return "succeeded" if result_state == "ok" else result_state


@dataclass
class QueuedJob:
    """One job of a launch of this attempt: the launch's name, the job's index in its array, its
    command and why, its state (`job_state`) and metric value once it ended."""

    launch: str
    index: int
    command: str
    why: str
    state: str = QUEUED
    value: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"launch": self.launch, "index": self.index, "command": self.command, "why": self.why,
                "state": self.state, "value": self.value}


def settle(queue: Sequence[QueuedJob], launch: str, index: int, result_state: str | None,
           value: float | None) -> None:
    """Give job `index` of `launch` its result (state and value)."""
    for job in queue:
        if job.launch == launch and job.index == index:
            job.state, job.value = job_state(result_state), value


def delivered(workspace: Path, queue: Sequence[QueuedJob], results_dir: str) -> None:
    """After a kernel restart: settle each queued job from the `result.json` the kernel delivered
    into `<results_dir>/<launch>/<i>/` (read through the Channel, capped); a job whose file is
    missing or unreadable stays `queued` (all of them when the channel itself is refused: the
    leg that reads it next says so)."""
    try:
        with Channel(workspace) as channel:
            for job in queue:
                _settle_from(channel, job, [results_dir, job.launch, str(job.index), "result.json"])
    except ChannelError:
        return


def _settle_from(channel: Channel, job: QueuedJob, path: list[str]) -> None:
    try:
        data = json.loads(channel.read(path, RESULT_CAP_BYTES))
        state, value = data["state"], data.get("value")
    except (ChannelError, ValueError, KeyError, TypeError):
        return
    if isinstance(state, str) and (value is None or isinstance(value, (int, float))):
        job.state, job.value = job_state(state), value


def queue_json(queue: Iterable[QueuedJob], siblings: Iterable[Mapping[str, Any]] = ()) -> bytes:
    """`state/queue.json`: the jobs as a JSON list, this attempt's first, then `siblings`: the jobs
    of the other attempts in flight (several workers: rows {attempt, worker, launch, index, command,
    why, state}, from `loop.agents.sibling_jobs`)."""
    return json.dumps([j.to_json() for j in queue] + [dict(s) for s in siblings], indent=1).encode()


def launch_summary(attempt: int, number: int | None, name: str | None, states: Sequence[str],
                   refused: str | None = None) -> dict[str, Any]:
    """One row of `state/launches.json`: a launch of `attempt` (its `number` in the attempt as the
    ledger counts them, None when unknown), the agent's name for it, its job count, how many jobs
    are in each state, and why the kernel ran none (`refused`)."""
    row: dict[str, Any] = {"attempt": attempt, "launch": number, "name": name, "jobs": len(states),
                           "states": dict(Counter(states))}
    if refused:
        row["refused"] = refused
    return row


def attempt_launches(attempt: int, queue: Sequence[QueuedJob]) -> list[dict[str, Any]]:
    """The rows of `state/launches.json` for this attempt's own launches (no record of the run)."""
    by_name: dict[str, list[str]] = {}
    for job in queue:
        by_name.setdefault(job.launch, []).append(job.state)
    return [launch_summary(attempt, None, name, states) for name, states in by_name.items()]


def write_state(workspace: Path, name: str, data: bytes) -> None:
    """Write `state/<name>` of the workspace's channel. Raises ChannelError (a planted symlink...)."""
    with Channel(workspace) as channel:
        channel.write([STATE_DIR, name], data)


class QueueWatcher:
    """While a leg runs (`with QueueWatcher(...)`), rewrite `state/queue.json` every `every_s`
    seconds from `source()` (bytes, e.g. `queue_json` of the jobs to show), on a thread of the
    kernel's process; stops when the block ends. A refused channel is left alone: the kernel's
    read after the leg reports it."""

    def __init__(self, workspace: Path, source: Callable[[], bytes], every_s: float = QUEUE_REFRESH_S):
        self.workspace = workspace
        self.source = source
        self.every_s = every_s
        self.writes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ratchet-queue-watcher")

    def __enter__(self) -> QueueWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                write_state(self.workspace, QUEUE_FILE, self.source())
            except (ChannelError, OSError):
                continue
            self.writes += 1


def write_leg_state(workspace: Path, message_file: str, message: str, queue: Sequence[QueuedJob],
                    launches: Sequence[Mapping[str, Any]], budget: Mapping[str, Any],
                    history: Mapping[str, Any], siblings: Sequence[Mapping[str, Any]] = ()) -> None:
    """Before a leg: copy the tool (TOOL_NAME), write the leg's message as `<channel>/<message_file>`,
    the state files `ratchet-sys` reads (the queue, the run's launches, the budget's standing, the
    attempt's `history`), and make the CLI's home folders (a symlink planted at `home/` is replaced,
    not followed). Raises ChannelError when the channel is refused."""
    with Channel(workspace) as channel:
        channel.write([TOOL_NAME], TOOL_SOURCE.read_bytes(), mode=0o755)
        channel.write([message_file], message.encode("utf-8"))
        channel.write([STATE_DIR, QUEUE_FILE], queue_json(queue, siblings))
        channel.write([STATE_DIR, LAUNCHES_FILE], json.dumps(list(launches), indent=1).encode())
        channel.write([STATE_DIR, "budget.json"], json.dumps(dict(budget), indent=1).encode())
        channel.write([STATE_DIR, "history.json"], json.dumps(dict(history), indent=1).encode())
        for sub in AGENT_STATE_ENV.values():
            channel.ensure_dir([HOME_DIR, sub])
