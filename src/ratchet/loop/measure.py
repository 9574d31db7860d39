"""Running planned jobs: a clean checkout per job, the executor, metric parsing, the measurement
cache, and a ledger event before and after every job (the shell around the gate; decides nothing).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ratchet.compute.base import Executor, JobResult, JobSpec, Resources, SandboxSpec, run_jobs
from ratchet.compute.cache import MeasurementCache, cache_key
from ratchet.compute.local import job_env
from ratchet.core.contract import TargetSection
from ratchet.core.plan import PlannedJob
from ratchet.targets.benchmark import parse_metric
from ratchet.workspace.git import Git

Record = Callable[[str, Mapping[str, Any]], None]
"""Appends one ledger event (kind, data); thread-safe (the executor calls back from its threads)."""


class Interrupted(Exception):
    """Jobs were cancelled (Ctrl-C or a stop): nothing partial was recorded as finished."""


@dataclass(frozen=True)
class Measurement:
    """One job's outcome as the gate sees it.

    state: ok | failed | timeout | killed | cancelled | unknown | no_metric | bad_metric.
    value: the metric (raw, not direction-normalized) when state is ok. units_charged: job-units
    charged to the budget (0 for a cached measurement).
    """

    job_id: str
    variant: str
    unit: int
    seed: int
    state: str
    value: float | None
    reason: str
    elapsed_s: float
    cpu_s: float
    cached: bool
    units_charged: int

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Measurement:
        """Rebuild from a `job.finished` event's data (resume: finished jobs are never re-run)."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


class JobRunner:
    """Runs benchmark jobs of plans on an executor, recording `job.started` / `job.finished`.

    work_dir: where each job's clean checkout is made (`<work_dir>/<job_id>/`, removed after the
    job); done: job_id -> job.finished data already in the ledger (reused, never re-run); exclude:
    paths never written into a job's checkout; progress: called with (finished, total) as jobs end.
    """

    def __init__(
        self,
        *,
        git: Git,
        executor: Executor,
        target: TargetSection,
        sandbox: SandboxSpec,
        work_dir: Path,
        cache: MeasurementCache | None,
        record: Record,
        done: Mapping[str, Mapping[str, Any]] | None = None,
        exclude: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
    ):
        self.git = git
        self.executor = executor
        self.target = target
        self.sandbox = sandbox
        self.work_dir = work_dir
        self.cache = cache
        self.record = record
        self.done = dict(done or {})
        self.exclude = tuple(exclude)
        self.progress = progress
        self._lock = threading.Lock()
        self._planned: dict[str, PlannedJob] = {}

    def run(self, jobs: Sequence[PlannedJob], *, attempt: int, stage: str,
            commands: Mapping[str, tuple[str, float]] | None = None) -> dict[str, Measurement]:
        """Measure `jobs` (at most `max_parallel` at a time); returns job_id -> Measurement.
        `commands`: job_id -> (shell command, timeout in seconds) replacing the target's for every
        job (an agent's own experiments: never cached). Raises Interrupted when cancelled."""
        out: dict[str, Measurement] = {}
        todo: list[PlannedJob] = []
        self._planned.update({job.job_id: job for job in jobs})
        use_cache = commands is None
        for job in jobs:
            if job.job_id in self.done:
                out[job.job_id] = Measurement.from_record(self.done[job.job_id])
            elif use_cache and (hit := self._cached(job)) is not None:
                out[job.job_id] = self._finish(hit, attempt, stage)
            else:
                todo.append(job)
        total, finished = len(jobs), len(out)
        if self.progress:
            self.progress(finished, total)
        if not todo:
            return out
        specs = [self._spec(job, (commands or {}).get(job.job_id)) for job in todo]
        by_id = {job.job_id: job for job in todo}

        def on_start(job_id: str, pid: str) -> None:
            job = by_id[job_id]
            self._record("job.started", {"job_id": job_id, "attempt": attempt, "stage": stage,
                                         "variant": job.variant, "unit": job.unit, "pid": int(pid)})

        def on_result(result: JobResult) -> None:
            nonlocal finished
            if result.state == "cancelled":
                return
            m = self._measure(by_id[result.job_id], result)
            out[result.job_id] = self._finish(m, attempt, stage, use_cache)
            finished += 1
            if self.progress:
                self.progress(finished, total)

        try:
            results = run_jobs(self.executor, specs, on_start, on_result)
        finally:
            for spec in specs:
                shutil.rmtree(spec.workdir, ignore_errors=True)
        if any(r.state == "cancelled" for r in results):
            raise Interrupted("jobs were cancelled")
        return out

    def _record(self, kind: str, data: Mapping[str, Any]) -> None:
        with self._lock:
            self.record(kind, data)

    def _finish(self, m: Measurement, attempt: int, stage: str, cacheable: bool = False) -> Measurement:
        self._record("job.finished", {**asdict(m), "attempt": attempt, "stage": stage})
        self.done[m.job_id] = asdict(m)
        if cacheable and self.cache is not None and m.state == "ok" and not m.cached:
            self.cache.put(self._key(self._planned[m.job_id]),
                           {"state": "ok", "value": m.value, "elapsed_s": m.elapsed_s})
        return m

    def _key(self, job: PlannedJob) -> str:
        t = self.target
        return cache_key(
            tree=job.tree, command=t.command or "", seed=job.seed, seed_env=t.seed_env,
            env_set_by_ratchet=self._env(job), sandbox_mode=self.sandbox.mode, network=self.sandbox.network,
            timeout_s=t.timeout_s, resources=Resources(), metric=t.metric or "", kind=t.kind,
        )

    def _env(self, job: PlannedJob) -> dict[str, str]:
        return job_env(self.target.seed_env, job.seed, job.job_id, job.variant, str(job.unit), sandbox=self.sandbox)

    def _cached(self, job: PlannedJob) -> Measurement | None:
        if self.cache is None:
            return None
        hit = self.cache.get(self._key(job))
        if not hit or not isinstance(hit.get("value"), int | float):
            return None
        return Measurement(job.job_id, job.variant, job.unit, job.seed, "ok", float(hit["value"]),
                           "cached measurement", float(hit.get("elapsed_s", 0.0)), 0.0, True, 0)

    def _spec(self, job: PlannedJob, override: tuple[str, float] | None) -> JobSpec:
        checkout = self.work_dir / job.job_id
        if checkout.exists():  # a partial checkout of a killed kernel: start from scratch
            shutil.rmtree(checkout)
        checkout.parent.mkdir(parents=True, exist_ok=True)
        self.git.materialize_tree(job.tree, checkout, exclude=self.exclude)
        command, timeout_s = override or (self.target.command or "", self.target.timeout_s)
        return JobSpec(job_id=job.job_id, argv=("/bin/sh", "-c", command), workdir=checkout, env=self._env(job),
                       timeout_s=timeout_s, sandbox=self.sandbox)

    def _measure(self, job: PlannedJob, result: JobResult) -> Measurement:
        state, value, reason = result.state, None, result.reason
        if result.state == "ok":
            # The metric is on the LAST JSON line: past the output cap the file holds only the start,
            # so read the kept tail instead.
            capped = result.stdout_truncated or result.stdout_path is None
            stdout = result.stdout_tail if capped else result.stdout_path.read_text("utf-8", errors="replace")
            reading = parse_metric(stdout, self.target.metric or "")
            state, value, reason = reading.state, reading.value, reading.reason
        elif result.stderr_tail.strip():
            reason = f"{reason}; stderr: {result.stderr_tail.strip().splitlines()[-1][:200]}"
        return Measurement(job.job_id, job.variant, job.unit, job.seed, state, value, reason,
                           result.elapsed_s, result.cpu_s, False, 1)
