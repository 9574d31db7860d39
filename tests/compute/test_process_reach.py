"""Every process a job starts stays in the kernel's reach without relying on its environment
(issue 16, item 2): an `env -i ... setsid` grandchild carries no marker, leaves the job's session
and is orphaned at once, yet the reaper shim (a child subreaper) and the job's cgroup v2 keep it
reachable. Run without the sandbox (`sandbox.mode = "none"`), where nothing else would catch it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from jobkit import alive, pids_with_token, spec

from ratchet.compute import pids, reaper
from ratchet.compute.cgroup import JobCgroup
from ratchet.compute.local import LocalExecutor

CGROUP = JobCgroup.create("probe")
if CGROUP is not None:
    CGROUP.remove()
needs_cgroup = pytest.mark.skipif(CGROUP is None, reason="no writable cgroup v2 with cgroup.kill here")

ESCAPE = """\
env -i /usr/bin/setsid /bin/sh -c 'echo $$ > gc.tmp; mv gc.tmp grandchild.pid; exec /bin/sleep 1000' \\
    < /dev/null > /dev/null 2>&1 &
while [ ! -s grandchild.pid ]; do sleep 0.02; done
"""


def _escape(work: Path, then: str) -> str:
    """A job whose grandchild drops the whole environment (no HOME/TMPDIR marker), starts a new
    session and is orphaned at once (its parent shell exits), writing its pid to grandchild.pid;
    `then`: what the job does next."""
    (work / "escape.sh").write_text(ESCAPE)
    return f"/bin/sh escape.sh; {then}"


def _grandchild(work: Path, wait_s: float = 20.0) -> int:
    deadline = time.monotonic() + wait_s
    while not (work / "grandchild.pid").exists():
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.02)
    return int((work / "grandchild.pid").read_text())


def _dies(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def test_an_env_i_setsid_grandchild_is_killed_when_its_job_ends(work, jobs_dir):
    result = LocalExecutor(jobs_dir, 1).run([spec("ends", _escape(work, "echo done"), work)])[0]
    assert result.state == "ok", result.reason
    assert not alive(_grandchild(work)), "a grandchild without the marker outlived its job"


def test_an_env_i_setsid_grandchild_is_killed_at_the_timeout(work, jobs_dir):
    result = LocalExecutor(jobs_dir, 1).run([spec("slow", _escape(work, "sleep 1000"), work, timeout_s=3.0)])[0]
    assert result.state == "timeout" and "descendant" in result.reason, result.reason
    assert not alive(_grandchild(work)), "a grandchild without the marker outlived the timeout"


def test_an_env_i_setsid_grandchild_is_killed_when_the_job_is_stopped(work, jobs_dir):
    executor = LocalExecutor(jobs_dir, 1)
    out: list = []
    job = spec("stop", _escape(work, "sleep 1000"), work)
    runner = threading.Thread(target=lambda: out.extend(executor.run([job])))
    runner.start()
    grandchild = _grandchild(work)
    while pids_with_token("/bin/sh\0escape.sh"):
        time.sleep(0.02)  # its parent is gone: the grandchild is an orphan now
    executor.cancel(["stop"])
    runner.join(30)
    assert [r.state for r in out] == ["cancelled"]
    assert not alive(grandchild), "a grandchild without the marker outlived the stop"


def test_the_shim_exits_as_its_job_did_and_passes_stdin_through():
    shim = reaper.argv_for(["/bin/sh", "-c", "read x; echo got $x; exit 7"], sys.executable)
    proc = subprocess.run(shim, input=b"abc\n", capture_output=True, timeout=30)
    assert (proc.returncode, proc.stdout) == (7, b"got abc\n")
    killed = subprocess.run(reaper.argv_for(["/bin/sh", "-c", "kill -TERM $$"], sys.executable), timeout=30)
    assert killed.returncode == -15
    missing = subprocess.run(reaper.argv_for(["/no/such/program"], sys.executable), capture_output=True, timeout=30)
    assert missing.returncode == reaper.SPAWN_FAILED_EXIT and b"could not start" in missing.stderr


def test_a_crashed_kernels_job_is_killed_on_resume_even_without_a_marker(tmp_path):
    """The kernel died; its job (the shim and an `env -i setsid` grandchild) lives on. The record
    alone is enough: the grandchild is the shim's child (and in the recorded cgroup, if any)."""
    group = JobCgroup.create("crashed")
    argv = reaper.argv_for(["/bin/sh", "-c", _escape(tmp_path, "sleep 1000")], sys.executable,
                           str(group.path) if group else None)
    shim = subprocess.Popen(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    try:
        grandchild = _grandchild(tmp_path)
        assert grandchild in _descendants(shim.pid)  # re-parented to the subreaper, not to init
        pids.record(tmp_path / "pids", "crashed-job", shim.pid, str(tmp_path / "no-marker"),
                    str(group.path) if group else None)
        assert pids.kill_recorded(tmp_path / "pids") == ["crashed-job"]
        shim.wait(10)
        assert _dies(grandchild)
        assert group is None or not group.path.exists()
    finally:
        if shim.poll() is None:
            shim.kill()
        if group is not None:
            group.remove()


@needs_cgroup
def test_a_job_runs_in_its_own_cgroup_which_is_removed_when_it_ends(work, jobs_dir):
    result = LocalExecutor(jobs_dir, 1).run([spec("cg", "cat /proc/self/cgroup", work)])[0]
    assert result.state == "ok", result.reason
    (line,) = [x for x in (jobs_dir / "cg" / "stdout").read_text().splitlines() if x.startswith("0::")]
    prefix = f"ratchet-{os.getpid()}-cg-"
    assert Path(line[3:]).name.startswith(prefix)
    assert CGROUP is not None
    assert not any(p.name.startswith(prefix) for p in CGROUP.path.parent.iterdir())


@needs_cgroup
def test_empty_cgroups_of_a_kernel_that_died_are_removed_by_the_next_one(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert CGROUP is not None
    stale = CGROUP.path.parent / f"ratchet-{dead.pid}-a0001-trial-u000-candidate-0000abcd"
    stale.mkdir()
    mine = JobCgroup.create("next")
    assert mine is not None and not stale.exists()
    mine.remove()


def _descendants(pid: int) -> set[int]:
    procs = pids.all_processes()
    found, stack = set(), [pid]
    while stack:
        parent = stack.pop()
        for info in procs.values():
            if info.ppid == parent and info.pid not in found:
                found.add(info.pid)
                stack.append(info.pid)
    return found


def test_setsid_is_on_this_machine():
    assert os.access("/usr/bin/setsid", os.X_OK), "the tests above need util-linux's setsid"
