"""Recording running jobs and killing the survivors of a crashed kernel, with real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from jobkit import alive, pids_with_token

from ratchet.compute import pids

DAEMON = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    open(sys.argv[1], "w").write(str(os.getpid()))
    time.sleep(1000)
time.sleep(1000)
"""


def _start_job(tmp_path: Path, token: str) -> tuple[subprocess.Popen, Path, int]:
    """A 'job' as the executor starts one: new session, HOME/TMPDIR on its scratch directory."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": str(scratch)}
    pidfile = tmp_path / "grandchild.pid"
    proc = subprocess.Popen(
        [sys.executable, "-c", DAEMON, str(pidfile), token], env=env, start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc, scratch, int(pidfile.read_text())


def test_kill_recorded_kills_a_crashed_kernels_job_and_its_setsid_grandchild(tmp_path):
    token = uuid.uuid4().hex
    proc, scratch, grandchild = _start_job(tmp_path, token)
    pid_dir = tmp_path / "pids"
    pids.record(pid_dir, "t1-u0-candidate", proc.pid, str(scratch))
    assert json.loads((pid_dir / "t1-u0-candidate.pid").read_text())["start_time"] == pids.process_start_time(
        proc.pid
    )
    assert pids.kill_recorded(pid_dir) == ["t1-u0-candidate"]
    proc.wait(10)
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild) and pids_with_token(token) == []
    assert list(pid_dir.iterdir()) == []


def test_a_reused_pid_is_never_killed(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        pid_dir = tmp_path / "pids"
        pid_dir.mkdir()
        record = {
            "job_id": "old",
            "pid": sleeper.pid,
            "start_time": pids.process_start_time(sleeper.pid) - 1,
            "marker": str(tmp_path / "gone-scratch"),
        }
        (pid_dir / "old.pid").write_text(json.dumps(record))
        (pid_dir / "torn.pid").write_text('{"job_id": ')
        assert pids.kill_recorded(pid_dir) == []
        assert alive(sleeper.pid)
        assert list(pid_dir.iterdir()) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_record_and_forget(tmp_path):
    pid_dir = tmp_path / "pids"
    path = pids.record(pid_dir, "j1", os.getpid(), "/nowhere")
    assert path.exists() and json.loads(path.read_text())["pid"] == os.getpid()
    pids.forget(pid_dir, "j1")
    pids.forget(pid_dir, "j1")
    assert not path.exists()
    assert pids.kill_recorded(tmp_path / "never-created") == []


def test_job_processes_finds_descendants_but_never_this_process(tmp_path):
    token = uuid.uuid4().hex
    proc, scratch, grandchild = _start_job(tmp_path, token)
    try:
        found = pids.job_processes(proc.pid, str(scratch))
        assert grandchild in found and proc.pid not in found and os.getpid() not in found
        assert grandchild in pids.job_processes(None, str(scratch))
    finally:
        pids.signal_processes(found.values(), 9)
        proc.kill()
        proc.wait()
