"""One Slurm task as the executor waits for it: the task and batch records, how a task's files
(its wrapper's outcome.json, its stdout, Slurm's log of the task) and the scheduler's record become
its JobResult, a re-attached task read back from its task.json, the wait between two polls
(brought forward when every open task has written its outcome) and the bound on poll rounds.

Effects: reads a task's files under `jobs_dir`.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ratchet.compute.base import TAIL_BYTES, ArtifactSpec, JobResult, OnResult
from ratchet.compute.slurm_states import TaskRecord, compose_result
from ratchet.core.jobfiles import JobFiles

BACKOFF_FACTOR = 1.5
"""Poll interval growth per round, from poll_min_s up to poll_max_s (see `max_poll_rounds`)."""

OUTCOME_CHECK_S = 0.1
"""Seconds between looks at the open tasks' outcome files while waiting for the next poll."""

OUTCOME_SETTLE_S = 0.3
"""Seconds from the last open task's outcome file appearing to the poll it brings forward (the
wrapper exits and the scheduler records the end meanwhile); doubled for each poll brought
forward before."""

EARLY_POLLS = 5
"""Polls per batch that may come before their time because every open task has written its
outcome file (the batch may be over: its end is seen at once, not up to poll_max_s later)."""


@dataclass
class Task:
    """One array task being waited for: its job, `<array_id>_<index>`, and its result once known;
    the job's workdir and the artifacts collected from it when it ends."""

    job_id: str
    array_id: str
    index: int
    timeout_s: float
    log: Path | None = None  # Slurm's own output of the task (the wrapper's errors); None: unknown
    workdir: Path | None = None
    artifacts: ArtifactSpec | None = None
    result: JobResult | None = None
    missing_since: float | None = None

    @property
    def external_id(self) -> str:
        return f"{self.array_id}_{self.index}"


@dataclass
class SlurmBatch:
    """The handle of a Slurm batch: its tasks in submission order and the arrays holding them."""

    tasks: list[Task]
    on_result: OnResult | None
    arrays: list[str] = field(default_factory=list)
    early_polls: int = 0  # polls brought forward because every open task had written its outcome


def read_outcome(jobs_dir: Path, task: Task, record: TaskRecord | None) -> dict | None:
    """This attempt's outcome.json, or None (absent, unreadable, or left by an earlier attempt of
    a requeued task: the restart counts differ)."""
    try:
        outcome = json.loads(JobFiles.of(jobs_dir, task.job_id).outcome.read_text())
    except (OSError, ValueError):
        return None
    if record is not None and int(outcome.get("restart", 0)) != record.restarts:
        return None
    return outcome


def task_result(jobs_dir: Path, task: Task, outcome: dict | None, record: TaskRecord | None,
                cancelled: bool) -> JobResult:
    """The JobResult of an ended task (`slurm_states.compose_result`), with Slurm's log of the task
    as its stderr tail when the wrapper left no outcome; `cancelled`: the executor cancelled it, so
    an end other than ok reads `cancelled`."""
    stdout = JobFiles.of(jobs_dir, task.job_id).stdout
    result = compose_result(task.job_id, task.external_id, outcome, record, task.timeout_s,
                            stdout if stdout.exists() else None)
    if outcome is None and task.log is not None and task.log.exists():
        result = replace(result, stderr_tail=_tail(task.log))
    if cancelled and result.state not in ("ok", "cancelled"):
        result = replace(result, state="cancelled", reason=f"cancelled ({result.reason})")
    return result


def reattached_task(jobs_dir: Path, job_id: str, array_id: str, index: int) -> Task:
    """The task of a job a previous kernel submitted, as its task.json describes it (timeout 0 and
    no artifacts when it cannot be read)."""
    try:
        task = json.loads(JobFiles.of(jobs_dir, job_id).task.read_text())
        timeout_s, workdir = float(task["timeout_s"]), Path(task["workdir"])
        wanted = task.get("artifacts")
        artifacts = ArtifactSpec(tuple(wanted["paths"]), Path(wanted["dest"])) if wanted else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Task(job_id, array_id, index, 0.0)
    return Task(job_id, array_id, index, timeout_s, workdir=workdir, artifacts=artifacts)


def wait_for_poll(wake: threading.Event, jobs_dir: Path, batch: SlurmBatch, interval: float, early: bool) -> None:
    """Wait `interval` seconds for the next poll of `batch`, or less: `wake` being set (a cancel)
    ends the wait, and so does, with `early` and while the batch has brought fewer than EARLY_POLLS
    polls forward, every open task having written its outcome file (looked at every
    OUTCOME_CHECK_S, the last-submitted first, so usually one file): the poll then comes
    OUTCOME_SETTLE_S x 2^(polls brought forward so far) later, time for the scheduler to record the
    ends. No scheduler call is made to wait."""
    deadline = time.monotonic() + interval
    watched = [t for t in reversed(batch.tasks) if t.result is None]
    watched = watched if early and batch.early_polls < EARLY_POLLS else []
    while True:
        now = time.monotonic()
        if now >= deadline:
            return
        if wake.wait(min(deadline - now, OUTCOME_CHECK_S)):
            wake.clear()
            return
        if watched and all(JobFiles.of(jobs_dir, t.job_id).outcome.exists() for t in watched):
            deadline = min(deadline, time.monotonic() + OUTCOME_SETTLE_S * 2 ** batch.early_polls)
            batch.early_polls += 1
            watched = []


def max_poll_rounds(elapsed_s: float, poll_min_s: float, poll_max_s: float) -> int:
    """The most polls `wait` makes per array over `elapsed_s` seconds: the rounds of geometric
    growth (factor BACKOFF_FACTOR) from poll_min_s to poll_max_s, then one per poll_max_s, plus the
    first and the last, plus EARLY_POLLS brought forward."""
    growth = math.ceil(math.log(poll_max_s / poll_min_s, BACKOFF_FACTOR)) if poll_max_s > poll_min_s else 0
    return growth + math.ceil(elapsed_s / poll_max_s) + 2 + EARLY_POLLS


def _tail(path: Path) -> str:
    """The last TAIL_BYTES of a file, decoded with replacement."""
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL_BYTES))
        return f.read().decode("utf-8", "replace")
