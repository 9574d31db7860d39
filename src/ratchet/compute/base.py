"""The executor protocol: what a job is, what its result says, and how the kernel submits them.

Pure values only; the effectful executors live in `local.py` (process pool) and, later, `slurm.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

JOB_KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when a job times out or is cancelled."""

OUTPUT_CAP_BYTES = 8 * 1024 * 1024
"""Default cap on the bytes of stdout (and separately stderr) kept on disk per job."""

TAIL_BYTES = 4096
"""Bytes of stdout/stderr tail carried in a JobResult."""

JobState = Literal["ok", "failed", "timeout", "killed", "cancelled", "unknown"]
"""How a job's process ended, before any metric is read.

ok: exit code 0. failed: non-zero exit code. timeout: killed by the kernel at `timeout_s`.
killed: ended by a signal the kernel did not send (OOM killer, a crash). cancelled: killed by
`Executor.cancel` (Ctrl-C, a stop). unknown: the state could not be read; never success.
"""

SandboxMode = Literal["bwrap", "none"]
"""The isolation a job actually runs under (`auto` is resolved before a job is built)."""


@dataclass(frozen=True)
class Resources:
    """What one job may use: CPUs (count), GPUs (count), memory in MiB (0: no limit)."""

    cpus: int = 1
    gpus: int = 0
    memory_mb: int = 0


@dataclass(frozen=True)
class SandboxSpec:
    """Sandbox settings for one job: `mode` resolved (bwrap|none); `network` allowed or not."""

    mode: SandboxMode = "none"
    network: bool = False


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


@dataclass(frozen=True)
class JobResult:
    """How one job ended.

    state: see JobState. exit_code: the process's exit code, or None when killed by a signal.
    signal: the signal number that ended it, if any. elapsed_s: wall seconds. cpu_s: user+system CPU
    seconds of the job and its waited-for descendants (0.0 when unknown). stdout_tail/stderr_tail: the
    last TAIL_BYTES bytes decoded as UTF-8 with replacement. stdout_truncated/stderr_truncated: the cap
    was hit. reason: one line a user can act on ("exit code 1", "timed out after 5.0 s", ...).
    stdout_path: the file holding the (capped) stdout.
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


OnResult = Callable[[JobResult], None]
"""Called once per finished job, from the thread that waits on the executor (the kernel's)."""

OnStart = Callable[[str, int], None]
"""Called with (job_id, pid) once a job's process exists, so the kernel can record it."""


class Executor(Protocol):
    """Where jobs run. `run` blocks until every job has a result (or the executor is cancelled),
    calling `on_start` and `on_result` as jobs start and end; results come back in `specs` order.
    `cancel` may be called from another thread or a signal handler: running jobs are killed (state
    `cancelled`), pending ones are not started (state `cancelled`, reason "not started").
    """

    def run(
        self, specs: Sequence[JobSpec], on_start: OnStart | None = None, on_result: OnResult | None = None
    ) -> list[JobResult]: ...

    def cancel(self) -> None: ...
