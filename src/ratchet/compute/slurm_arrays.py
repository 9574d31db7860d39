"""Submitting to Slurm: each job's directory (task.json, stdin) for the wrapper, the wrapper itself
copied under `jobs_dir/.slurm/`, and the `sbatch` of one held array with its shape (array size and
throttle, walltime, CPUs, memory, GPUs, partition, account, qos, extra_args) and the run's token as
its job name, placed after `extra_args` so they cannot override it.

sbatch gets `--export=NIL` (Slurm >= 20.11): the submitting environment (API keys) never reaches a
node, and no login environment is loaded there either (`NONE` would run a login shell per task).

Effects: writes under `jobs_dir`; runs sbatch.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ratchet.compute import slurm_task
from ratchet.compute.base import JobSpec, Resources
from ratchet.compute.sandbox import wrap_argv
from ratchet.compute.slurm_calls import Scheduler, SchedulerError
from ratchet.compute.slurm_states import parse_array_id, time_limit_minutes
from ratchet.core.contract import SlurmSection
from ratchet.core.jobfiles import JobFiles

SLURM_DIR = ".slurm"
"""Under jobs_dir: the wrapper, the tasks files and Slurm's own per-task logs."""

Shape = tuple[int, int, int, int]
"""(walltime minutes, CPUs, memory MiB (0: the partition default), GPUs) of a job: jobs of one shape share an array."""


def install_wrapper(jobs_dir: Path) -> Path:
    """`jobs_dir/.slurm/task.py`, a copy of `slurm_task.py` (written once, atomically)."""
    target = jobs_dir / SLURM_DIR / "task.py"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".task.{os.getpid()}.tmp")
        shutil.copyfile(slurm_task.__file__, tmp)
        os.replace(tmp, target)
    return target


def job_shape(spec: JobSpec, settings: SlurmSection) -> Shape:
    """The shape of `spec`'s task: walltime (`time_limit_minutes` with settings.time_grace_s),
    CPUs, memory and GPUs."""
    r = spec.resources
    return (time_limit_minutes(spec.timeout_s, settings.time_grace_s), r.cpus, r.memory_mb, r.gpus)


def shape_options(settings: SlurmSection, shape: Shape, tasks: int, throttle: int) -> list[str]:
    """The sbatch options that decide where and whether an array can run: array size and
    throttle, --time, CPUs, memory, GPUs, partition, account, qos and `extra_args` (last)."""
    minutes, cpus, memory_mb, gpus = shape
    argv = [f"--array=0-{tasks - 1}%{throttle}", f"--time={minutes}", f"--cpus-per-task={cpus}",
            "--export=NIL", "--job-name=ratchet"]
    argv += [f"--mem={memory_mb}M"] if memory_mb else []
    argv += [f"--gres=gpu:{gpus}"] if gpus else []
    for flag, value in (("partition", settings.partition), ("account", settings.account), ("qos", settings.qos)):
        argv += [f"--{flag}={value}"] if value else []
    return argv + list(settings.extra_args)


def prepare_job_dir(jobs_dir: Path, spec: JobSpec) -> Path:
    """Write `jobs_dir/<job_id>/` afresh for the wrapper: its scratch (HOME, TMPDIR), stdin, and
    task.json (argv, workdir, exact environment, timeout, output cap, bwrap prefix, GPUs, and the
    artifacts `reattach` reads back). A directory a previous run left is replaced."""
    files = JobFiles.of(jobs_dir, spec.job_id)
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


def submit_array(scheduler: Scheduler, settings: SlurmSection, jobs_dir: Path, token: str, wrapper: Path,
                 shape: Shape, group: Sequence[JobSpec], throttle: int, after: str | None,
                 limit: int) -> tuple[str, Path]:
    """sbatch one held array named `token` for `group` (their job directories written first), at
    most `throttle` tasks running at once (`%K`), starting once array `after` ended (None: at once);
    (array id, its directory under .slurm/ holding the tasks file and each task's Slurm log
    `<index>.log`). `limit`: the MaxArraySize taken, named in the hint when sbatch calls the array
    specification invalid. Raises SchedulerError `slurm.sbatch`."""
    tag = jobs_dir / SLURM_DIR / f"b-{secrets.token_hex(4)}"
    tag.mkdir(parents=True)
    lines = [str(prepare_job_dir(jobs_dir, spec).resolve()) for spec in group]
    (tag / "tasks").write_text("\n".join(lines) + "\n")
    python = settings.python or sys.executable
    argv = ["sbatch", "--parsable", "--hold", *shape_options(settings, shape, len(group), throttle),
            f"--output={tag.resolve()}/%a.log", f"--chdir={tag.resolve()}"]
    argv += [f"--job-name={token}"]  # after extra_args: the last --job-name wins
    wrap = ["exec", python, "-I", "-S", str(wrapper.resolve()), str((tag / "tasks").resolve())]
    argv += [f"--dependency=afterany:{after}"] if after is not None else []
    argv += ["--wrap", shlex.join(wrap)]
    try:
        out = scheduler.call("sbatch", argv)
    except SchedulerError as exc:
        if "Invalid job array specification" not in exc.message:
            raise
        raise SchedulerError(
            "slurm.sbatch", exc.message,
            hint=f"an array of {len(group)} tasks exceeds the cluster's MaxArraySize (taken as {limit}; "
                 "`scontrol show config | grep MaxArraySize`): set compute.slurm.max_array_size to it, or "
                 "ask the admins to raise it") from exc
    try:
        return parse_array_id(out), tag
    except ValueError as exc:
        raise SchedulerError("slurm.sbatch", str(exc)) from exc


def shape_problem(scheduler: Scheduler, settings: SlurmSection, resources: Resources,
                  timeout_s: float) -> str | None:
    """Ask the scheduler whether a job of this shape could ever run (`sbatch --test-only` with the
    options a submit would use, nothing queued): None when it could, else the scheduler's answer
    with the options asked ("allocation failure: Requested node configuration is not available
    (asked: --cpus-per-task=16 ...)"). Raises SchedulerError `slurm.test_only` when sbatch did not
    run."""
    minutes = time_limit_minutes(timeout_s, settings.time_grace_s)
    options = shape_options(settings, (minutes, resources.cpus, resources.memory_mb, resources.gpus), 1, 1)
    argv = ["sbatch", "--test-only", *options, "--output=/dev/null", "--wrap", "true"]
    try:
        proc = scheduler.attempt("test_only", argv)
    except SchedulerError as exc:
        raise SchedulerError("slurm.test_only", exc.message, hint=exc.hint) from exc
    if proc.returncode == 0:
        return None
    said = " ".join(line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip())
    return f"{said or f'sbatch --test-only exited {proc.returncode}'} (asked: {shlex.join(options[1:])})"
