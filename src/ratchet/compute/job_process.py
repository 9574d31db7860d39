"""One local job's process from start to reaping: launched (through the reaping shim, or under
bwrap), supervised to its end, its timeout or a cancel, stopped with its every descendant, its
result described. Used by `local.LocalExecutor`, which owns the pool, the queue and the callbacks.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ratchet.compute import pids, reaper
from ratchet.compute.base import (
    JOB_KILL_GRACE_S,
    JobResult,
    JobSpec,
)
from ratchet.compute.cgroup import JobCgroup
from ratchet.compute.outcome import describe_end, make_result
from ratchet.compute.streams import CappedOutput, ExitWatch, JobIO

DRAIN_S = 2.0
"""Seconds spent reading a job's pipes after it ended (and its leftovers were killed)."""

STOP_POLL_S = 0.1
"""Seconds between checks while a stopped job's processes die."""

STOP_ROUNDS = 100
"""SIGKILL rounds (STOP_POLL_S apart) before the kernel gives up waiting for a stopped job to die."""


@dataclass(frozen=True)
class ExecutorLink:
    """What a job's process needs of the local executor running it.

    pid_dir: where running jobs are recorded for `pids.kill_recorded` (None: not recorded).
    wake_fd: the read end of the executor's wake pipe, readable once a cancel was asked.
    is_cancelled(job_id): whether the job was cancelled.
    """

    pid_dir: Path | None
    wake_fd: int
    is_cancelled: Callable[[str], bool]


class JobProcess:
    """One job's process from start to reaping (see the module docstring)."""

    def __init__(
        self,
        executor: ExecutorLink,
        spec: JobSpec,
        argv: list[str],
        env: dict[str, str],
        outputs: tuple[CappedOutput, CappedOutput],
        marker: str,
    ):
        self.ex = executor
        self.spec = spec
        self.argv = argv
        self.env = env
        self.outputs = outputs
        self.marker = marker  # the scratch path: HOME/TMPDIR of every process of this job
        self.victims: dict[int, pids.ProcInfo] = {}
        self.since: int | None = None
        self.cgroup: JobCgroup | None = None

    def _launch_argv(self) -> list[str] | None:
        """The command line to start: under bwrap the sandbox (its PID namespace reaches every
        process); otherwise the reaper shim (a child subreaper, in the job's cgroup when one can be
        created) running the job. None when the job's program is not on its PATH."""
        if self.spec.sandbox.mode == "bwrap":
            return self.argv
        if shutil.which(self.argv[0], path=self.env.get("PATH", os.defpath)) is None:
            return None
        self.cgroup = JobCgroup.create(self.spec.job_id)
        return reaper.argv_for(self.argv, sys.executable, str(self.cgroup.path) if self.cgroup else None)

    def run(self, events: queue.Queue) -> JobResult:
        """Start the process, supervise it to its end, reap it; posts ("start", job_id, pid)."""
        spec = self.spec
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if spec.stdin_bytes is not None else (None, None)
        start = time.monotonic()
        try:
            argv = self._launch_argv()
            if argv is None:
                raise FileNotFoundError(f"{self.argv[0]!r} is not an executable on the job's PATH")
            proc = subprocess.Popen(
                argv,
                cwd=spec.workdir,
                env=self.env,
                start_new_session=True,
                stdin=in_r if in_r is not None else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
            )
        except OSError as exc:
            for fd in (out_r, err_r, in_w):
                if fd is not None:
                    os.close(fd)
            self._remove_cgroup()
            return make_result(spec, "failed", None, None, 0.0, 0.0, self.outputs, f"could not start: {exc}")
        finally:
            for fd in (out_w, err_w, in_r):
                if fd is not None:
                    os.close(fd)
        watch = ExitWatch(proc.pid)
        self.since = pids.process_start_time(proc.pid)
        io = JobIO(
            {out_r: self.outputs[0], err_r: self.outputs[1]}, in_w, spec.stdin_bytes, watch, self.ex.wake_fd
        )
        try:
            if self.ex.pid_dir is not None:
                pids.record(self.ex.pid_dir, spec.job_id, proc.pid, self.marker,
                            str(self.cgroup.path) if self.cgroup else None)
            events.put(("start", spec.job_id, proc.pid))
            ended_by = self._supervise(io, watch, start)
            elapsed = time.monotonic() - start
            self._sweep(proc.pid)
            _drain(io)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        except BaseException:
            if self.cgroup is not None:
                self.cgroup.kill()
            _kill_now(proc, watch)
            raise
        finally:
            self._remove_cgroup()
            watch.close()
            io.close_stdin()
            os.close(out_r)
            os.close(err_r)
            if self.ex.pid_dir is not None:
                pids.forget(self.ex.pid_dir, spec.job_id)
        cpu = usage.ru_utime + usage.ru_stime
        if self.spec.sandbox.mode == "bwrap":
            # bwrap's PID-namespace monitor exits without reaping the namespace's init, so the job's
            # own rusage never reaches us: charge one core for the job's wall time instead (an
            # estimate that over-charges idle jobs and under-charges multi-threaded ones).
            cpu = max(cpu, elapsed)
        return self._result(status, elapsed, cpu, ended_by)

    def _supervise(self, io: JobIO, watch: ExitWatch, start: float) -> str | None:
        """Pump until the leader exits ("exit" -> None), the timeout ("timeout") or a cancel."""
        deadline = start + self.spec.timeout_s
        while not io.exited:
            if self.ex.is_cancelled(self.spec.job_id):
                self._stop(io, watch)
                return "cancel"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop(io, watch)
                return "timeout"
            io.pump(remaining)
        return None

    def _stop(self, io: JobIO, watch: ExitWatch) -> None:
        """SIGTERM the job and all its processes; after the grace, SIGKILL until none is left."""
        kill_at = time.monotonic() + JOB_KILL_GRACE_S
        if self.spec.sandbox.mode == "bwrap":
            self._term_sandboxed(io, watch.pid, time.monotonic() + JOB_KILL_GRACE_S / 2)
        else:
            self._signal_all(watch, signal.SIGTERM)
        while time.monotonic() < kill_at:
            io.pump(min(STOP_POLL_S, max(0.0, kill_at - time.monotonic())))
            if io.exited and not self._scan(watch.pid):
                return
        for _ in range(STOP_ROUNDS):
            left = self._signal_all(watch, signal.SIGKILL)
            io.pump(STOP_POLL_S)
            if io.exited and not left:
                return

    def _term_sandboxed(self, io: JobIO, leader: int, until: float) -> None:
        """SIGTERM inside the sandbox, bottom-up: bwrap's init exits (and the namespace dies) as
        soon as the command it started does, so the processes below that command get SIGTERM first
        and the command itself once they are gone (or at `until`). bwrap is never sent SIGTERM."""
        found = self._scan(leader)
        inner = {p for p, info in found.items() if info.ppid == leader}
        top = {p: info for p, info in found.items() if info.ppid in inner}
        pids.signal_processes(
            [i for p, i in found.items() if p not in inner and p not in top], signal.SIGTERM
        )
        while time.monotonic() < until and not io.exited:
            if set(self._scan(leader)) <= inner | set(top):
                break
            io.pump(STOP_POLL_S)
        pids.signal_processes(top.values(), signal.SIGTERM)

    def _scan(self, leader: int) -> dict[int, pids.ProcInfo]:
        found = pids.job_processes(leader, self.marker, self.since)
        if self.cgroup is not None:
            for pid in self.cgroup.pids():
                info = pids.read_proc(pid) if pid not in found and pid != leader else None
                if info is not None and info.state not in ("Z", "X"):
                    found[pid] = info
        self.victims.update(found)
        return found

    def _remove_cgroup(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()

    def _signal_all(self, watch: ExitWatch, sig: int) -> int:
        """Signal the leader, its process group and every other live process of the job; returns
        how many processes other than the leader were alive."""
        found = self._scan(watch.pid)
        if sig == signal.SIGKILL:
            # Descendants first: the leader (the reaper shim) holds on to the orphans while it lives.
            if self.cgroup is not None:
                self.cgroup.kill()
            pids.signal_processes(found.values(), sig)
            _signal_group(watch, sig)
        else:
            # The leader first: told it is being stopped, the shim leaves the others their grace.
            _signal_group(watch, sig)
            pids.signal_processes(found.values(), sig)
        return len(found)

    def _sweep(self, leader: int) -> None:
        """Kill what a job left behind after its leader exited (a daemon, a setsid grandchild)."""
        if self.cgroup is not None:
            self.cgroup.kill()
        for _ in range(STOP_ROUNDS):
            left = pids.job_processes(leader, self.marker, self.since)
            if not left:
                return
            pids.signal_processes(left.values(), signal.SIGKILL)
            time.sleep(STOP_POLL_S / 10)

    def _result(self, status: int, elapsed: float, cpu: float, ended_by: str | None) -> JobResult:
        state, exit_code, sig, reason = describe_end(status, ended_by, self.spec.timeout_s, len(self.victims))
        return make_result(self.spec, state, exit_code, sig, elapsed, cpu, self.outputs, reason)


def _signal_group(watch: ExitWatch, sig: int) -> None:
    """Signal a job's leader and its process group."""
    watch.send(sig)
    try:
        os.killpg(watch.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _drain(io: JobIO) -> None:
    io.close_stdin()
    until = time.monotonic() + DRAIN_S
    while io.streams_open and time.monotonic() < until:
        io.pump(until - time.monotonic())


def _kill_now(proc: subprocess.Popen, watch: ExitWatch) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    watch.send(signal.SIGKILL)
    try:
        _, status = os.waitpid(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        pass


