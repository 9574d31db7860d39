"""The run lock: one writer per run directory, released when its process dies.

An exclusive flock(2) on `runs/<run_id>/lock`, with the holder's pid in `runs/<run_id>/lock.pid`.
flock belongs to the open file description, so the kernel drops it when the holder exits or is
killed (no stale lock to clean after a crash). The descriptor is O_CLOEXEC so jobs the holder
execs do not inherit it. `is_locked` probes with a shared lock held for microseconds and never
takes the lock from its holder; `acquire` retries for LOCK_WAIT_S so such a probe cannot make it
fail.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from ratchet.core.errors import LedgerError
from ratchet.ledger.files import FILE_MODE, read_nofollow, write_exclusive

LOCK_NAME = "lock"
"""The file whose flock is the run lock (never deleted: deleting a flocked file races)."""

PID_NAME = "lock.pid"
"""The file holding the lock holder's pid, as decimal text and a newline."""

LOCK_WAIT_S = 1.0
"""Seconds `acquire` and `is_locked` retry before concluding the lock is held by someone else."""

LOCK_POLL_S = 0.02
"""Seconds between two tries while waiting."""


def _open_lock_file(run_dir: Path, flags: int) -> int:
    return os.open(run_dir / LOCK_NAME, flags | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _read_pid(run_dir: Path) -> int | None:
    try:
        text = read_nofollow(run_dir / PID_NAME).decode("ascii").strip()
        return int(text) if text.isdigit() else None
    except (OSError, UnicodeDecodeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """The lock of the run directory `run_dir` (`runs/<run_id>/`). Use as a context manager or
    call `acquire()` / `release()`; `held` says whether this object holds it."""

    def __init__(self, run_dir: str | os.PathLike[str]):
        self.run_dir = Path(run_dir)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> RunLock:
        """Take the lock (retrying up to LOCK_WAIT_S) and record this process's pid in lock.pid.

        Raises LedgerError `ledger.locked` naming the holder's pid when another process (or another
        RunLock in this process) holds it; OSError when the run directory does not exist.
        """
        if self._fd is not None:
            return self
        fd = _open_lock_file(self.run_dir, os.O_RDWR | os.O_CREAT)
        deadline = time.monotonic() + LOCK_WAIT_S
        while not _try_flock(fd, fcntl.LOCK_EX):
            if time.monotonic() >= deadline:
                os.close(fd)
                raise _locked_error(self.run_dir, _read_pid(self.run_dir))
            time.sleep(LOCK_POLL_S)
        self._fd = fd
        write_exclusive(self.run_dir / PID_NAME, f"{os.getpid()}\n".encode())
        return self

    def release(self) -> None:
        """Remove lock.pid and drop the lock; a no-op when not held."""
        if self._fd is None:
            return
        (self.run_dir / PID_NAME).unlink(missing_ok=True)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _locked_error(run_dir: Path, pid: int | None) -> LedgerError:
    holder = f"pid {pid}" if pid else "a process whose pid could not be read"
    stop = f"stop it (kill {pid})" if pid else "stop it"
    return LedgerError(
        "ledger.locked",
        f"run {run_dir.name} is being written by another ratchet process ({holder})",
        f"wait for that run to finish, or {stop} and resume with `ratchet run --resume {run_dir.name}`",
    )


def acquire_lock(run_dir: str | os.PathLike[str]) -> RunLock:
    """Take the lock of `run_dir` and return it held. Raises LedgerError `ledger.locked`."""
    return RunLock(run_dir).acquire()


def is_locked(run_dir: str | os.PathLike[str]) -> int | None:
    """The pid of the process holding the lock of `run_dir`, or None when nobody holds it.

    Never takes the lock away from a holder. Returns 0 when the lock is held but the holder's pid
    cannot be read (lock.pid missing or naming a process that is not visible here).
    """
    run_dir = Path(run_dir)
    try:
        fd = _open_lock_file(run_dir, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            if _try_flock(fd, fcntl.LOCK_SH):
                fcntl.flock(fd, fcntl.LOCK_UN)
                return None
            pid = _read_pid(run_dir)
            if pid and _alive(pid):
                return pid
            if time.monotonic() >= deadline:
                return pid or 0
            time.sleep(LOCK_POLL_S)
    finally:
        os.close(fd)
