"""The executor protocol: what a job is, what its result says, and how the kernel submits them.

Pure values only; the effectful executors live in `local.py` (process pool) and `slurm.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ratchet.core.errors import RatchetError
from ratchet.core.vocab import JobState

JOB_KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when a job times out or is cancelled."""

OUTPUT_CAP_BYTES = 8 * 1024 * 1024
"""Default cap on the bytes of stdout (and separately stderr) kept on disk per job."""

TAIL_BYTES = 4096
"""Bytes of stdout/stderr tail carried in a JobResult."""

SandboxMode = Literal["bwrap", "none"]
"""The isolation a job actually runs under (`auto` is resolved before a job is built)."""

SandboxSetting = Literal["auto", "bwrap", "none"]
"""`sandbox.mode` in the contract: auto (bwrap when it works), bwrap (required), none."""


@dataclass(frozen=True)
class Resources:
    """What one job may use: CPUs (count), GPUs (count), memory in MiB (0: no limit)."""

    cpus: int = 1
    gpus: int = 0
    memory_mb: int = 0


@dataclass(frozen=True)
class SandboxSpec:
    """Sandbox settings for one job: `mode` resolved (bwrap|none); `network` allowed or not;
    `read_only`: extra absolute paths bound read-only under bwrap (the install prefixes of the
    job's programs, then `sandbox.read_only`); `path`: the jobs' PATH (None:
    `compute.env.default_path()`); `passed_env`: (name, value) pairs of `sandbox.pass_env` read
    where Ratchet runs (see `compute.env.sandbox_spec`); `read_only_root`: everything but the
    workdir and the scratch directory read-only, /tmp included (a command agent's legs: a write
    elsewhere fails with EROFS instead of landing in a throwaway tmpfs); `project_file`: the project's
    file run for a command's first word relative to the project that a clean checkout lacks
    (`compute.job_programs.checkout_command`; None: none)."""

    mode: SandboxMode = "none"
    network: bool = False
    read_only: tuple[str, ...] = ()
    path: str | None = None
    passed_env: tuple[tuple[str, str], ...] = ()
    read_only_root: bool = False
    project_file: str | None = None


@dataclass(frozen=True)
class ArtifactSpec:
    """Files a job writes that the executor copies back once it ended, before its workdir goes
    (`compute.artifacts.collect_artifacts`): `paths` relative to the workdir; `dest` the
    kernel-owned directory they go to (`files/<path>`, `notes.json`)."""

    paths: tuple[str, ...]
    dest: Path


@dataclass(frozen=True)
class JobSpec:
    """One run of a command for one variant on one unit.

    job_id: unique in the run, filename-safe ([A-Za-z0-9_.-]); names `jobs/<job_id>/`.
    argv: the command (e.g. ("/bin/sh", "-c", target.command)).
    workdir: the job's clean checkout (writable).
    env: the complete environment the job sees (already allow-listed by the caller; the executor
        adds only HOME and TMPDIR pointing into the job's scratch directory).
    timeout_s: seconds of wall time before the job and every descendant are killed.
    stdin_bytes: bytes written to the job's stdin (then closed); None: stdin is /dev/null.
    output_cap_bytes: bytes of stdout and of stderr kept on disk (the rest is read and dropped).
    artifacts: files collected from `workdir` when the job ended (not when it was cancelled); None:
        none.
    group / group_max_parallel: at most `group_max_parallel` jobs of one submit sharing `group` run
        at once, a sliding window (the next starts as soon as one of them ends), within the
        executor's own `max_parallel`; None: only the executor's limit (an agent's launch with
        `--concurrency`).
    background: an agent's own experiment (stage `launch`): an executor shared by several workers
        starts it only when no gate measurement (trial, confirm, holdout, preflight, dev) waits for
        a slot (ordering, never CPU priority: niceness would skew timing metrics).
    """

    job_id: str
    argv: tuple[str, ...]
    workdir: Path
    env: Mapping[str, str]
    timeout_s: float
    resources: Resources = field(default_factory=Resources)
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)
    stdin_bytes: bytes | None = None
    output_cap_bytes: int = OUTPUT_CAP_BYTES
    artifacts: ArtifactSpec | None = None
    group: str | None = None
    group_max_parallel: int | None = None
    background: bool = False

    @property
    def group_cap(self) -> tuple[str, int] | None:
        """(group, its cap) when this job's group is capped, else None."""
        if self.group is None or not self.group_max_parallel:
            return None
        return self.group, self.group_max_parallel


@dataclass(frozen=True)
class JobResult:
    """How one job ended.

    state: see core.vocab.JobState. exit_code: the process's exit code, or None when killed by a signal.
    signal: the signal number that ended it, if any. elapsed_s: wall seconds. cpu_s: user+system CPU
    seconds of the job and its waited-for descendants (0.0 when unknown). stdout_tail/stderr_tail: the
    last TAIL_BYTES bytes decoded as UTF-8 with replacement. stdout_truncated/stderr_truncated: the cap
    was hit. reason: one line a user can act on ("exit code 1", "timed out after 5.0 s", ...).
    stdout_path: the file holding the (capped) stdout. external_id: the pid or the scheduler's job
    id. scheduler_state: the scheduler's own word for how the job ended (`OUT_OF_MEMORY`,
    `NODE_FAIL`...), None for local jobs. stdout_bytes/stderr_bytes: bytes the job wrote to each
    stream, cap or not (None when not counted: a Slurm job, a job never started). rerun: nothing is
    known of how the job ended (state `unknown`: the scheduler forgot it and its wrapper left no
    outcome), so the runner may run it once more as a fresh job. requeues: how often the scheduler
    requeued the job before this end (None: not a scheduler's job, or not known).
    """

    job_id: str
    state: JobState
    exit_code: int | None
    signal: int | None
    elapsed_s: float
    cpu_s: float
    stdout_tail: str
    stderr_tail: str
    stdout_truncated: bool
    stderr_truncated: bool
    reason: str
    stdout_path: Path | None = None
    external_id: str | None = None
    scheduler_state: str | None = None
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    rerun: bool = False
    requeues: int | None = None


OnResult = Callable[[JobResult], None]
"""Called once per finished job, from the thread that waits on the executor (the kernel's)."""

OnSubmit = Callable[[str, str], None]
"""Called with (job_id, external_id) once per job: a scheduler's job id (`12345_7`) before the job
can run (it is submitted held and released after this returns), or a local pid as soon as the
process exists. Always called from the thread in `submit` or `wait`, never concurrently."""


@dataclass(frozen=True)
class Batch:
    """Jobs handed to an executor: their ids in submission order, plus the backend's own handle
    (opaque to the kernel)."""

    job_ids: tuple[str, ...]
    handle: Any = field(default=None, compare=False, repr=False)


class Executor(Protocol):
    """Where jobs run: the local process pool, or a Slurm cluster.

    `submit` hands jobs over and returns at once (a backend may start them in threads, or submit a
    held job array and release it once every external id was reported through `on_submit`);
    `wait` blocks until every job of the batch has a result and returns them in submission order,
    calling `on_submit` / `on_result` from its own thread as jobs start and end. `reattach` is for a
    resumed kernel: given job_id -> external_id of jobs a previous kernel recorded as started and
    never finished, it returns a batch of those the backend can still collect (a scheduler's jobs
    keep running without us), and kills and leaves out those it cannot (a local process whose
    kernel died lost its pipes): the kernel runs the left-out ones again. `cancel(ids)` kills the
    named jobs (all, when None), running ones end `cancelled` and pending ones are not started; it
    may be called from another thread or a signal handler. `close` releases what the executor holds
    (idempotent; no `wait` in progress).
    """

    backend: str
    """`local` or `slurm`: recorded with every job, never branched on (the capabilities below say
    what differs)."""

    jobs_outlive_kernel: bool
    """True: a job keeps running when the kernel that submitted it dies (a scheduler's), and a
    resumed kernel collects it with `reattach` instead of running it again. False: `reattach` kills
    what a dead kernel left behind (call it when the kernel reopens) and those jobs run again."""

    external_ids_are_pids: bool
    """True: external ids are process ids on this machine (`job.started` records them as `pid`)."""

    @property
    def token(self) -> str | None:
        """The name the run's jobs carry at their scheduler (Slurm's run token, recorded in
        `run.started` so later kernels act on those jobs only); None where jobs have no name."""
        ...

    def probe_sandbox(self, mode: SandboxSetting) -> SandboxMode:
        """The sandbox jobs will run under where this executor runs them, for `sandbox.mode`
        `mode`. Raises SandboxError `sandbox.unavailable` when mode is bwrap and it does not work
        there."""
        ...

    def submit(self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None,
               on_result: OnResult | None = None) -> Batch: ...

    def wait(self, batch: Batch) -> list[JobResult]: ...

    def reattach(self, recorded: Mapping[str, str], on_result: OnResult | None = None) -> Batch: ...

    def cancel(self, ids: Iterable[str] | None = None) -> None: ...

    def close(self) -> None: ...


def run_jobs(executor: Executor, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None,
             on_result: OnResult | None = None) -> list[JobResult]:
    """Submit `specs` and wait for them: one JobResult per spec, in `specs` order."""
    return executor.wait(executor.submit(specs, on_submit, on_result))


JOB_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
"""A job id: filename-safe (it names the job's directory)."""


def check_ids(specs: Sequence[JobSpec]) -> None:
    """Refuse job ids that are not filename-safe or repeat. Raises RatchetError `job.bad_id` /
    `job.duplicate_id`."""
    seen: set[str] = set()
    for spec in specs:
        if not JOB_ID.fullmatch(spec.job_id) or spec.job_id in (".", ".."):
            raise RatchetError("job.bad_id", f"job id {spec.job_id!r} is not filename-safe ([A-Za-z0-9_.-])")
        if spec.job_id in seen:
            raise RatchetError("job.duplicate_id", f"job id {spec.job_id!r} appears twice in one run")
        seen.add(spec.job_id)
