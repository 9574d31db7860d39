"""The Slurm executor: each `submit` becomes one held job array (several, one after the other, past
the cluster's MaxArraySize), released once every task's id was
reported through `on_submit` (the kernel records it in the ledger first, so no job runs unrecorded).

Every task runs `slurm_task.py` (copied to `jobs_dir/.slurm/task.py`), which runs the job as the
local executor would (its argv in its workdir with its exact environment, stdin from a file, the
same bwrap sandbox, capped outputs, stopped at its timeout) and writes `jobs_dir/<job_id>/
outcome.json`. `wait` polls the scheduler with one `scontrol -o show job <array>` per unfinished
array per round, the interval growing by BACKOFF_FACTOR per round from `poll_min_s` to `poll_max_s`
(so a batch running T seconds costs at most `max_poll_rounds(T)` calls per array, however many
tasks it has), until every task is in a terminal state; then the outcome file and the scheduler's
word make the JobResult (`slurm_states.compose_result`), also written to
`jobs_dir/<job_id>/result.json` as locally, and the job's artifacts (`spec.artifacts`) are
collected from its workdir.
sbatch gets `--export=NIL` (Slurm >= 20.11): the submitting environment (API keys) never reaches a
node, and no login environment is loaded there either (`NONE` would run a login shell per task).
`scheduler_calls` counts every sbatch, scontrol and scancel call.

Our jobs only: every array is named with the executor's `token` (`--job-name`, placed after
`extra_args` so they cannot override it), unique to its jobs_dir, hence to the run. Reattach and
every poll read the name back from `scontrol show job` and refuse an array of another name
(SchedulerError `slurm.foreign_job`); scancel names only arrays this executor submitted or
verified as its own.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ratchet.compute import slurm_task
from ratchet.compute.artifacts import collect_artifacts
from ratchet.compute.base import (
    TAIL_BYTES,
    ArtifactSpec,
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
from ratchet.compute.sandbox import PROBE_TIMEOUT_S, wrap_argv
from ratchet.compute.slurm_states import (
    DEFAULT_MAX_ARRAY_SIZE,
    TaskRecord,
    compose_result,
    max_array_size,
    parse_array_id,
    parse_show_job,
    split_arrays,
    time_limit_minutes,
)
from ratchet.core.contract import SlurmSection
from ratchet.core.errors import RatchetError, SandboxError
from ratchet.core.jobfiles import JobFiles

SCHEDULER_CALL_TIMEOUT_S = 60.0
"""Seconds one sbatch / scontrol / scancel call may take before it counts as failed."""

FORGOTTEN_GRACE_S = 10.0
"""Seconds a task the scheduler no longer knows may take to show its outcome file (a shared
filesystem's attribute cache) before it is declared `unknown`."""

SCHEDULER_UNREACHABLE_S = 900.0
"""Seconds of failed scheduler polls after which the unfinished tasks end `unknown`."""

BACKOFF_FACTOR = 1.5
"""Poll interval growth per round, from poll_min_s up to poll_max_s (see `max_poll_rounds`)."""

SLURM_DIR = ".slurm"
"""Under jobs_dir: the wrapper, the tasks files and Slurm's own per-task logs."""


class SchedulerError(RatchetError):
    """A Slurm command failed (code `slurm.<command>`), with the command's stderr."""


@dataclass
class _Task:
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
class _SlurmBatch:
    """The handle of a Slurm batch: its tasks in submission order and the arrays holding them."""

    tasks: list[_Task]
    on_result: OnResult | None
    arrays: list[str] = field(default_factory=list)


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
    token: the job name of its arrays (`run_token(jobs_dir)`), checked on reattach and every poll.
    """

    backend = "slurm"
    jobs_outlive_kernel = True  # the scheduler keeps running them
    external_ids_are_pids = False

    def __init__(self, jobs_dir: Path, max_parallel: int, settings: SlurmSection | None = None, workers: int = 1):
        if max_parallel < 1:
            raise RatchetError("compute.max_parallel", f"compute.max_parallel is {max_parallel}; it must be >= 1")
        self.jobs_dir = Path(jobs_dir)
        self.max_parallel = max_parallel
        self.throttle = max(1, max_parallel // max(1, workers))  # each worker's array: its share of the cap
        self.settings = settings or SlurmSection()
        self.calls: Counter[str] = Counter()
        self._known: dict[str, str] = {}  # job_id -> external id, for cancel(ids)
        self._arrays: set[str] = set()
        self._ours: set[str] = set()  # arrays submitted here or verified by name: the only ones scancelled
        self.token = run_token(self.jobs_dir)
        self._cancelled: set[str] = set()
        self._unschedulable: set[str] = set()  # arrays cancelled because they can never start
        self._max_array_size: int | None = None  # read once (`_array_limit`)
        self._wake = threading.Event()
        self._stopping = False  # cancel() of everything was called: a stop
        self._closed = False

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
        wrapper = self._install_wrapper()
        groups: dict[tuple, list[JobSpec]] = {}
        for spec in specs:  # a capped group (`spec.group_cap`) is an array of its own, throttled to its cap
            groups.setdefault((self._sbatch_resources(spec), spec.group_cap), []).append(spec)
        batch = _SlurmBatch([], on_result)
        try:
            for (resources, cap), group in groups.items():
                throttle = min(self.throttle, cap[1]) if cap is not None else self.throttle
                after: str | None = None  # a split group's arrays run one after the other: one throttle
                for part in split_arrays(len(group), self._array_limit()):
                    array_id, tag = self._submit_array(wrapper, resources, group[part.start:part.stop], throttle,
                                                       after)
                    after = array_id
                    batch.arrays.append(array_id)
                    tasks = [_Task(s.job_id, array_id, i, s.timeout_s, tag / f"{i}.log", s.workdir, s.artifacts)
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

    def _release(self, array_id: str, tasks: Sequence[_Task]) -> None:
        """Release a held array whose tasks are recorded. A stop (`cancel()`) that came while it was
        being recorded already scancelled it: its tasks then end `cancelled` in `wait`, recorded as
        such, instead of the release's failure stopping the run unrecorded."""
        try:
            self._call("release", ["scontrol", "release", array_id])
        except SchedulerError:
            if not self._stopping:
                raise
            self._cancelled.update(t.job_id for t in tasks)

    def _install_wrapper(self) -> Path:
        target = self.jobs_dir / SLURM_DIR / "task.py"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".task.{os.getpid()}.tmp")
            shutil.copyfile(slurm_task.__file__, tmp)
            os.replace(tmp, target)
        return target

    def _sbatch_resources(self, spec: JobSpec) -> tuple:
        r = spec.resources
        return (time_limit_minutes(spec.timeout_s, self.settings.time_grace_s), r.cpus, r.memory_mb, r.gpus)

    def _array_limit(self) -> int:
        """The most tasks one array may hold: `settings.max_array_size`, else the cluster's
        MaxArraySize read once (`scontrol show config`, cached), else DEFAULT_MAX_ARRAY_SIZE."""
        if self._max_array_size is None:
            found = self.settings.max_array_size
            if found is None:
                try:
                    found = max_array_size(self._call("config", ["scontrol", "show", "config"]))
                except SchedulerError:
                    found = None
            self._max_array_size = found or DEFAULT_MAX_ARRAY_SIZE
        return self._max_array_size

    def _submit_array(self, wrapper: Path, resources: tuple, group: list[JobSpec],
                      throttle: int, after: str | None = None) -> tuple[str, Path]:
        """sbatch one held array for `group`, at most `throttle` tasks running at once (`%K`),
        starting once array `after` ended (None: at once); (array id, its directory under .slurm/).
        Raises SchedulerError `slurm.sbatch` (naming MaxArraySize when sbatch calls the array
        specification invalid)."""
        tag = self.jobs_dir / SLURM_DIR / f"b-{secrets.token_hex(4)}"
        tag.mkdir(parents=True)
        lines = [str(self._prepare_job_dir(spec).resolve()) for spec in group]
        (tag / "tasks").write_text("\n".join(lines) + "\n")
        python = self.settings.python or sys.executable
        argv = ["sbatch", "--parsable", "--hold", *self._shape_options(resources, len(group), throttle),
                f"--output={tag.resolve()}/%a.log", f"--chdir={tag.resolve()}"]
        argv += [f"--job-name={self.token}"]  # after extra_args: the last --job-name wins
        wrap = ["exec", python, "-I", "-S", str(wrapper.resolve()), str((tag / "tasks").resolve())]
        argv += [f"--dependency=afterany:{after}"] if after is not None else []
        argv += ["--wrap", shlex.join(wrap)]
        try:
            out = self._call("sbatch", argv)
        except SchedulerError as exc:
            if "Invalid job array specification" not in exc.message:
                raise
            raise SchedulerError(
                "slurm.sbatch", exc.message,
                hint=f"an array of {len(group)} tasks exceeds the cluster's MaxArraySize (taken as "
                     f"{self._array_limit()}; `scontrol show config | grep MaxArraySize`): set "
                     "compute.slurm.max_array_size to it, or ask the admins to raise it") from exc
        try:
            array_id = parse_array_id(out)
        except ValueError as exc:
            raise SchedulerError("slurm.sbatch", str(exc)) from exc
        self._arrays.add(array_id)
        self._ours.add(array_id)
        return array_id, tag

    def _shape_options(self, resources: tuple, tasks: int, throttle: int) -> list[str]:
        """The sbatch options that decide where and whether an array can run: array size and
        throttle, --time, CPUs, memory, GPUs, partition, account, qos and `extra_args`."""
        minutes, cpus, memory_mb, gpus = resources
        s = self.settings
        argv = [f"--array=0-{tasks - 1}%{throttle}", f"--time={minutes}", f"--cpus-per-task={cpus}",
                "--export=NIL", "--job-name=ratchet"]
        argv += [f"--mem={memory_mb}M"] if memory_mb else []
        argv += [f"--gres=gpu:{gpus}"] if gpus else []
        for flag, value in (("partition", s.partition), ("account", s.account), ("qos", s.qos)):
            argv += [f"--{flag}={value}"] if value else []
        return argv + list(s.extra_args)

    def shape_problem(self, resources: Resources, timeout_s: float) -> str | None:
        """Ask the scheduler whether a job of this shape could ever run (`sbatch --test-only` with
        the options a submit would use, nothing queued): None when it could, else the scheduler's
        answer with the options asked ("allocation failure: Requested node configuration is not
        available (asked: --cpus-per-task=16 ...)"). Raises SchedulerError `slurm.test_only` when
        sbatch did not run."""
        minutes = time_limit_minutes(timeout_s, self.settings.time_grace_s)
        options = self._shape_options((minutes, resources.cpus, resources.memory_mb, resources.gpus), 1, 1)
        argv = ["sbatch", "--test-only", *options, "--output=/dev/null", "--wrap", "true"]
        self.calls["test_only"] += 1
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=SCHEDULER_CALL_TIMEOUT_S,
                                  check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SchedulerError("slurm.test_only", f"sbatch did not run: {exc}",
                                 hint="is Slurm installed and its controller reachable?") from exc
        if proc.returncode == 0:
            return None
        said = " ".join(line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip())
        return f"{said or f'sbatch --test-only exited {proc.returncode}'} (asked: {shlex.join(options[1:])})"

    def _prepare_job_dir(self, spec: JobSpec) -> Path:
        files = JobFiles.of(self.jobs_dir, spec.job_id)
        job_dir = files.dir
        if job_dir.is_symlink():
            job_dir.unlink()
        elif job_dir.exists():  # a re-run (e.g. after a resume) replaces what a previous run left
            shutil.rmtree(job_dir)
        scratch = files.scratch.resolve()
        scratch.mkdir(parents=True)
        env = {**spec.env, "HOME": str(scratch), "TMPDIR": str(scratch)}
        bwrap = None
        if spec.sandbox.mode == "bwrap":
            bwrap = wrap_argv([], workdir=spec.workdir, scratch=scratch, network=spec.sandbox.network, env={},
                              read_only=spec.sandbox.read_only)
            bwrap = bwrap[: bwrap.index("--")] if "--" in bwrap else bwrap
        if spec.stdin_bytes is not None:
            files.stdin.write_bytes(spec.stdin_bytes)
        task = {"job_id": spec.job_id, "argv": list(spec.argv), "workdir": str(Path(spec.workdir).resolve()),
                "env": env, "timeout_s": spec.timeout_s, "output_cap_bytes": spec.output_cap_bytes,
                "stdin": spec.stdin_bytes is not None, "bwrap": bwrap, "gpus": spec.resources.gpus}
        if spec.artifacts is not None:  # read back by `reattach`; the task itself ignores it
            task["artifacts"] = {"paths": list(spec.artifacts.paths), "dest": str(spec.artifacts.dest)}
        files.task.write_text(json.dumps(task, indent=1))
        return job_dir

    # --- wait ----------------------------------------------------------------------------------

    def wait(self, batch: Batch) -> list[JobResult]:
        """Poll until every task of `batch` ended; results in submission order, each also written
        to `jobs_dir/<job_id>/result.json`. `on_result` runs on this thread as tasks end. If this
        thread is interrupted (KeyboardInterrupt) or a callback raises, the batch's unfinished
        tasks are cancelled (scancel) first."""
        pending: _SlurmBatch | None = batch.handle
        if pending is None:
            return []
        try:
            self._poll_until_done(pending)
        except BaseException:
            self.cancel([t.job_id for t in pending.tasks if t.result is None])
            raise
        return [t.result for t in pending.tasks if t.result is not None]

    def _poll_until_done(self, batch: _SlurmBatch) -> None:
        interval = self.settings.poll_min_s
        failing_since: float | None = None
        while True:
            open_tasks = [t for t in batch.tasks if t.result is None]
            if not open_tasks:
                return
            failed = False
            by_array: dict[str, list[_Task]] = {}
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
                self._wake.wait(interval)
                self._wake.clear()
                interval = min(self.settings.poll_max_s, interval * BACKOFF_FACTOR)

    def _show_array(self, array_id: str) -> dict[int, TaskRecord] | None:
        """The array's task records ({} when the scheduler forgot the whole array; None when the
        scheduler could not be asked). Raises SchedulerError `slurm.foreign_job` when the array is
        not this run's (its name is not `token`)."""
        try:
            records = parse_show_job(self._call("show", ["scontrol", "-o", "show", "job", array_id]))
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

    def _settle(self, task: _Task, record: TaskRecord | None, on_result: OnResult | None) -> None:
        """Give `task` its result if it ended (or was forgotten for FORGOTTEN_GRACE_S), or if the
        scheduler says it can never start (`unschedulable`: its array is cancelled)."""
        if record is not None and record.never_starts:
            self._refuse_array(task.array_id)
        elif record is not None and not record.terminal:
            task.missing_since = None
            return
        outcome = self._read_outcome(task, record)
        if record is None and outcome is None:
            now = time.monotonic()
            task.missing_since = task.missing_since or now
            if now - task.missing_since < FORGOTTEN_GRACE_S:
                return
        self._finish(task, outcome, record, on_result)

    def _refuse_array(self, array_id: str) -> None:
        """Cancel an array whose tasks can never start (one scancel per array: its tasks share one
        shape, so none of them can)."""
        if array_id not in self._unschedulable:
            self._unschedulable.add(array_id)
            self._scancel([array_id])

    def _read_outcome(self, task: _Task, record: TaskRecord | None) -> dict | None:
        """This attempt's outcome.json, or None (absent, unreadable, or left by an earlier attempt
        of a requeued task: the restart counts differ)."""
        try:
            outcome = json.loads(JobFiles.of(self.jobs_dir, task.job_id).outcome.read_text())
        except (OSError, ValueError):
            return None
        if record is not None and int(outcome.get("restart", 0)) != record.restarts:
            return None
        return outcome

    def _finish(self, task: _Task, outcome: dict | None, record: TaskRecord | None,
                on_result: OnResult | None) -> None:
        files = JobFiles.of(self.jobs_dir, task.job_id)
        stdout = files.stdout
        result = compose_result(task.job_id, task.external_id, outcome, record, task.timeout_s,
                                stdout if stdout.exists() else None)
        if outcome is None and task.log is not None and task.log.exists():
            result = replace(result, stderr_tail=_tail(task.log))
        if task.job_id in self._cancelled and result.state not in ("ok", "cancelled"):
            result = _as_cancelled(result)
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
        never scancelled."""
        tasks = []
        parsed: list[tuple[str, str, str, int]] = []
        for job_id, external in recorded.items():
            array_id, sep, index = external.partition("_")
            if sep and array_id.isdigit() and index.isdigit():
                parsed.append((job_id, external, array_id, int(index)))
        for array in sorted({p[2] for p in parsed}):
            self._show_array(array)
        for job_id, external, array_id, position in parsed:
            tasks.append(self._reattached(job_id, array_id, position))
            self._known[job_id] = external
            self._arrays.add(array_id)
        return Batch(tuple(t.job_id for t in tasks), _SlurmBatch(tasks, on_result, sorted({t.array_id for t in tasks})))

    def _reattached(self, job_id: str, array_id: str, index: int) -> _Task:
        """The task of a job a previous kernel submitted, as its task.json describes it (timeout 0
        and no artifacts when it cannot be read)."""
        try:
            task = json.loads(JobFiles.of(self.jobs_dir, job_id).task.read_text())
            timeout_s, workdir = float(task["timeout_s"]), Path(task["workdir"])
            wanted = task.get("artifacts")
            artifacts = ArtifactSpec(tuple(wanted["paths"]), Path(wanted["dest"])) if wanted else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return _Task(job_id, array_id, index, 0.0)
        return _Task(job_id, array_id, index, timeout_s, workdir=workdir, artifacts=artifacts)

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
            self._call("scancel", ["scancel", *targets])
        except SchedulerError:
            pass  # a task that ended meanwhile is not an error worth raising from a cancel

    def close(self) -> None:
        """Nothing is held between calls; later submits are refused (idempotent)."""
        self._closed = True

    def __enter__(self) -> SlurmExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, name: str, argv: list[str]) -> str:
        """Run one scheduler command (counted); its stdout. Raises SchedulerError `slurm.<name>`."""
        self.calls[name] += 1
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=SCHEDULER_CALL_TIMEOUT_S,
                                  check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SchedulerError(f"slurm.{name}", f"{argv[0]} did not run: {exc}",
                                 hint="is Slurm installed and its controller reachable?") from exc
        if proc.returncode != 0:
            raise SchedulerError(f"slurm.{name}", f"{shlex.join(argv[:4])} failed: {proc.stderr.strip()}",
                                 hint="check `sinfo` and the [compute.slurm] settings")
        return proc.stdout


def run_token(jobs_dir: Path) -> str:
    """The job name of every array submitted for `jobs_dir` (one run's): `ratchet-` and 12 hex
    digits of the SHA-256 of its absolute path."""
    digest = hashlib.sha256(str(Path(jobs_dir).resolve()).encode()).hexdigest()
    return f"ratchet-{digest[:12]}"


def max_poll_rounds(elapsed_s: float, poll_min_s: float, poll_max_s: float) -> int:
    """The most polls `wait` makes per array over `elapsed_s` seconds: the rounds of geometric
    growth (factor BACKOFF_FACTOR) from poll_min_s to poll_max_s, then one per poll_max_s, plus the
    first and the last."""
    growth = math.ceil(math.log(poll_max_s / poll_min_s, BACKOFF_FACTOR)) if poll_max_s > poll_min_s else 0
    return growth + math.ceil(elapsed_s / poll_max_s) + 2


def _tail(path: Path) -> str:
    """The last TAIL_BYTES of a file, decoded with replacement."""
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL_BYTES))
        return f.read().decode("utf-8", "replace")


def _as_cancelled(result: JobResult) -> JobResult:
    """A task this executor cancelled that ended otherwise than ok (e.g. killed by the SIGTERM)."""
    return replace(result, state="cancelled", reason=f"cancelled ({result.reason})")
