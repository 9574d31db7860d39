"""Finding, recording and killing a job's processes through /proc.

A job's processes are its leader (started in a new session, so its process group and session id
equal its pid), every process descending from it, every member of its process group or session,
and every process whose environment carries the job's marker (`HOME=<scratch>` or
`TMPDIR=<scratch>`: the job's private scratch directory). The marker catches a grandchild that
called `setsid` and was re-parented to init, which neither ancestry nor the process group can.

Without the sandbox a job's leader is the reaper shim (`reaper.py`), a child subreaper: orphans
re-parent to it, so they stay descendants of the leader even when they dropped the marker. Where a
cgroup v2 can be created (`cgroup.py`), a job's processes are also the members of its cgroup.

Running jobs are recorded as `pid_dir/<job_id>.pid` (JSON: pid, start time, marker, cgroup) so a
resumed kernel kills the survivors of a crashed one (`kill_recorded`); the start time read from
/proc/<pid>/stat guards against killing a reused pid.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ratchet.compute.cgroup import JobCgroup
from ratchet.core.jobfiles import PID_SUFFIX, pid_file
from ratchet.ledger.files import write_exclusive


@dataclass(frozen=True)
class ProcInfo:
    """One live process: pid, parent pid, process group, session, start time (clock ticks since
    boot, field 22 of /proc/<pid>/stat), state letter (R, S, D, Z, ...)."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    start_time: int
    state: str


def read_proc(pid: int) -> ProcInfo | None:
    """The /proc/<pid>/stat facts of `pid`, or None when it does not exist (or cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcInfo(
            pid, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]), fields[0].decode()
        )
    except (IndexError, ValueError):
        return None


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot, or None when it does not exist."""
    info = read_proc(pid)
    return info.start_time if info else None


def all_processes() -> dict[int, ProcInfo]:
    """Every live (non-zombie) process visible in /proc, by pid."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = read_proc(int(name))
            if info is not None and info.state not in ("Z", "X"):
                found[info.pid] = info
    return found


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    return b"HOME=" + marker in env or b"TMPDIR=" + marker in env


def job_processes(leader: int | None, marker: str | None, since: int | None = None) -> dict[int, ProcInfo]:
    """The live processes of the job led by `leader`, the leader excluded: its descendants, the
    members of its process group and session (None: no leader, marker only), and the processes
    carrying `marker` (the scratch path; None: no marker search) started at or after `since` (clock
    ticks since boot: the job's start; None: any). Never includes this process."""
    procs = all_processes()
    found: set[int] = set()
    if leader is not None:
        children: dict[int, list[int]] = {}
        for info in procs.values():
            children.setdefault(info.ppid, []).append(info.pid)
        stack = [leader]
        while stack:
            for child in children.get(stack.pop(), []):
                if child not in found:
                    found.add(child)
                    stack.append(child)
        found |= {p for p, i in procs.items() if i.pgid == leader or i.sid == leader}
    if marker is not None:
        mark = os.fsencode(marker)
        found |= {
            p
            for p, i in procs.items()
            if p not in found and (since is None or i.start_time >= since) and _has_marker(p, mark)
        }
    found -= {leader or -1, os.getpid()}
    return {p: procs[p] for p in found if p in procs}


def signal_processes(procs: Iterable[ProcInfo], sig: int) -> int:
    """Send `sig` to each process still running with the same start time; returns how many got it."""
    sent = 0
    for info in procs:
        current = read_proc(info.pid)
        if current is None or current.start_time != info.start_time:
            continue
        try:
            os.kill(info.pid, sig)
            sent += 1
        except (ProcessLookupError, PermissionError):
            pass
    return sent


def record(pid_dir: Path, job_id: str, pid: int, marker: str, cgroup: str | None = None) -> Path:
    """Write `pid_dir/<job_id>.pid` ({"job_id", "pid", "start_time", "marker", "cgroup"})
    exclusively (temp file + rename). cgroup: the job's cgroup directory (None: none). Returns its
    path."""
    pid_dir.mkdir(parents=True, exist_ok=True)
    data = {"job_id": job_id, "pid": pid, "start_time": process_start_time(pid), "marker": marker,
            "cgroup": cgroup}
    final = pid_file(pid_dir, job_id)
    write_exclusive(final, json.dumps(data).encode(), mode=0o600)
    return final


def forget(pid_dir: Path, job_id: str) -> None:
    """Remove the record of `job_id` (the job has ended)."""
    try:
        pid_file(pid_dir, job_id).unlink()
    except FileNotFoundError:
        pass


def kill_recorded(pid_dir: Path) -> list[str]:
    """Kill (SIGKILL) every process of every job recorded in `pid_dir` that is still alive — the
    survivors of a crashed kernel — and remove the records. A recorded pid whose start time differs
    is a reused pid and is left alone (its marked descendants are still killed). Unreadable records
    are removed. Returns the ids of the jobs that had something to kill."""
    killed: list[str] = []
    if not pid_dir.is_dir():
        return killed
    for path in sorted(pid_dir.glob(f"*{PID_SUFFIX}")):
        try:
            data = json.loads(path.read_text())
            job_id, pid, start, marker = data["job_id"], int(data["pid"]), data["start_time"], data["marker"]
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        leader = read_proc(pid)
        ours = leader is not None and leader.start_time == start and leader.state not in ("Z", "X")
        victims = list(
            job_processes(pid if ours else None, marker, start if isinstance(start, int) else None).values()
        )
        if ours and leader is not None:
            victims.append(leader)
        group = JobCgroup.at(data["cgroup"]) if isinstance(data.get("cgroup"), str) else None
        in_group = bool(group and group.pids())
        if group is not None:
            group.remove()
        if signal_processes(victims, signal.SIGKILL) or in_group:
            killed.append(job_id)
        path.unlink(missing_ok=True)
    return killed


def kill_marked_under(root: Path) -> list[int]:
    """SIGKILL every live process whose HOME or TMPDIR lies under `root` (a run's jobs directory:
    each job's marker is its scratch directory there). Catches a crashed kernel's job that started
    before its pid could be recorded, which `kill_recorded` cannot know. Returns the pids signalled."""
    prefix = os.fsencode(os.path.realpath(root)).rstrip(b"/") + b"/"
    victims = []
    for info in all_processes().values():
        if info.pid == os.getpid():
            continue
        try:
            with open(f"/proc/{info.pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if any(v.startswith((b"HOME=" + prefix, b"TMPDIR=" + prefix)) for v in env):
            victims.append(info)
    signal_processes(victims, signal.SIGKILL)
    return [v.pid for v in victims]
