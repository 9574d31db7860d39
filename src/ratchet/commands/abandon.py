"""`ratchet abandon RUN`: close an unfinished run for good, so a changed contract or a fresh start
is no longer blocked by it.

The run's lock is taken (a run another process is writing is refused, naming its pid), a torn last
line is repaired (`ledger.repaired`), job processes a killed kernel left behind are killed, and one
`run.abandoned` event is appended: the run's state becomes `stopped` with stop reason `abandoned`.
Nothing is deleted: the ledger, the jobs' outputs, the champion branch and the report stay, and
`ratchet status` / `ratchet report` read them as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ratchet.compute.pids import kill_marked_under, kill_recorded
from ratchet.core.errors import DataError
from ratchet.core.payloads import RunAbandoned
from ratchet.core.state import fold
from ratchet.ledger.events import EventLog
from ratchet.ledger.index import Index
from ratchet.ledger.lock import acquire_lock
from ratchet.ledger.rundir import open_run
from ratchet.loop.kernel import utc_now


def abandon_run(project_root: Path, run_id: str) -> dict[str, Any]:
    """Abandon run `run_id` of the project at `project_root` (see the module docstring).

    Returns {"run_id", "state_before", "stop_reason": "abandoned", "killed_jobs"}. Raises DataError
    `run.bad_id` / `run.not_found` / `run.not_started` / `run.finished` (already stopped: nothing
    to abandon), LedgerError `ledger.locked` (a kernel is running it: stop it first) or for a
    damaged ledger."""
    run = open_run(project_root, run_id)
    lock = acquire_lock(run.root)
    try:
        log = EventLog.open(run.events, repair=True, now=utc_now())
        try:
            if not log.events or log.events[0].kind != "run.started":
                raise DataError(
                    "run.not_started",
                    f"run {run.run_id} was stopped before it started (no run.started in its ledger)",
                    hint="it measured nothing and blocks nothing: start a new run with `ratchet run`",
                )
            state = fold(log.events)
            if state.state == "stopped":
                raise DataError(
                    "run.finished",
                    f"run {run.run_id} already stopped ({state.stop_reason}); there is nothing to abandon",
                    hint="a new `ratchet run` is not blocked by a stopped run",
                )
            killed = kill_recorded(run.pids)
            kill_marked_under(run.jobs)
            log.append(RunAbandoned.kind, RunAbandoned(pid=os.getpid()).to_data(), utc_now())
        finally:
            log.close()
        with Index(run.index) as index:
            index.sync(list(log.events))
    finally:
        lock.release()
    return {"run_id": run.run_id, "state_before": state.state, "stop_reason": "abandoned",
            "killed_jobs": killed}
