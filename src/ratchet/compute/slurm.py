"""The Slurm executor: each `submit` becomes one held job array (several, one after the other, past
the cluster's MaxArraySize), released once every task's id was reported through `on_submit` (the
kernel records it in the ledger first, so no job runs unrecorded). Submitting (job directories,
the wrapper, sbatch) is `slurm_arrays.py`; the scheduler's commands `slurm_calls.py`; a task's
files and record read into its result `slurm_tasks.py`; this module waits, re-attaches and cancels.

Every task runs `slurm_task.py` (copied to `jobs_dir/.slurm/task.py`), which runs the job as the
local executor would (its argv in its workdir with its exact environment, stdin from a file, the
same bwrap sandbox, capped outputs, stopped at its timeout) and writes `jobs_dir/<job_id>/
outcome.json`. `wait` polls the scheduler with one `scontrol -o show job <array>` per unfinished
array per round, the interval growing by BACKOFF_FACTOR per round from `poll_min_s` to `poll_max_s`
(so a batch running T seconds costs at most `max_poll_rounds(T)` calls per array, however many
tasks it has; both intervals kept at most half the cluster's MinJobAge, and a poll brought forward
when every open task has written its outcome file), until every task is in a terminal state;
then the outcome file and the scheduler's word make the JobResult (`slurm_states.compose_result`), also written to
`jobs_dir/<job_id>/result.json` as locally, and the job's artifacts (`spec.artifacts`) are
collected from its workdir. `scheduler_calls` counts every sbatch, scontrol and scancel call.

Our jobs only: every array is named with the executor's `token` (`--job-name`, placed after
`extra_args` so they cannot override it), unique to its jobs_dir, hence to the run. Reattach and
every poll read the name back from `scontrol show job` and refuse an array of another name
(SchedulerError `slurm.foreign_job`); scancel names only arrays this executor submitted or
verified as its own.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ratchet.compute.artifacts import collect_artifacts
from ratchet.compute.base import (
    Batch,
    JobResult,
    JobSpec,
    OnResult,
    OnSubmit,
    Resources,
    SandboxMode,
    SandboxSetting,
    SandboxSpec,
    check_ids,
    run_jobs,
)
from ratchet.compute.env import default_path
from ratchet.compute.outcome import write_result
from ratchet.compute.sandbox import PROBE_TIMEOUT_S
from ratchet.compute.slurm_arrays import (
    SLURM_DIR,
    install_wrapper,
    job_shape,
    shape_problem,
    submit_array,
)
from ratchet.compute.slurm_calls import Scheduler, SchedulerError, run_token
from ratchet.compute.slurm_states import (
    DEFAULT_MAX_ARRAY_SIZE,
    TaskRecord,
    index_ranges,
    max_array_size,
    min_job_age_s,
    parse_show_job,
    poll_bounds,
    poll_ceiling_s,
    split_arrays,
    unavailable_nodes,
    whole,
)
from ratchet.compute.slurm_tasks import (
    BACKOFF_FACTOR,
    SlurmBatch,
    Task,
    read_outcome,
    reattached_task,
    task_result,
    wait_for_poll,
)
from ratchet.core.contract import SlurmSection
from ratchet.core.errors import RatchetError, SandboxError
from ratchet.core.jobfiles import JobFiles

__all__ = ["SchedulerError", "SlurmExecutor", "run_token"]

FORGOTTEN_GRACE_S = 10.0
"""Seconds a task the scheduler no longer knows may take to show its outcome file (a shared
filesystem's attribute cache) before it is declared `unknown`."""

SCHEDULER_UNREACHABLE_S = 900.0
"""Seconds of failed scheduler polls after which the unfinished tasks end `unknown`."""


class SlurmExecutor:
    """Runs jobs as Slurm array tasks (see the module docstring); implements
    `compute.base.Executor` (external ids are `<array id>_<index>`).

    jobs_dir: where `<job_id>/` directories go; must be visible at the same path on the nodes.
    max_parallel: K, the run's cap on tasks running at once. workers: the campaign's
        `agent.workers`, each of which may have an array in flight: each array is throttled to
        `%max(1, K // workers)` (`throttle`; a capped group's own cap when smaller), so N arrays
        together run at most K tasks (while K >= workers).
    settings: `[compute.slurm]` of the contract (partition, account, qos, extra_args, poll, grace).
    scheduler_calls: how many scheduler commands this executor ran (`calls` by command name).
    token: the job name of its arrays, checked on reattach and every poll: the one the run's
        ledger recorded (`run.started` job_token) when given, else `run_token(jobs_dir)`.
    poll_below_min_job_age: keep the poll interval below the cluster's MinJobAge (`poll_bounds`);
        early_polls: bring a poll forward when a task's outcome file appears (`_sleep`); tests turn
        both off to let the controller forget an ended task before it is polled.
    """

    backend = "slurm"
    jobs_outlive_kernel = True  # the scheduler keeps running them
    external_ids_are_pids = False

    def __init__(self, jobs_dir: Path, max_parallel: int, settings: SlurmSection | None = None,
                 token: str | None = None, workers: int = 1):
        if max_parallel < 1:
            raise RatchetError("compute.max_parallel", f"compute.max_parallel is {max_parallel}; it must be >= 1")
        self.jobs_dir = Path(jobs_dir)
        self.max_parallel = max_parallel
        self.throttle = max(1, max_parallel // max(1, workers))  # each worker's array: its share of the cap
        self.settings = settings or SlurmSection()
        self.scheduler = Scheduler()
        self._known: dict[str, str] = {}  # job_id -> external id, for cancel(ids)
        self._arrays: set[str] = set()
        self._ours: set[str] = set()  # arrays submitted here or verified by name: the only ones scancelled
        self.token = token or run_token(self.jobs_dir)
        self._cancelled: set[str] = set()
        self._unschedulable: set[str] = set()  # arrays cancelled because they can never start
        self._max_array_size: int | None = None  # read once (`_array_limit`)
        self.poll_below_min_job_age = True  # tests turn it off to let the controller forget a task
        self.early_polls = True  # and this (`_sleep`)
        self._wake = threading.Event()
        self._stopping = False  # cancel() of everything was called: a stop
        self._closed = False

    @property
    def calls(self) -> Counter[str]:
        """Scheduler commands run so far, by command name."""
        return self.scheduler.calls

    @property
    def scheduler_calls(self) -> int:
        """Scheduler commands run so far (sbatch, scontrol, scancel)."""
        return sum(self.calls.values())

    def run(self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None,
            on_result: OnResult | None = None) -> list[JobResult]:
        """Submit and wait (`compute.base.run_jobs`)."""
        return run_jobs(self, specs, on_submit, on_result)

    # --- submit --------------------------------------------------------------------------------

    def submit(self, specs: Sequence[JobSpec], on_submit: OnSubmit | None = None,
               on_result: OnResult | None = None) -> Batch:
        """Write each job's directory, submit one held array per group of jobs asking the same
        resources and walltime (normally one; a capped group of jobs, `spec.group_cap`, is an array
        of its own throttled `%K` to its cap; a group larger than the cluster's MaxArraySize is
        split into the fewest arrays that fit, each starting after the previous one ended so the
        throttle holds across them: `split_arrays`), report `<array>_<index>` through `on_submit` for
        every task, then release the array. If `on_submit` raises, the array is cancelled before
        anything ran and the error propagates. Raises RatchetError `job.bad_id`,
        `job.duplicate_id`, `compute.closed`, SchedulerError `slurm.sbatch` / `slurm.release`."""
        check_ids(specs)
        if self._closed:
            raise RatchetError("compute.closed", "this executor was closed", hint="create a new SlurmExecutor")
        wrapper = install_wrapper(self.jobs_dir)
        groups: dict[tuple, list[JobSpec]] = {}
        for spec in specs:  # a capped group (`spec.group_cap`) is an array of its own, throttled to its cap
            groups.setdefault((job_shape(spec, self.settings), spec.group_cap), []).append(spec)
        batch = SlurmBatch([], on_result)
        try:
            for (resources, cap), group in groups.items():
                throttle = min(self.throttle, cap[1]) if cap is not None else self.throttle
                after: str | None = None  # a split group's arrays run one after the other: one throttle
                for part in split_arrays(len(group), self._array_limit()):
                    array_id, tag = submit_array(self.scheduler, self.settings, self.jobs_dir, self.token, wrapper,
                                                 resources, group[part.start:part.stop], throttle, after,
                                                 self._array_limit())
                    self._arrays.add(array_id)
                    self._ours.add(array_id)
                    after = array_id
                    batch.arrays.append(array_id)
                    tasks = [Task(s.job_id, array_id, i, s.timeout_s, tag / f"{i}.log", s.workdir, s.artifacts)
                             for i, s in enumerate(group[part.start:part.stop])]
                    for task in tasks:
                        self._known[task.job_id] = task.external_id
                        if on_submit is not None:
                            on_submit(task.job_id, task.external_id)
                    self._release(array_id, tasks)
                    batch.tasks.extend(tasks)
        except BaseException:  # nothing unrecorded may run, nor anything of a submit that failed
            if batch.arrays:
                self._scancel(batch.arrays)
            raise
        by_id = {t.job_id: t for t in batch.tasks}
        batch.tasks = [by_id[s.job_id] for s in specs]
        return Batch(tuple(s.job_id for s in specs), batch)

    def _release(self, array_id: str, tasks: Sequence[Task]) -> None:
        """Release a held array whose tasks are recorded. A stop (`cancel()`) that came while it was
        being recorded already scancelled it: its tasks then end `cancelled` in `wait`, recorded as
        such, instead of the release's failure stopping the run unrecorded."""
        try:
            self.scheduler.call("release", ["scontrol", "release", array_id])
        except SchedulerError:
            if not self._stopping:
                raise
            self._cancelled.update(t.job_id for t in tasks)

    def _array_limit(self) -> int:
        """The most tasks one array may hold: `settings.max_array_size`, else the cluster's
        MaxArraySize (`cluster_config`), else DEFAULT_MAX_ARRAY_SIZE."""
        if self._max_array_size is None:
            found = self.settings.max_array_size
            if found is None:
                found = max_array_size(self.cluster_config())
            self._max_array_size = found or DEFAULT_MAX_ARRAY_SIZE
        return self._max_array_size

    def cluster_config(self) -> str:
        """`scontrol show config`, read once (`Scheduler.config`)."""
        return self.scheduler.config()

    def poll_bounds(self) -> tuple[float, float]:
        """(first, longest) poll interval in seconds: `poll_min_s` and `poll_max_s`, clamped below
        the cluster's MinJobAge (`slurm_states.poll_ceiling_s`) so that a task ending between two
        polls is seen before the controller forgets it (unless `poll_below_min_job_age` is off)."""
        s = self.settings
        if not self.poll_below_min_job_age:
            return s.poll_min_s, s.poll_max_s
        return poll_bounds(s.poll_min_s, s.poll_max_s, poll_ceiling_s(min_job_age_s(self.cluster_config())))

    def shape_problem(self, resources: Resources, timeout_s: float) -> str | None:
        """Whether a job of this shape could ever run on the cluster (`slurm_arrays.shape_problem`:
        None, or the scheduler's answer). Raises SchedulerError `slurm.test_only`."""
        return shape_problem(self.scheduler, self.settings, resources, timeout_s)

    # --- wait ----------------------------------------------------------------------------------

    def wait(self, batch: Batch) -> list[JobResult]:
        """Poll until every task of `batch` ended; results in submission order, each also written
        to `jobs_dir/<job_id>/result.json`. `on_result` runs on this thread as tasks end. If this
        thread is interrupted (KeyboardInterrupt) or a callback raises, the batch's unfinished
        tasks are cancelled (scancel) first."""
        pending: SlurmBatch | None = batch.handle
        if pending is None:
            return []
        try:
            self._poll_until_done(pending)
        except BaseException:
            self.cancel([t.job_id for t in pending.tasks if t.result is None])
            raise
        return [t.result for t in pending.tasks if t.result is not None]

    def _poll_until_done(self, batch: SlurmBatch) -> None:
        interval, longest = self.poll_bounds()
        failing_since: float | None = None
        while True:
            open_tasks = [t for t in batch.tasks if t.result is None]
            if not open_tasks:
                return
            failed = False
            by_array: dict[str, list[Task]] = {}
            for task in open_tasks:
                by_array.setdefault(task.array_id, []).append(task)
            for array_id, tasks in by_array.items():
                records = self._show_array(array_id)
                if records is None:
                    failed = True
                    continue
                for task in tasks:
                    self._settle(task, records.get(task.index), batch.on_result)
            now = time.monotonic()
            failing_since = (failing_since or now) if failed else None
            if failing_since is not None and now - failing_since > SCHEDULER_UNREACHABLE_S:
                for task in [t for t in batch.tasks if t.result is None]:
                    self._finish(task, None, None, batch.on_result)
                return
            if any(t.result is None for t in batch.tasks):
                wait_for_poll(self._wake, self.jobs_dir, batch, interval, self.early_polls)
                interval = min(longest, interval * BACKOFF_FACTOR)

    def _show_array(self, array_id: str) -> dict[int, TaskRecord] | None:
        """The array's task records ({} when the scheduler forgot the whole array; None when the
        scheduler could not be asked). Raises SchedulerError `slurm.foreign_job` when the array is
        not this run's (its name is not `token`)."""
        try:
            records = parse_show_job(self.scheduler.call("show", ["scontrol", "-o", "show", "job", array_id]))
        except SchedulerError as exc:
            if "Invalid job id" in exc.message:
                return {}
            return None
        self._check_ours(array_id, records)
        return records

    def _check_ours(self, array_id: str, records: Mapping[int, TaskRecord]) -> None:
        """Raise SchedulerError `slurm.foreign_job` unless every record is named `token`; an array
        whose name matches joins the arrays this executor may scancel."""
        for record in records.values():
            if record.name != self.token:
                self._ours.discard(array_id)
                raise SchedulerError(
                    "slurm.foreign_job",
                    f"Slurm job {array_id}_{record.index} is not this run's: it is named {record.name!r}, "
                    f"this run's jobs are named {self.token!r}",
                    hint="the ledger records an id the scheduler gave to another job: nothing was cancelled; "
                         "check `squeue`, and `ratchet abandon` the run if its jobs are gone")
        if records:
            self._ours.add(array_id)

    def _settle(self, task: Task, record: TaskRecord | None, on_result: OnResult | None) -> None:
        """Give `task` its result if it ended (or was forgotten for FORGOTTEN_GRACE_S), or if the
        scheduler says it can never start (`unschedulable`: its array is cancelled)."""
        if record is not None and record.base_state == "PENDING" and self._nodes_missing(record.reason):
            record = replace(record, nodes_missing=True)
        if record is not None and record.never_starts:
            self._refuse_array(task.array_id)
        elif record is not None and not record.terminal:
            task.missing_since = None
            return
        outcome = read_outcome(self.jobs_dir, task, record)
        if record is None and outcome is None:
            now = time.monotonic()
            task.missing_since = task.missing_since or now
            if now - task.missing_since < FORGOTTEN_GRACE_S:
                return
        self._finish(task, outcome, record, on_result)

    def _nodes_missing(self, reason: str) -> bool:
        """Whether a ReqNodeNotAvail `reason` names a node the cluster does not have
        (`Scheduler.node_names`; False when the nodes cannot be read)."""
        named = unavailable_nodes(reason)
        nodes = self.scheduler.node_names() if named else None
        return nodes is not None and bool(nodes) and any(name not in nodes for name in named)

    def _refuse_array(self, array_id: str) -> None:
        """Cancel an array whose tasks can never start (one scancel per array: its tasks share one
        shape, so none of them can)."""
        if array_id not in self._unschedulable:
            self._unschedulable.add(array_id)
            self._scancel([array_id])

    def _finish(self, task: Task, outcome: dict | None, record: TaskRecord | None,
                on_result: OnResult | None) -> None:
        files = JobFiles.of(self.jobs_dir, task.job_id)
        result = task_result(self.jobs_dir, task, outcome, record, task.job_id in self._cancelled)
        shutil.rmtree(files.scratch, ignore_errors=True)
        if files.dir.is_dir():
            write_result(files.result, result)
        if task.artifacts is not None and task.workdir is not None and result.state != "cancelled":
            collect_artifacts(task.workdir, task.artifacts)
        task.result = result
        if on_result is not None:
            on_result(result)

    def probe_sandbox(self, mode: SandboxSetting, timeout_s: float = PROBE_TIMEOUT_S) -> SandboxMode:
        """The sandbox jobs will run under on the nodes, checked by a preflight task that runs a
        sandboxed `python -c pass` there (under `jobs_dir/.slurm/probe/`): "bwrap" when it works
        and `mode` is auto or bwrap, "none" for none or auto without a working bwrap. Raises
        SandboxError `sandbox.unavailable` (with what the node said) when mode is bwrap and it does
        not work there; SchedulerError when the probe cannot be submitted."""
        if mode == "none":
            return "none"
        probe = (self.jobs_dir / SLURM_DIR / "probe").resolve()
        work = probe / "work"
        work.mkdir(parents=True, exist_ok=True)
        python = self.settings.python or sys.executable
        env = {"PATH": default_path(), "LANG": "C.UTF-8"}
        job = JobSpec(f"sandbox-probe-{secrets.token_hex(3)}", (python, "-c", "pass"), work, env, timeout_s,
                      sandbox=SandboxSpec("bwrap"))
        prober = SlurmExecutor(probe / "jobs", 1, self.settings)
        (result,) = prober.run([job])
        self.calls.update(prober.calls)
        self.calls["probe"] += 1
        if result.state == "ok":
            return "bwrap"
        if mode == "bwrap":
            raise SandboxError(
                "sandbox.unavailable",
                f"sandbox.mode is bwrap but the sandbox does not work on the Slurm nodes: {result.reason}: "
                f"{result.stderr_tail.strip()[-300:]}",
                hint='install bubblewrap on the nodes (and allow user namespaces), or set sandbox.mode = "auto"',
            )
        return "none"

    # --- reattach, cancel, close ---------------------------------------------------------------

    def reattach(self, recorded: Mapping[str, str], on_result: OnResult | None = None) -> Batch:
        """A batch of the recorded tasks (job_id -> `<array>_<index>`), running or finished, to be
        collected by `wait` without submitting anything; ids that are not Slurm task ids are left
        out (the kernel runs those again). Timeouts, workdirs and artifacts come from each job's
        task.json. Each array is checked first (one `scontrol show job`): Raises SchedulerError
        `slurm.foreign_job`, before anything is re-attached, when one is not this run's (see the
        module docstring); an array the scheduler forgot is collected from its outcome files and
        never scancelled. Tasks still held (a kernel killed between recording an array and
        releasing it) are released when recorded, and scancelled when not (they never ran; the
        kernel submits their jobs afresh). Raises SchedulerError `slurm.release` when a release
        fails."""
        tasks = []
        parsed: list[tuple[str, str, str, int]] = []
        for job_id, external in recorded.items():
            array_id, sep, index = external.partition("_")
            task = whole(index)
            if sep and whole(array_id) is not None and task is not None:
                parsed.append((job_id, external, array_id, task))
        shown = {array: self._show_array(array) for array in sorted({p[2] for p in parsed})}
        for array, records in shown.items():  # every array was checked ours before any is touched
            if records:
                self._release_held(array, records, {p[3] for p in parsed if p[2] == array})
        for job_id, external, array_id, position in parsed:
            tasks.append(reattached_task(self.jobs_dir, job_id, array_id, position))
            self._known[job_id] = external
            self._arrays.add(array_id)
        return Batch(tuple(t.job_id for t in tasks), SlurmBatch(tasks, on_result, sorted({t.array_id for t in tasks})))

    def _release_held(self, array_id: str, records: Mapping[int, TaskRecord], recorded: set[int]) -> None:
        """Release the held tasks (Reason JobHeldUser: sbatch --hold) of a re-attached array whose
        ids are `recorded`, scancel the held ones that are not."""
        held = {i for i, r in records.items() if r.base_state == "PENDING" and r.reason == "JobHeldUser"}
        if held & recorded:
            self.scheduler.call("release", ["scontrol", "release", f"{array_id}_[{index_ranges(held & recorded)}]"])
        if held - recorded:
            self._scancel([f"{array_id}_[{index_ranges(held - recorded)}]"])

    def cancel(self, ids: Iterable[str] | None = None) -> None:
        """scancel exactly the tasks of the named jobs (None: every array this executor submitted
        or re-attached) in one call; they end `cancelled` (unless already done). Job ids this
        executor does not know are ignored, and so are arrays not known to be this run's (forgotten
        by the scheduler when re-attached, or foreign)."""
        if ids is None:
            self._stopping = True
            targets = sorted(self._arrays & self._ours)
            self._cancelled.update(self._known)
        else:
            chosen = [j for j in ids if j in self._known]
            targets = [self._known[j] for j in chosen if self._known[j].partition("_")[0] in self._ours]
            self._cancelled.update(chosen)
        if targets:
            self._scancel(targets)
        self._wake.set()

    def _scancel(self, targets: Sequence[str]) -> None:
        try:
            self.scheduler.call("scancel", ["scancel", *targets])
        except SchedulerError:
            pass  # a task that ended meanwhile is not an error worth raising from a cancel

    def close(self) -> None:
        """Nothing is held between calls; later submits are refused (idempotent)."""
        self._closed = True

    def __enter__(self) -> SlurmExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
