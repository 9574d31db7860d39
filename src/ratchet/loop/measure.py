"""The one runner: planned jobs through a target's tasks onto the executor, with a clean checkout
per task, the measurement cache, and a ledger event before and after every task (the shell around
the gate; decides nothing).

A task already finished in the ledger is reused, never re-run (resume); a cached measurement is
recorded as a `job.finished` charged 0 units; every other task is submitted, recorded as
`job.started` with its external id (a pid, a scheduler's job id) and `job.finished` when it ends.
A task cancelled by a stop (Ctrl-C, SIGTERM) is recorded `job.finished` state `cancelled` (no
job-unit: the unit is charged when it runs again; the seconds it ran), never judged: a resume runs
it again as a fresh job (same unit, same seed), so no later kernel re-attaches to a task the run
itself cancelled. A task whose end left no trace at all (a scheduler forgot it and its wrapper left no
outcome: `JobResult.rerun`) is run once more at once as a fresh job (same unit, same seed, a new
`job.started`); a second such end is recorded `unknown`.
Checkouts live under `<work_dir>/<job_id>/` and are removed when the job ends, whatever happened.
A batch reads each of its trees from git once and copies it per job (`workspace.checkouts`).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from msgspec import UNSET

from ratchet.compute.base import Executor, JobResult
from ratchet.compute.cache import MeasurementCache
from ratchet.core.payloads import JobFinished, JobStarted, Payload
from ratchet.core.plan import PlannedJob
from ratchet.core.vocab import JobStage, Variant
from ratchet.targets.base import Jobs, Task, TaskOutcome, UnitResult
from ratchet.workspace.checkouts import CheckoutPool
from ratchet.workspace.git import Git

Record = Callable[[Payload], None]
"""Appends one ledger event."""

Progress = Callable[[int, int], None]
"""Called with (units finished, units asked) as tasks end."""


class Interrupted(Exception):
    """Jobs were cancelled (Ctrl-C or a stop): nothing partial was recorded as finished."""


class Runner:
    """Measures planned jobs of one target (see the module docstring).

    done: job_id -> `job.finished` payload already in the ledger (reused, never re-run); cache: the
    measurement cache (None: off); progress: see Progress; running: job_id -> external id of jobs a
    previous kernel started and never saw finish (collected when they outlive their kernel, never
    resubmitted). `results`: job_id -> the JobResult of each job this runner ran and saw end (jobs
    reused from the ledger or the cache have none).
    """

    def __init__(self, *, git: Git, executor: Executor, target: Jobs, work_dir: Path, record: Record,
                 cache: MeasurementCache | None = None, done: Mapping[str, JobFinished] | None = None,
                 progress: Progress | None = None, running: Mapping[str, Any] | None = None):
        self.git = git
        self.executor = executor
        self.target = target
        self.work_dir = Path(work_dir)
        self.record = record
        self.cache = cache
        self.done = dict(done or {})
        self.running = {job_id: str(ext) for job_id, ext in (running or {}).items() if ext is not None}
        self.progress = progress
        self.results: dict[str, JobResult] = {}
        self._lock = threading.Lock()

    def measure_jobs(self, jobs: Sequence[PlannedJob], *, attempt: int, stage: str,
                     stop_on_failure: bool = False) -> dict[str, UnitResult]:
        """Measure `jobs`; returns planned job_id -> UnitResult for every job. `stop_on_failure`
        (one look of a plan): once a candidate job fails, the jobs not yet ended are cancelled and
        recorded `skipped` (Target.skipped; a target that never skips runs them all). Raises
        Interrupted when the executor was cancelled otherwise (tasks that finished are recorded)."""
        out: dict[str, UnitResult] = {}
        todo: list[Task] = []
        for task in self.target.tasks(jobs):
            outcome = self._known(task, attempt, stage)
            if outcome is None:
                todo.append(task)
            else:
                out.update(outcome.results)
        self._progress(len(out), len(jobs))
        why = candidate_failure(out.values()) if stop_on_failure else None
        if todo and why is not None and not self._skippable(todo, why):
            why = None
        if todo:  # `why`: a resume after the failure was recorded: the rest is skipped, none submitted
            self._run(todo, out, attempt=attempt, stage=stage, total=len(jobs), stop_on_failure=stop_on_failure,
                      skip=why)
        return out

    def _skippable(self, tasks: Sequence[Task], why: str) -> bool:
        """Whether the target records skipped tasks (an examples look always runs to its end)."""
        return self.target.skipped(tasks[0], None, why) is not None

    def _ended_skipped(self, task: Task, result: JobResult | None, why: str, out: dict[str, UnitResult],
                       attempt: int, stage: str, total: int) -> None:
        outcome = self.target.skipped(task, result, why)
        assert outcome is not None  # _skippable said so before anything was skipped
        self._finished(outcome, attempt, stage)
        out.update(outcome.results)
        self._progress(len(out), total)

    def _ended_cancelled(self, task: Task, result: JobResult, attempt: int, stage: str) -> None:
        """Record a task a stop cancelled (`cancelled`, not judged, run again by a resume): no
        job-unit (charged when it runs again), the seconds it ran (none if it never started)."""
        outcome = self.target.read(task, result)
        record = dict(outcome.record, state="cancelled", value=None, units_charged=0)
        self._finished(TaskOutcome({}, record), attempt, stage)

    def _known(self, task: Task, attempt: int, stage: str) -> TaskOutcome | None:
        """A task's outcome without running it: recorded (resume) or cached (recorded now)."""
        if task.job_id in self.done and self.done[task.job_id].state != "cancelled":  # cancelled: runs again
            reused = self.target.reuse(task, self.done[task.job_id].to_data())
            if reused is not None:
                return reused
        key = self.target.cache_key(task) if self.cache is not None else None
        hit = self.cache.get(key) if key is not None and self.cache is not None else None
        outcome = self.target.from_cache(task, hit) if hit else None
        if outcome is not None:
            self._finished(outcome, attempt, stage)
        return outcome

    def _run(self, todo: list[Task], out: dict[str, UnitResult], *, attempt: int, stage: str, total: int,
             stop_on_failure: bool = False, skip: str | None = None) -> None:
        """Run `todo` (re-attaching those a previous kernel left running on a scheduler). `skip`: the
        candidate already failed in this look: re-attached jobs are cancelled, none is submitted, and
        every one ends `skipped` with that reason."""
        by_id = {task.job_id: task for task in todo}
        ended: set[str] = set()
        # job_id -> why: cancelled, or never submitted, because the candidate failed in this look
        skipping: dict[str, str] = dict.fromkeys(by_id, skip) if skip else {}

        started: set[str] = set()
        rerun: set[str] = set()  # ran once with no trace of their end: run again once
        again: list[Task] = []

        def on_submit(job_id: str, external_id: str) -> None:
            started.add(job_id)
            task = by_id[job_id]
            self._record(JobStarted(job_id=job_id, attempt=attempt, stage=cast(JobStage, stage),
                                    variant=cast(Variant, task.variant), unit=task.jobs[0].unit,
                                    external_id=external_id, backend=self.executor.backend,
                                    pid=int(external_id) if self.executor.external_ids_are_pids else UNSET))

        def on_result(result: JobResult) -> None:
            task = by_id[result.job_id]
            shutil.rmtree(self.work_dir / task.job_id, ignore_errors=True)  # its task ended: while the others run
            if result.rerun and result.job_id not in rerun and result.job_id not in skipping:
                rerun.add(result.job_id)  # nothing known of its end: once more as a fresh job, same unit and seed
                again.append(task)
                return
            ended.add(result.job_id)
            if result.state == "cancelled":
                if result.job_id in skipping:
                    self._ended_skipped(task, result, skipping[result.job_id], out, attempt, stage, total)
                elif result.job_id in recorded or result.job_id in started:  # one never started left no trace
                    self._ended_cancelled(task, result, attempt, stage)
                return
            self.results[result.job_id] = result
            outcome = self.target.read(task, result)
            if result.requeues:
                outcome = TaskOutcome(outcome.results, {**outcome.record, "requeues": result.requeues})
            self._finished(outcome, attempt, stage)
            self._store(task, outcome)
            out.update(outcome.results)
            self._progress(len(out), total)
            why = candidate_failure(outcome.results.values()) if stop_on_failure and not skipping else None
            rest = [job_id for job_id in by_id if job_id not in ended]
            if why is not None and rest and self._skippable([by_id[rest[0]]], why):
                skipping.update(dict.fromkeys(rest, why))
                self.executor.cancel(rest)  # pending ones never start; a Slurm array's tasks are scancelled

        recorded = {t.job_id: self.running[t.job_id] for t in todo if t.job_id in self.running}
        results: list[JobResult] = []
        if recorded and self.executor.jobs_outlive_kernel:
            batch = self.executor.reattach(recorded, on_result)
            if skipping:
                self.executor.cancel(list(batch.job_ids))
            results += self.executor.wait(batch)
            todo = [t for t in todo if t.job_id not in batch.job_ids]
        while True:
            todo += again
            again.clear()
            if skipping:  # the candidate failed (among the re-attached jobs, or before): the rest never starts
                why = next(iter(skipping.values()))
                for task in todo:
                    self._ended_skipped(task, None, why, out, attempt, stage, total)
                todo = []
            if not todo:
                break
            results += self._submit(todo, on_submit, on_result)
            todo = []
        if any(r.state == "cancelled" and r.job_id not in skipping for r in results):
            raise Interrupted("jobs were cancelled")

    def _submit(self, todo: Sequence[Task], on_submit: Callable[[str, str], None],
                on_result: Callable[[JobResult], None]) -> list[JobResult]:
        """Check out and submit `todo`, wait for them; their results (checkouts removed)."""
        checkouts = [self.work_dir / task.job_id for task in todo]
        try:
            with CheckoutPool(self.git, self.work_dir, self.target.exclude) as pool:
                specs = [self.target.spec(task, self._checkout(pool, task)) for task in todo]
                batch = self.executor.submit(specs, on_submit, on_result)
            return self.executor.wait(batch)  # the templates were removed while the first jobs ran
        finally:
            for checkout in checkouts:
                shutil.rmtree(checkout, ignore_errors=True)

    def _checkout(self, pool: CheckoutPool, task: Task) -> Path:
        checkout = self.work_dir / task.job_id
        if checkout.exists():  # a partial checkout of a killed kernel: start from scratch
            shutil.rmtree(checkout)
        pool.checkout(task.tree, checkout)
        return checkout

    def _finished(self, outcome: TaskOutcome, attempt: int, stage: str) -> None:
        finished = JobFinished(**{**outcome.record, "attempt": attempt, "stage": stage})
        self._record(finished)
        self.done[finished.job_id] = finished

    def _store(self, task: Task, outcome: TaskOutcome) -> None:
        if self.cache is None:
            return
        key = self.target.cache_key(task)
        entry = self.target.cache_entry(outcome)
        if key is not None and entry is not None:
            self.cache.put(key, entry)

    def _record(self, payload: Payload) -> None:
        with self._lock:
            self.record(payload)

    def _progress(self, finished: int, total: int) -> None:
        if self.progress is not None:
            self.progress(finished, total)


def candidate_failure(results: Iterable[UnitResult]) -> str | None:
    """Why the rest of a look is skipped when a candidate unit among `results` failed (the look's
    verdict is then `candidate_failed`, core.gate), or None when none did."""
    for r in results:
        if r.variant == "candidate" and r.failed:
            return f"skipped: the candidate failed on unit {r.unit} ({r.job_id}) in this look"
    return None
