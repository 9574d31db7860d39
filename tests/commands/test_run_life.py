"""A run's life as a user meets it (issue 16): SIGTERM stops a run like Ctrl-C (item 4), and a
second `ratchet run` in the same project is refused while one runs (item 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import events, ratchet, set_contract

pytestmark = pytest.mark.slow

BENCH = """\
import json, os, sys, time
slow = open({flag!r}).read().strip() if os.path.exists({flag!r}) else ""
job = os.environ.get("RATCHET_JOB_ID", "")
with open({pids!r}, "a") as f:
    f.write(f"{{os.getpid()}}\\n")
if slow and slow in job:
    time.sleep(120)
print(json.dumps({{"score": 1.0}}))
"""

WAIT_S = 60.0


class Run:
    """`python -m ratchet run ROOT ARGS --json` in the background."""

    def __init__(self, root: Path, *args: str):
        self.out = root.parent / f"out-{time.monotonic_ns()}"
        self.err = self.out.with_suffix(".err")
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "ratchet", "run", str(root), *args, "--json"],
                                         stdout=out, stderr=err)

    def envelope(self) -> dict[str, Any]:
        lines = [line for line in self.out.read_text().splitlines() if line.strip()]
        assert len(lines) == 1, f"stdout {lines!r}\nstderr: {self.err.read_text()}"
        return json.loads(lines[0])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture
def project(make_repo, tmp_path: Path) -> Iterator[Path]:
    """The benchmark repository whose jobs sleep while `slow` names part of their job id."""
    flag, pid_file = tmp_path / "slow", tmp_path / "pids"
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH.format(flag=str(flag), pids=str(pid_file))})
    set_contract(root, append='\n[sandbox]\nmode = "none"\n')
    yield root
    flag.unlink(missing_ok=True)
    for line in pid_file.read_text().split() if pid_file.exists() else []:
        try:
            os.kill(int(line), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _slow(root: Path, job_part: str) -> None:
    (root.parent / "slow").write_text(job_part)


def _wait_for_job(root: Path, run: Run, job_part: str) -> str:
    """Wait until a job whose id contains `job_part` started; returns the run id."""
    deadline = time.monotonic() + WAIT_S
    while True:
        assert run.proc.poll() is None, run.err.read_text()
        assert time.monotonic() < deadline, run.err.read_text()
        runs = root / ".ratchet" / "runs"
        for run_id in os.listdir(runs) if runs.exists() else []:
            if (runs / run_id / "events.jsonl").exists() and any(
                    e["kind"] == "job.started" and job_part in e["data"]["job_id"] for e in events(root, run_id)):
                return run_id
        time.sleep(0.05)


def test_sigterm_stops_a_run_like_ctrl_c_with_exit_130_and_the_resume_command(project: Path):
    _slow(project, "a0001-trial")
    run = Run(project)
    try:
        run_id = _wait_for_job(project, run, "a0001-trial")
        run.proc.send_signal(signal.SIGTERM)
        assert run.proc.wait(60) == 130, run.err.read_text()
    finally:
        run.stop()
    result = run.envelope()["result"]
    assert result["stop_reason"] == "interrupted" and f"--resume {run_id}" in result["resume"]
    last = events(project, run_id)[-1]
    assert last["kind"] == "run.stopped" and last["data"]["stop_reason"] == "interrupted"


def test_sigterm_during_the_preflight_exits_130_and_leaves_a_resumable_run(project: Path):
    _slow(project, "preflight")
    run = Run(project)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (project.parent / "pids").exists():
            assert run.proc.poll() is None and time.monotonic() < deadline, run.err.read_text()
            time.sleep(0.05)
        run.proc.send_signal(signal.SIGTERM)
        assert run.proc.wait(60) == 130, run.err.read_text()
    finally:
        run.stop()
    assert run.envelope()["error"]["code"] == "interrupted"
    # The preflight is the run's first recorded measurement: the run stops interrupted, resumable.
    (run_id,) = os.listdir(project / ".ratchet" / "runs")
    stopped = [e["data"] for e in events(project, run_id) if e["kind"] == "run.stopped"]
    assert stopped and stopped[-1]["stop_reason"] == "interrupted"


def test_a_second_run_in_the_project_is_refused_naming_the_first_ones_pid(project: Path):
    _slow(project, "preflight")  # the first run holds the project from before its preflight
    first = Run(project)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (project.parent / "pids").exists():
            assert first.proc.poll() is None and time.monotonic() < deadline, first.err.read_text()
            time.sleep(0.05)
        code, out, _ = ratchet("run", str(project))
        assert code == 2 and out["error"]["code"] == "run.concurrent", out
        assert f"pid {first.proc.pid}" in out["error"]["message"] and "--allow-concurrent" in out["error"]["hint"]
        assert len(os.listdir(project / ".ratchet" / "runs")) == 1, "the refused run opened no run of its own"
    finally:
        first.stop()


def test_allow_concurrent_lets_a_second_run_start_and_a_third_is_still_refused(project: Path):
    set_contract(project, replace={"[campaign]": "[budget]\nmax_attempts = 1\n\n[campaign]"})
    _slow(project, "a0001-trial")
    first = Run(project, "--allow-concurrent")
    try:
        _wait_for_job(project, first, "a0001-trial")
        code, out, _ = ratchet("run", str(project))  # the first holds only its run's lock: still seen
        assert code == 2 and out["error"]["code"] == "run.concurrent" and f"pid {first.proc.pid}" in \
            out["error"]["message"]
        _slow(project, "")
        code, out, err = ratchet("run", str(project), "--allow-concurrent")
        assert code == 0, err
        assert first.proc.poll() is None  # both ran at once
    finally:
        first.stop()
