"""The local executor: a pool of at most `max_parallel` jobs run as processes on this machine.

Each job runs in a new session (its own process group) with exactly its allow-listed environment
plus HOME and TMPDIR pointing at its private scratch directory (removed when the job ends). stdout
and stderr stream to their files, capped at `spec.output_cap_bytes` each (the rest is read and
dropped, so a job printing 100 MB costs the kernel no memory); `result.json` is written when the job
ends, then the job's artifacts (`spec.artifacts`) are collected from its workdir. Those files are
named by `core.jobfiles.JobFiles`, under `jobs_dir/<job_id>/`.

At the timeout (or on `cancel`) the job is stopped: SIGTERM to its process group and every other
process of the job (see `pids.job_processes`), JOB_KILL_GRACE_S later SIGKILL to whatever is left,
then again until nothing of the job is alive. Under the sandbox, bwrap runs the job in its own PID
namespace, so killing bwrap kills every process inside (there, SIGTERM goes bottom-up so the job
can clean up before bwrap's init exits). Without the sandbox the job's leader is the reaper shim
(`reaper.py`): a child subreaper, in the job's own cgroup v2 where one can be created (`cgroup.py`),
so an orphan that dropped the marker and left the session is still found and killed (SIGTERM goes
to the shim first, SIGKILL to it last). When a job ends normally, processes it left behind are
killed too. cpu_s is the rusage of the reaped leader: the job and the descendants it waited for
(processes killed as leftovers are not counted); under bwrap, where that rusage is lost, the job's
wall time (one core) is charged instead. `spec.resources` is not enforced locally: the
pool's size (`max_parallel`) is the local limit, shared by every batch in flight (`_Slots`: the
workers of `agent.workers` submit batches at once; gate measurements are served before an agent's
experiments). Jobs of one batch start in submission order, except
that a job whose group (`spec.group_cap`) already runs its cap waits and the next eligible job starts
instead (`_Todo`).
"""

from __future__ import annotations

import bisect
import functools
import os
import queue
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ratchet.compute import pids
from ratchet.compute.artifacts import collect_artifacts
from ratchet.compute.base import (
    Batch,
    JobResult,
    JobSpec,
    OnResult,
    OnSubmit,
    SandboxMode,
    SandboxSetting,
    check_ids,
    run_jobs,
)
from ratchet.compute.env import job_env  # noqa: F401  (re-exported: the executor's environment rule)
from ratchet.compute.gpus import GpuPool, gpu_device_nodes, gpu_env
from ratchet.compute.job_process import ExecutorLink, JobProcess
from ratchet.compute.outcome import not_started, unknown_result, write_result
from ratchet.compute.sandbox import resolve_mode, wrap_argv
from ratchet.compute.streams import CappedOutput
from ratchet.core.errors import RatchetError
from ratchet.core.jobfiles import JobFiles

GPU_WAIT_S = 0.05
"""Seconds between checks while a GPU job waits for its devices."""

SLOT_POLL_S = 0.2
"""Seconds between checks of a cancel while a job waits for one of the executor's slots."""



@dataclass
class _Pending:
    """A local batch in flight: the worker threads and what they report."""

    specs: list[JobSpec]
    events: queue.Queue
    threads: list[threading.Thread]
    on_submit: OnSubmit | None
    on_result: OnResult | None


class _Todo:
    """The jobs of one local batch not yet started, handed to the workers in submission order; a
    job whose group already runs `group_max_parallel` jobs is passed over until one of them ends (a
    sliding window per group, inside the pool's `max_parallel`)."""

    def __init__(self, specs: Sequence[JobSpec]):
        self._left = list(enumerate(specs))
        self._running: Counter[str] = Counter()
        self._cond = threading.Condition()

    def take(self) -> tuple[int, JobSpec] | None:
        """The next job that may start (waiting while only capped ones are left), or None when
        every job was taken. A worker only waits while a job of the blocking group runs, and
        `done` for that job wakes it."""
        with self._cond:
            while self._left:
                for k, (index, spec) in enumerate(self._left):
                    cap = spec.group_cap
                    if cap is None or self._running[cap[0]] < cap[1]:
                        del self._left[k]
                        if cap is not None:
                            self._running[cap[0]] += 1
                        return index, spec
                self._cond.wait()
            return None

    def done(self, spec: JobSpec) -> None:
        """`spec` ended: a job of its group may start."""
        with self._cond:
            cap = spec.group_cap
            if cap is not None:
                self._running[cap[0]] -= 1
            self._cond.notify_all()


class _Slots:
    """The executor's `max_parallel` slots, shared by every batch in flight (several workers'
    trials, confirmations and launches at once): a job holds one from its start to its end. Waiting
    jobs are served gate measurements first, then background ones (`JobSpec.background`), each class
    first come first served, so no batch starves another."""

    def __init__(self, size: int):
        self.size = size
        self.used = 0
        self._waiting: list[tuple[bool, int]] = []  # (background, ticket), kept sorted: the head is served next
        self._tickets = 0
        self._cond = threading.Condition()

    def acquire(self, background: bool, cancelled: Callable[[], bool]) -> bool:
        """Wait for a slot; True once held, False when `cancelled()` turned true meanwhile (then
        nothing is held)."""
        with self._cond:
            self._tickets += 1
            me = (background, self._tickets)
            bisect.insort(self._waiting, me)
            try:
                while self.used >= self.size or self._waiting[0] != me:
                    if cancelled():
                        return False
                    self._cond.wait(SLOT_POLL_S)
                self.used += 1
                return True
            finally:
                self._waiting.remove(me)
                self._cond.notify_all()

    def release(self) -> None:
        """A job holding a slot ended."""
        with self._cond:
            self.used -= 1
            self._cond.notify_all()


class LocalExecutor:
    """Runs jobs as local processes, at most `max_parallel` at a time (see the module docstring);
    implements `compute.base.Executor` (external ids are pids).

    jobs_dir: where `<job_id>/` directories go (an existing one for the same id is replaced).
    pid_dir: where running jobs are recorded for `pids.kill_recorded` (None: not recorded).
    gpus: the devices (`compute.gpus`) handed to jobs asking `resources.gpus`: each such job waits
    for its own devices, sees them in CUDA_VISIBLE_DEVICES and gets /dev/nvidia* in its sandbox.
    keep_end: an output over its cap keeps its last `output_cap_bytes` on disk instead of its first
    (streams.CappedOutput; the agent executor's legs, whose end says how they ended).
    `cancel()` with no ids is final: once called, every later batch ends all cancelled ("not
    started").
    """

    backend = "local"
    jobs_outlive_kernel = False  # a job's pipes die with its kernel
    external_ids_are_pids = True
    token: str | None = None  # local jobs have no scheduler name

    def __init__(self, jobs_dir: Path, max_parallel: int, pid_dir: Path | None = None,
                 gpus: Sequence[str | int] = (), keep_end: bool = False):
        if max_parallel < 1:
            raise RatchetError(
                "compute.max_parallel", f"compute.max_parallel is {max_parallel}; it must be >= 1"
            )
        self.jobs_dir = Path(jobs_dir)
        self.max_parallel = max_parallel
        self.pid_dir = Path(pid_dir) if pid_dir is not None else None
        self.gpu_pool = GpuPool(gpus)
        self.keep_end = keep_end
        self.slots = _Slots(max_parallel)
        self._cancelled = False
        self._cancel_ids: set[str] = set()
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)

    def cancel(self, ids: Iterable[str] | None = None) -> None:
        """Kill the named running jobs (all when `ids` is None: then start no other either); they
        end `cancelled`. Safe from a signal handler or another thread: it only sets flags and
        writes one byte to a pipe."""
        if ids is None:
            self._cancelled = True
        else:
            self._cancel_ids.update(ids)
        if self._closed:
            return
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def is_cancelled(self, job_id: str) -> bool:
        """Whether `cancel` was called for every job or for this one."""
        return self._cancelled or job_id in self._cancel_ids

    def close(self) -> None:
        """Release the executor's wake pipe (idempotent; call when no `wait` is in progress)."""
        if self._closed:
            return
        self._closed = True
        os.close(self._wake_r)
        os.close(self._wake_w)

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def run(
        self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None, on_result: OnResult | None = None
    ) -> list[JobResult]:
        """Submit and wait (`compute.base.run_jobs`)."""
        return run_jobs(self, specs, on_submit, on_result)

    def submit(
        self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None, on_result: OnResult | None = None
    ) -> Batch:
        """Start up to `max_parallel` worker threads on `specs`; the processes start at once (a
        capped group's jobs as its window allows).
        Raises RatchetError `job.bad_id` / `job.duplicate_id` / `compute.closed`."""
        check_ids(specs)
        if self._closed:
            raise RatchetError(
                "compute.closed", "this executor was closed", hint="create a new LocalExecutor"
            )
        events: queue.Queue = queue.Queue()
        todo = _Todo(specs)
        threads = [
            threading.Thread(
                target=self._worker, args=(todo, events), daemon=True, name=f"ratchet-job-{i}"
            )
            for i in range(min(self.max_parallel, len(specs)))
        ]
        for thread in threads:
            thread.start()
        pending = _Pending(list(specs), events, threads, on_submit, on_result)
        return Batch(tuple(s.job_id for s in specs), pending)

    def wait(self, batch: Batch) -> list[JobResult]:
        """Block until every job of `batch` has a result; results in submission order. Callbacks
        run on this thread. If this thread is interrupted (KeyboardInterrupt) or a callback raises,
        running jobs are killed first."""
        pending: _Pending | None = batch.handle
        if pending is None:
            return []
        results: list[JobResult | None] = [None] * len(pending.specs)
        try:
            left = len(pending.specs)
            while left:
                try:
                    kind, key, value = pending.events.get(timeout=0.5)
                except queue.Empty:
                    continue
                if kind == "start" and pending.on_submit is not None:
                    pending.on_submit(key, str(value))
                elif kind == "result":
                    results[key] = value
                    left -= 1
                    if pending.on_result is not None:
                        pending.on_result(value)
        except BaseException:
            self.cancel()
            raise
        finally:
            for thread in pending.threads:
                thread.join()
        return [r for r in results if r is not None]

    def probe_sandbox(self, mode: SandboxSetting) -> SandboxMode:
        """The sandbox jobs run under on this machine (`sandbox.resolve_mode`). Raises SandboxError
        `sandbox.unavailable` when mode is bwrap and bwrap does not work here."""
        return resolve_mode(mode)

    def reattach(self, recorded: Mapping[str, str], on_result: OnResult | None = None) -> Batch:
        """A local job outlives no kernel usefully (its pipes died with it): kill every process of
        the recorded jobs (checked against their start marker, so a reused pid is spared) and
        return an empty batch; the kernel runs them again."""
        if self.pid_dir is not None:
            pids.kill_recorded(self.pid_dir)
        pids.kill_marked_under(self.jobs_dir)
        return Batch(())

    def _worker(self, todo: _Todo, events: queue.Queue) -> None:
        while True:
            item = todo.take()
            if item is None:
                return
            index, spec = item
            if self.is_cancelled(spec.job_id) or not self.slots.acquire(
                    spec.background, functools.partial(self.is_cancelled, spec.job_id)):
                result = not_started(spec)
            else:
                try:
                    result = self._run_one(spec, events)
                except Exception as exc:  # never leave the kernel waiting on a job that has no result
                    result = unknown_result(spec, f"the executor failed: {type(exc).__name__}: {exc}")
                finally:
                    self.gpu_pool.release(spec.job_id)
                    self.slots.release()
            todo.done(spec)
            events.put(("result", index, result))

    def _acquire_gpus(self, spec: JobSpec) -> tuple[str, ...] | None:
        """Wait for `spec.resources.gpus` free devices (() for none); None when cancelled meanwhile.
        Raises RatchetError `compute.gpus_too_few` when fewer are declared."""
        while True:
            devices = self.gpu_pool.acquire(spec.job_id, spec.resources.gpus)
            if devices is not None:
                return devices
            if self.is_cancelled(spec.job_id):
                return None
            time.sleep(GPU_WAIT_S)

    def _run_one(self, spec: JobSpec, events: queue.Queue) -> JobResult:
        files = JobFiles.of(self.jobs_dir, spec.job_id)
        job_dir = files.dir
        if job_dir.is_symlink():
            job_dir.unlink()
        elif job_dir.exists():  # a re-run (e.g. after a resume) replaces what a previous run left
            shutil.rmtree(job_dir)
        scratch = files.scratch
        scratch.mkdir(parents=True)
        env = {**spec.env, "HOME": str(scratch.resolve()), "TMPDIR": str(scratch.resolve())}
        devices = self._acquire_gpus(spec)
        if devices is None:
            shutil.rmtree(job_dir, ignore_errors=True)
            return not_started(spec)
        if spec.resources.gpus:
            env.update(gpu_env(devices))
        argv = list(spec.argv)
        if spec.sandbox.mode == "bwrap":
            argv = wrap_argv(
                argv, workdir=spec.workdir, scratch=scratch, network=spec.sandbox.network, env=env,
                read_only=spec.sandbox.read_only, read_only_root=spec.sandbox.read_only_root,
                devices=gpu_device_nodes() if spec.resources.gpus else (),
            )
        outputs = (
            CappedOutput(files.stdout, spec.output_cap_bytes, self.keep_end),
            CappedOutput(files.stderr, spec.output_cap_bytes, self.keep_end),
        )
        try:
            link = ExecutorLink(self.pid_dir, self._wake_r, self.is_cancelled)
            result = JobProcess(link, spec, argv, env, outputs, str(scratch.resolve())).run(events)
        finally:
            for out in outputs:
                out.close()
            shutil.rmtree(scratch, ignore_errors=True)
        write_result(files.result, result)
        if spec.artifacts is not None and result.state != "cancelled":
            collect_artifacts(spec.workdir, spec.artifacts)
        return result
