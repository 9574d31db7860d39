"""`ratchet abandon RUN`: close an unfinished run for good, so a changed contract or a fresh start
is no longer blocked by it.

The run's lock is taken (a run another process is writing is refused, naming its pid), a torn last
line is repaired (`ledger.repaired`), job processes a killed kernel left behind are killed, and one
`run.abandoned` event (pid, reason) is appended: the run's state becomes `stopped` with stop reason
`abandoned`.
Nothing is deleted: the ledger, the jobs' outputs, the champion branch and the report stay, and
`ratchet status` / `ratchet report` read them as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.loop.life import abandon


def abandon_run(project_root: Path, run_id: str) -> dict[str, Any]:
    """Abandon run `run_id` of the project at `project_root` (see the module docstring).

    Returns {"run_id", "state_before", "stop_reason": "abandoned", "killed_jobs"}. Raises DataError
    `run.bad_id` / `run.not_found` / `run.not_started` / `run.finished` (already stopped: nothing
    to abandon), LedgerError `ledger.locked` (a kernel is running it: stop it first) or for a
    damaged ledger."""
    done = abandon(project_root, run_id)
    return {"run_id": done.run_id, "state_before": done.state_before, "stop_reason": "abandoned",
            "killed_jobs": done.killed_jobs}
