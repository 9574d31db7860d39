"""The wrapper every Slurm task runs: one job of an array, run as the local executor runs it.

Standard library only: the Slurm executor copies this file into the jobs directory and the nodes run
it with `python3 task.py <tasks-file>` (Ratchet need not be installed there). The task's line in the
tasks file (index SLURM_ARRAY_TASK_ID) names its job directory, whose `task.json` (written at
submit) holds argv, workdir, the exact environment, timeout, output cap and, for a sandboxed job,
the bwrap command line. The job runs in a new session with stdin from `<job dir>/stdin` (or
/dev/null), stdout and stderr capped into `<job dir>/stdout|stderr`; at its timeout, or when Slurm
sends SIGTERM (scancel, walltime, preemption), its process group gets SIGTERM and JOB_KILL_GRACE_S
later SIGKILL, and the wrapper asks the controller what it says of the task at that moment
(`scontrol -o show job`: JobState and Reason, e.g. Reason=TimeLimit at the walltime), kept in the
outcome as `scheduler` since the controller may forget the task before the executor polls it.
Then `<job dir>/outcome.json` is written atomically (temp file, fsync, rename): the
primary record of how the job ended, since Slurm forgets finished jobs. The wrapper exits with the
job's exit code (128 + signal when killed, 124 at its own timeout) so the scheduler's state agrees.

The file names and limits below repeat the kernel's (`core.jobfiles`, `compute.base`,
`compute.streams`), which this file cannot import; a test holds each copy equal to its original.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

JOB_KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL to the job's process group (compute.base.JOB_KILL_GRACE_S)."""

TAIL_BYTES = 4096
"""Bytes of stdout/stderr tail kept in outcome.json (compute.base.TAIL_BYTES)."""

READ_CHUNK_BYTES = 64 * 1024
"""Bytes read from the job's pipes at a time (compute.streams.READ_CHUNK_BYTES)."""

SCONTROL_TIMEOUT_S = 1.5
"""Seconds the wrapper waits for `scontrol show job` when SIGTERM comes: asked while the job is
being stopped, and well within Slurm's KillWait (30 s by default; at least 2 s in practice), after
which Slurm SIGKILLs the wrapper before it could write the outcome."""

SCONTROL_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where `scontrol` is looked for: sbatch --export=NIL gives the wrapper no PATH."""

WAIT_STEP_MIN_S = 0.002
WAIT_STEP_MAX_S = 0.05
"""Seconds between looks at whether the job ended (see `_wait`)."""

TIMEOUT_EXIT = 124
"""The wrapper's exit code when it stopped the job at its timeout (as timeout(1))."""

STDOUT_NAME = "stdout"
STDERR_NAME = "stderr"
STDIN_NAME = "stdin"
TASK_NAME = "task.json"
OUTCOME_NAME = "outcome.json"
"""The job directory's files this wrapper reads and writes (core.jobfiles)."""


class Capped:
    """Copies a pipe into `path`, keeping at most `cap` bytes there and the last TAIL_BYTES."""

    def __init__(self, fd: int, path: str, cap: int) -> None:
        self.fd, self.cap = fd, max(0, cap)
        self.out = open(path, "wb", buffering=0)  # unbuffered: the file shows output as it comes
        self.written = 0
        self.truncated = False
        self.tail = b""
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while True:
            data = os.read(self.fd, READ_CHUNK_BYTES)
            if not data:
                break
            room = self.cap - self.written
            if room > 0:
                view = memoryview(data)[:room]
                while view:
                    view = view[self.out.write(view):]
                self.written += min(room, len(data))
            if len(data) > max(room, 0):
                self.truncated = True
            self.tail = (self.tail + data)[-TAIL_BYTES:]
        self.out.close()
        os.close(self.fd)

    def finish(self, timeout_s: float) -> Any:
        self.thread.join(timeout_s)
        return self.tail.decode("utf-8", "replace")


def _job_dir(tasks_file: str) -> str:
    index = int(os.environ["SLURM_ARRAY_TASK_ID"])
    with open(tasks_file) as f:
        return f.read().splitlines()[index]


def _argv(task: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The command line: the job's argv, inside bwrap when the task carries a sandbox prefix (its
    environment, plus CUDA_VISIBLE_DEVICES from Slurm, set with --setenv; GPU device nodes bound)."""
    if not task.get("bwrap"):
        return list(task["argv"])
    args = list(task["bwrap"])
    for key, value in env.items():
        args += ["--setenv", key, value]
    if task.get("gpus"):
        for name in sorted(os.listdir("/dev")):
            if name.startswith("nvidia"):
                args += ["--dev-bind", "/dev/" + name, "/dev/" + name]
    return args + ["--"] + list(task["argv"])


def _write_outcome(job_dir: str, data: dict[str, Any]) -> None:
    tmp = os.path.join(job_dir, f".outcome.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(job_dir, OUTCOME_NAME))
    dir_fd = os.open(job_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _ask_controller(said: dict[str, Any]) -> None:
    """Put the controller's JobState and Reason of this task into `said` ("state", "reason"), or
    nothing when it cannot be asked within SCONTROL_TIMEOUT_S."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return
    env = dict(os.environ)
    env["PATH"] = os.environ.get("PATH") or SCONTROL_PATH
    try:
        out = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=env,
                             timeout=SCONTROL_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return
    fields = dict(p.split("=", 1) for p in out.split() if p.startswith(("JobState=", "Reason=")))
    if "JobState" in fields:
        said.update(state=fields["JobState"], reason=fields.get("Reason", ""))


def _stop(proc: Any, stopped: threading.Event) -> None:
    """SIGTERM the job's process group, SIGKILL what is left JOB_KILL_GRACE_S later."""
    for sig, wait_s in ((signal.SIGTERM, JOB_KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        if wait_s is None:
            return
        if stopped.wait(wait_s):
            return


def run(job_dir: str) -> int:
    """Run the job of `job_dir` to its end and write its outcome; returns the wrapper's exit code."""
    with open(os.path.join(job_dir, TASK_NAME)) as f:
        task = json.load(f)
    for name in (OUTCOME_NAME, STDOUT_NAME, STDERR_NAME):  # a requeued task starts clean
        try:
            os.unlink(os.path.join(job_dir, name))
        except FileNotFoundError:
            pass
    env = dict(task["env"])
    if task.get("gpus") and "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    os.makedirs(env["HOME"], exist_ok=True)
    stdin_path = os.path.join(job_dir, STDIN_NAME)
    stdin: Any = open(stdin_path, "rb") if task.get("stdin") else subprocess.DEVNULL
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ended_by: dict[str, Any] = {"why": None}
    started = time.monotonic()
    proc, error = None, None
    try:
        proc = subprocess.Popen(_argv(task, env), cwd=task["workdir"], env=env, stdin=stdin,
                                stdout=out_w, stderr=err_w, start_new_session=True)
    except OSError as exc:
        error = f"could not start: {exc}"
    finally:
        os.close(out_w)
        os.close(err_w)
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    if proc is None:
        os.close(out_r)
        os.close(err_r)
        return _finish(job_dir, task, None, 0.0, 0.0, ("", False), ("", False), None, error)
    outs = (Capped(out_r, os.path.join(job_dir, STDOUT_NAME), task["output_cap_bytes"]),
            Capped(err_r, os.path.join(job_dir, STDERR_NAME), task["output_cap_bytes"]))
    stopped = threading.Event()

    said: dict[str, Any] = {}
    asking: list[threading.Thread] = []

    def on_term(signum: int, frame: Any) -> None:
        if ended_by["why"] is None:
            ended_by["why"] = "signal"
        threading.Thread(target=_stop, args=(proc, stopped), daemon=True).start()
        if signum == signal.SIGTERM and not asking:
            asking.append(threading.Thread(target=_ask_controller, args=(said,), daemon=True))
            asking[0].start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    deadline = started + float(task["timeout_s"])
    status, usage = _wait(proc, deadline, ended_by, stopped)
    elapsed = time.monotonic() - started
    try:  # leftovers of the job's process group (Slurm's proctrack catches the rest at step end)
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    tails = [(o.finish(JOB_KILL_GRACE_S), o.truncated) for o in outs]
    cpu = usage.ru_utime + usage.ru_stime
    if task.get("bwrap"):
        cpu = max(cpu, elapsed)  # bwrap's rusage loses the job's own (see compute/local.py)
    for thread in asking:
        thread.join(SCONTROL_TIMEOUT_S)
    return _finish(job_dir, task, status, elapsed, cpu, tails[0], tails[1], ended_by["why"], None, dict(said) or None)


def _wait(proc: Any, deadline: float, ended_by: dict[str, Any], stopped: threading.Event) -> tuple[int, Any]:
    """Reap the job, stopping it at `deadline` (monotonic seconds); returns (wait status, rusage).
    Looks every WAIT_STEP_MIN_S at first, doubling up to WAIT_STEP_MAX_S (a short job is reaped at
    once, a long one costs ~20 wake-ups a second)."""
    nap = WAIT_STEP_MIN_S
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except InterruptedError:
            continue
        if pid == proc.pid:
            stopped.set()
            return status, usage
        if ended_by["why"] is None and time.monotonic() >= deadline:
            ended_by["why"] = "timeout"
            threading.Thread(target=_stop, args=(proc, stopped), daemon=True).start()
        time.sleep(nap)
        nap = min(WAIT_STEP_MAX_S, nap * 2)


def _finish(job_dir: str, task: dict[str, Any], status: int | None, elapsed: float, cpu: float, out: Any, err: Any,
            ended_by: dict[str, Any] | None, error: Any, scheduler: dict[str, Any] | None = None) -> int:
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    data = {
        "job_id": task["job_id"],
        "status": status,
        "exit_code": code if code is not None and code >= 0 else None,
        "signal": -code if code is not None and code < 0 else None,
        "ended_by": ended_by,
        "error": error,
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "stdout_tail": out[0],
        "stdout_truncated": out[1],
        "stderr_tail": err[0],
        "stderr_truncated": err[1],
        "restart": int(os.environ.get("SLURM_RESTART_COUNT") or 0),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "host": os.uname().nodename,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES") if task.get("gpus") else None,
        "scheduler": scheduler,
    }
    _write_outcome(job_dir, data)
    if ended_by == "timeout":
        return TIMEOUT_EXIT
    if code is None:
        return 1
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(run(_job_dir(sys.argv[1])))
