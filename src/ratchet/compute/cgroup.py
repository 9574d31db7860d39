"""A cgroup v2 per job, where one can be created: every process the job starts stays in it, whatever
it does to its environment, session or parent, and `cgroup.kill` (Linux >= 5.14) kills them all.

The job's cgroup is created as a child of the cgroup this process runs in (`/proc/self/cgroup`,
line `0::<path>`, under the cgroup2 mount of `/proc/self/mounts`), named
`ratchet-<kernel pid>-<job>-<random>`. A kernel killed outright leaves its jobs' cgroups behind; once
empty, and their kernel gone, the next `create` beside them removes them (`remove_stale`).
Where that directory is not writable (no delegation, cgroup v1 only, not Linux) or has no
`cgroup.kill`, `JobCgroup.create` returns None and the job runs without one: the reaper shim
(`reaper.py`) and the kernel's process scan still reach its processes. The job's first process joins
the cgroup itself (`reaper.py --cgroup DIR`), before it starts anything, so no fork escapes.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_PREFIX = "ratchet-"
"""Name prefix of every cgroup Ratchet creates (and the only ones it will remove)."""

REMOVE_ROUNDS = 100
"""Tries (REMOVE_POLL_S apart) to remove a killed job's cgroup while its processes exit."""

REMOVE_POLL_S = 0.01
"""Seconds between two tries of `JobCgroup.remove`."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def cgroup2_mount(mounts: str = "/proc/self/mounts") -> Path | None:
    """The mount point of the cgroup v2 hierarchy, or None when there is none."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == "cgroup2":
                    return Path(fields[1])
    except OSError:
        return None
    return None


def own_cgroup(pid: int | str = "self") -> str | None:
    """The cgroup v2 path of process `pid` (e.g. `/user.slice/...`), or None."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class JobCgroup:
    """One job's cgroup directory `path` (under the cgroup2 mount)."""

    path: Path

    @classmethod
    def create(cls, job_id: str) -> JobCgroup | None:
        """A new, empty cgroup for job `job_id` below this process's cgroup, or None where none can
        be created (see the module docstring). Never raises."""
        mount, own = cgroup2_mount(), own_cgroup()
        if mount is None or own is None:
            return None
        parent = mount / own.lstrip("/")
        if not os.access(parent, os.W_OK):
            return None
        remove_stale(parent)
        path = parent / f"{CGROUP_PREFIX}{os.getpid()}-{_UNSAFE.sub('_', job_id)[:80]}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path)
        if not (path / "cgroup.kill").exists():
            group.remove()
            return None
        return group

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> JobCgroup | None:
        """The job cgroup recorded at `path` (see `pids.record`), or None when `path` is not a
        Ratchet cgroup directory under the cgroup2 mount (a record is never trusted to name
        another directory)."""
        mount = cgroup2_mount()
        path = Path(path)
        if mount is None or not path.name.startswith(CGROUP_PREFIX) or mount not in path.parents:
            return None
        return cls(path)

    def pids(self) -> list[int]:
        """The pids of the processes in the cgroup now (empty when it is gone)."""
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (and in its descendants); a no-op when it is gone."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            pass

    def remove(self) -> bool:
        """Kill what is left and remove the directory; True once it is gone."""
        for _ in range(REMOVE_ROUNDS):
            if not self.path.exists():
                return True
            self.kill()
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                time.sleep(REMOVE_POLL_S)
        return False


def remove_stale(parent: Path) -> list[str]:
    """Remove the empty Ratchet cgroups under `parent` whose kernel (the pid in their name) is gone;
    returns their names. A cgroup that still holds a process is never touched (rmdir refuses it)."""
    removed: list[str] = []
    try:
        names = [e.name for e in os.scandir(parent) if e.name.startswith(CGROUP_PREFIX) and e.is_dir()]
    except OSError:
        return removed
    for name in names:
        pid = name[len(CGROUP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            (parent / name).rmdir()
            removed.append(name)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
