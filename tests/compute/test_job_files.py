"""Every executor writes a job's files where `core.jobfiles` names them, and the Slurm task wrapper
(standard library only) repeats the kernel's names and limits exactly."""

from __future__ import annotations

import json
import types

import pytest
from jobkit import spec

from ratchet.compute import base, slurm_task, streams
from ratchet.compute.local import LocalExecutor
from ratchet.compute.outcome import QUOTED_STDERR_CHARS, stderr_excerpt
from ratchet.core import jobfiles
from ratchet.core.jobfiles import JobFiles, pid_file

WRAPPER_OWN = frozenset({"TIMEOUT_EXIT", "SCONTROL_TIMEOUT_S", "SCONTROL_PATH", "WAIT_STEP_MIN_S", "WAIT_STEP_MAX_S"})
"""The wrapper's upper-case names that are its own, not copies of the kernel's."""


def _copy_mismatches(wrapper: types.ModuleType | dict[str, object]) -> list[str]:
    """Each upper-case constant of the wrapper (except WRAPPER_OWN) against the kernel's constant of
    the same name in `core.jobfiles`, `compute.base` or `compute.streams`: one line per copy that
    differs or has no original."""
    names = vars(wrapper) if isinstance(wrapper, types.ModuleType) else wrapper
    found = []
    for name in sorted(n for n in names if n.isupper() and n not in WRAPPER_OWN):
        home = next((m for m in (jobfiles, base, streams) if hasattr(m, name)), None)
        if home is None:
            found.append(f"{name}: no kernel original")
        elif names[name] != getattr(home, name):
            found.append(f"{name}: the wrapper says {names[name]!r}, {home.__name__} says {getattr(home, name)!r}")
    return found


def test_the_slurm_wrappers_copies_equal_the_kernels():
    copied = {n for n in vars(slurm_task) if n.isupper()} - WRAPPER_OWN
    assert {"STDOUT_NAME", "STDERR_NAME", "STDIN_NAME", "TASK_NAME", "OUTCOME_NAME", "JOB_KILL_GRACE_S",
            "TAIL_BYTES", "READ_CHUNK_BYTES"} <= copied
    assert _copy_mismatches(slurm_task) == []


def test_a_wrapper_copy_that_drifts_is_named():
    drifted = {**vars(slurm_task), "TAIL_BYTES": 1, "NEW_LIMIT_S": 2.0}
    assert _copy_mismatches(drifted) == ["NEW_LIMIT_S: no kernel original",
                                         "TAIL_BYTES: the wrapper says 1, ratchet.compute.base says 4096"]


def test_the_local_executor_writes_the_named_files_and_pid_record(work, jobs_dir, tmp_path):
    pid_dir = tmp_path / "pids"
    seen = []

    def on_start(job_id: str, pid: str) -> None:
        seen.append(json.loads(pid_file(pid_dir, job_id).read_text())["pid"] == int(pid))

    (result,) = LocalExecutor(jobs_dir, 1, pid_dir=pid_dir).run(
        [spec("named", "echo out; echo err >&2; sleep 0.2", work)], on_submit=on_start)
    files = JobFiles.of(jobs_dir, "named")
    assert seen == [True] and not pid_file(pid_dir, "named").exists()
    assert sorted(p.name for p in files.dir.iterdir()) == sorted(p.name for p in (files.stdout, files.stderr,
                                                                                 files.result))
    assert (files.stdout.read_text(), files.stderr.read_text()) == ("out\n", "err\n")
    assert result.stdout_path == files.stdout and json.loads(files.result.read_text())["state"] == "ok"


@pytest.mark.slurm
def test_a_slurm_task_writes_the_named_files(work, jobs_dir):
    from test_slurm_executor import FAST, PROBLEM

    if PROBLEM is not None:
        pytest.skip(PROBLEM)
    from ratchet.compute.slurm import SlurmExecutor

    (result,) = SlurmExecutor(jobs_dir, 1, FAST).run([spec("named", "cat; echo err >&2", work, stdin_bytes=b"in\n")])
    files = JobFiles.of(jobs_dir, "named")
    assert result.state == "ok", result.reason
    on_disk = sorted(p.name for p in files.dir.iterdir())
    assert on_disk == sorted(p.name for p in (files.stdout, files.stderr, files.result, files.task, files.stdin,
                                              files.outcome))
    assert (files.stdout.read_text(), files.stderr.read_text()) == ("in\n", "err\n")
    assert json.loads(files.outcome.read_text())["job_id"] == "named"


def test_the_quoted_stderr_is_the_end_of_the_jobs_stderr_file(tmp_path):
    files = JobFiles.of(tmp_path, "failed")
    assert stderr_excerpt(files) == ""
    files.dir.mkdir()
    files.stderr.write_bytes(b"x" * 10 + b"y" * QUOTED_STDERR_CHARS + b"\xff")
    assert stderr_excerpt(files) == "y" * (QUOTED_STDERR_CHARS - 1) + "\ufffd"
