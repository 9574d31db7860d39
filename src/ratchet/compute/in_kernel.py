"""The in-kernel executor (`backend = "kernel"`): jobs that are the kernel's own work, not processes.

A prompt solution's shards (docs/prompts.md) are model calls the kernel makes itself: a job has
neither the API key nor the network. This executor runs each JobSpec through a `Work` function in
a thread of the kernel (at most `max_parallel` at once), writes what it returns as the job's
`stdout` in `<jobs_dir>/<job_id>/` and reports a JobResult like any executor, so the one runner
records `job.started` / `job.finished` for these jobs as for any other (the ledger, resume and the
gate are unchanged). A job is never a process: its external id is `kernel:<job_id>`, and a
resumed kernel runs again the jobs a dead one never finished (`jobs_outlive_kernel` False); the
work itself keeps what must not be paid twice (the reply cache).

Effects: threads, and the job's files under `jobs_dir`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ratchet.compute.base import (
    TAIL_BYTES,
    Batch,
    JobResult,
    JobSpec,
    OnResult,
    OnSubmit,
    SandboxMode,
    SandboxSetting,
    check_ids,
)
from ratchet.core.errors import RatchetError
from ratchet.core.jobfiles import STDERR_NAME, STDOUT_NAME
from ratchet.core.vocab import JobState

Cancelled = Callable[[], bool]
"""Asked by a Work function between its steps: True once its job was cancelled."""


@dataclass(frozen=True)
class WorkDone:
    """What a Work function returns: the job's `stdout` bytes (one JSON record per line for a
    prompt shard), and `error`: "" when the work ran, else why it could not (the job ends `failed`
    with that reason)."""

    stdout: bytes
    error: str = ""


Work = Callable[[JobSpec, Cancelled], WorkDone]
"""Does one job's work in the kernel. Must not raise for anything a job's input can cause."""

EXTERNAL_PREFIX = "kernel:"
"""External ids of in-kernel jobs: `kernel:<job_id>`."""


class InKernelExecutor:
    """Runs jobs as `work(spec, cancelled)` calls in kernel threads (see the module docstring);
    implements `compute.base.Executor`. `cancel()` with no ids is final, as for the local executor.
    Raises RatchetError `compute.max_parallel` for max_parallel < 1."""

    backend = "kernel"
    jobs_outlive_kernel = False
    external_ids_are_pids = False
    token: str | None = None  # the kernel's own work has no scheduler name

    def __init__(self, jobs_dir: Path, max_parallel: int, work: Work):
        if max_parallel < 1:
            raise RatchetError("compute.max_parallel", f"compute.max_parallel is {max_parallel}; it must be >= 1")
        self.jobs_dir = Path(jobs_dir)
        self.max_parallel = max_parallel
        self.work = work
        self._cancelled = False
        self._cancel_ids: set[str] = set()

    def probe_sandbox(self, mode: SandboxSetting) -> SandboxMode:
        """No process runs: nothing to isolate (`none`, whatever `sandbox.mode`)."""
        return "none"

    def cancel(self, ids: Iterable[str] | None = None) -> None:
        """Mark the named jobs (all when None: for good) cancelled; their work stops at its next step."""
        if ids is None:
            self._cancelled = True
        else:
            self._cancel_ids.update(ids)

    def is_cancelled(self, job_id: str) -> bool:
        """Whether `cancel` was called for every job or for this one."""
        return self._cancelled or job_id in self._cancel_ids

    def close(self) -> None:
        """Nothing to release."""

    def reattach(self, recorded: Mapping[str, str], on_result: OnResult | None = None) -> Batch:
        """A dead kernel's in-kernel jobs died with it: nothing to collect (they run again)."""
        return Batch(())

    def submit(self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None,
               on_result: OnResult | None = None) -> Batch:
        """Start up to `max_parallel` threads on `specs`. Raises RatchetError `job.bad_id` /
        `job.duplicate_id`."""
        check_ids(specs)
        events: queue.Queue = queue.Queue()
        todo: queue.Queue = queue.Queue()
        for i, spec in enumerate(specs):
            todo.put((i, spec))
        threads = [threading.Thread(target=self._worker, args=(todo, events), daemon=True,
                                    name=f"ratchet-kernel-job-{k}") for k in range(min(self.max_parallel, len(specs)))]
        for thread in threads:
            thread.start()
        return Batch(tuple(s.job_id for s in specs), (len(specs), events, threads, on_submit, on_result))

    def wait(self, batch: Batch) -> list[JobResult]:
        """Block until every job of `batch` ended; results in submission order, callbacks on this thread."""
        if batch.handle is None:
            return []
        n, events, threads, on_submit, on_result = batch.handle
        results: list[JobResult | None] = [None] * n
        try:
            left = n
            while left:
                try:
                    kind, index, value = events.get(timeout=0.5)
                except queue.Empty:
                    continue
                if kind == "start" and on_submit is not None:
                    on_submit(value, EXTERNAL_PREFIX + value)
                elif kind == "result":
                    results[index] = value
                    left -= 1
                    if on_result is not None:
                        on_result(value)
        except BaseException:
            self.cancel()
            raise
        finally:
            for thread in threads:
                thread.join()
        return [r for r in results if r is not None]

    def _worker(self, todo: queue.Queue, events: queue.Queue) -> None:
        while True:
            try:
                index, spec = todo.get_nowait()
            except queue.Empty:
                return
            if self.is_cancelled(spec.job_id):
                events.put(("result", index, _ended(spec, "cancelled", "cancelled before it started", 0.0, b"", None)))
                continue
            events.put(("start", index, spec.job_id))
            events.put(("result", index, self._run_one(spec)))

    def _run_one(self, spec: JobSpec) -> JobResult:
        job_dir = self.jobs_dir / spec.job_id
        job_dir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            done = self.work(spec, lambda: self.is_cancelled(spec.job_id))
        except Exception as exc:  # a bug in the work must end its job, never the kernel's wait
            done = WorkDone(b"", f"the kernel's work raised {type(exc).__name__}: {exc}")
        elapsed = time.monotonic() - start
        stdout = done.stdout[: spec.output_cap_bytes]
        path = job_dir / STDOUT_NAME
        path.write_bytes(stdout)
        (job_dir / STDERR_NAME).write_text(done.error, encoding="utf-8")
        if self.is_cancelled(spec.job_id):
            return _ended(spec, "cancelled", "cancelled", elapsed, stdout, path)
        if done.error:
            return _ended(spec, "failed", done.error, elapsed, stdout, path)
        return _ended(spec, "ok", "done", elapsed, stdout, path)


def _ended(spec: JobSpec, state: str, reason: str, elapsed_s: float, stdout: bytes, path: Path | None) -> JobResult:
    return JobResult(job_id=spec.job_id, state=cast(JobState, state), exit_code=0 if state == "ok" else None,
                     signal=None, elapsed_s=elapsed_s, cpu_s=0.0,
                     stdout_tail=stdout[-TAIL_BYTES:].decode("utf-8", "replace"),
                     stderr_tail="" if state == "ok" else reason, stdout_truncated=False, stderr_truncated=False,
                     reason=reason, stdout_path=path, external_id=EXTERNAL_PREFIX + spec.job_id)
