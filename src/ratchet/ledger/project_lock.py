"""One `ratchet run` per project at a time: two campaigns sharing the cores skew each other's
timing metrics, so a second one is refused, naming the first one's pid, unless the user says they
mean it (`ratchet run --allow-concurrent`).

The project lock is a RunLock (flock, released when its holder dies) on `.ratchet/active/`, taken
before the preflight and held until the run ends. A run started with `--allow-concurrent` does not
take it, but it still holds its own run's lock, so the runs of the project are scanned too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ratchet.core.errors import DataError, LedgerError
from ratchet.ledger.files import make_dirs
from ratchet.ledger.lock import RunLock, acquire_lock, is_locked
from ratchet.ledger.rundir import RATCHET_DIR, RunDir, list_runs

ACTIVE_DIR = "active"
"""`.ratchet/active/`: holds the project lock (`lock`) and its holder's pid (`lock.pid`)."""

ALLOW_FLAG = "--allow-concurrent"
"""The `ratchet run` flag that lets a second run start while one runs."""


def _concurrent(root: Path, pid: int, what: str) -> DataError:
    holder = f"pid {pid}" if pid else "a process whose pid could not be read"
    stop = f"kill {pid}" if pid else "stop it"
    return DataError(
        "run.concurrent",
        f"another ratchet process ({holder}) is running {what} in {root}: two runs share the cores and "
        "skew each other's timing metrics",
        hint=f"wait for it to finish, or stop it ({stop}: it stops like Ctrl-C and can be resumed), or pass "
             f"{ALLOW_FLAG} if you mean to run both",
    )


def running_elsewhere(root: Path, skip: str | None = None) -> tuple[str, int] | None:
    """(run id, pid) of a run of the project at `root` whose lock another process holds (its
    pid, 0 when unreadable), or None. `skip`: a run id left out."""
    for run_id in reversed(list_runs(root)):
        if run_id == skip:
            continue
        pid = is_locked(RunDir(root, run_id).root)
        if pid is not None:
            return run_id, pid
    return None


@contextmanager
def sole_run(root: Path, allow_concurrent: bool = False, resume: str | None = None) -> Iterator[None]:
    """Hold the project lock of `root` (the project root) for the block.

    Raises LedgerError `ledger.locked` when `resume` names a run another process is writing (that
    error names its pid), DataError `run.concurrent` naming the pid of the other process when a run
    of the project is in progress. With `allow_concurrent` nothing is checked or held."""
    if allow_concurrent:
        yield
        return
    if resume is not None and (root / RATCHET_DIR / "runs" / resume).is_dir():
        acquire_lock(RunDir(root, resume).root).release()  # raises ledger.locked naming the holder
    active = root / RATCHET_DIR / ACTIVE_DIR
    make_dirs(active)
    lock = RunLock(active)
    try:
        lock.acquire()
    except LedgerError as err:
        if err.code != "ledger.locked":
            raise
        raise _concurrent(root, is_locked(active) or 0, "a run") from None
    try:
        other = running_elsewhere(root, skip=None)
        if other is not None:
            raise _concurrent(root, other[1], f"run {other[0]}")
        yield
    finally:
        lock.release()
