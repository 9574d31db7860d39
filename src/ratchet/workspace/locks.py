"""Stale git lock files: `*.lock` files a killed git left behind block every later git command
(index.lock, HEAD.lock, refs/**.lock). Git holds no OS lock on them, so a lock is judged stale by
its age and by the absence of any git process working in the repository.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

STALE_LOCK_S = 5.0
"""A `*.lock` file older than this (seconds), with no git process working in the repo, is stale."""

TOP_LEVEL_LOCKS = (
    "index.lock",
    "HEAD.lock",
    "packed-refs.lock",
    "config.lock",
    "shallow.lock",
    "ORIG_HEAD.lock",
    "FETCH_HEAD.lock",
)
LOCK_DIRS = ("refs", "logs", "worktrees")


def lock_files(git_dir: Path) -> list[Path]:
    """Every `*.lock` file git may leave in `git_dir`: the top-level ones and any under refs/,
    logs/ and worktrees/."""
    found = [git_dir / name for name in TOP_LEVEL_LOCKS if (git_dir / name).is_file()]
    for sub in LOCK_DIRS:
        if (git_dir / sub).is_dir():
            found += [p for p in (git_dir / sub).rglob("*.lock") if p.is_file()]
    return found


def clean_stale_locks(root: Path, git_dir: Path, max_age_s: float = STALE_LOCK_S) -> list[Path]:
    """Remove the lock files of the repository (`root`: work tree, `git_dir`: common git dir) older
    than `max_age_s` seconds, unless a git process is working in it. Returns the removed paths."""
    now = time.time()
    stale = [p for p in lock_files(git_dir) if now - _mtime(p, now) > max_age_s]
    if not stale or git_running_in((root, git_dir)):
        return []
    removed = []
    for lock in stale:
        try:
            lock.unlink()
            removed.append(lock)
        except FileNotFoundError:
            pass
    return removed


def _mtime(path: Path, default: float) -> float:
    try:
        return path.lstat().st_mtime
    except FileNotFoundError:
        return default


def git_running_in(paths: Sequence[Path]) -> bool:
    """True when a process named git* (other than this one) has its working directory under one of
    `paths`: its lock files may be live."""
    roots = [str(p).rstrip("/") for p in paths]
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/comm", "rb") as f:
                if not f.read().startswith(b"git"):
                    continue
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if any(cwd == r or cwd.startswith(r + "/") for r in roots):
            return True
    return False
