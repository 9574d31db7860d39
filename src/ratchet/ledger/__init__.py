"""The ledger: the run's append-only event log and everything derived from it or stored beside it. The
format of one line, each kind's data and the fold into a RunState are pure and live in
`core/events.py`, `core/payloads.py` and `core/state.py`.

- `events.py`: the hash-chained events.jsonl, read and appended (EventLog, read_events, scan_log)
- `verify.py`: checking its lines (scan_events) or only their hash chain from some offset (check_chain)
- `index.py`: the derived, rebuildable index.sqlite
- `prefix.py`: the index's segment hashes of the ledger's bytes, and checking a file against them
- `snapshot.py`: the state `ratchet status` shows, read from the index when its segment hashes vouch
  for the ledger's first bytes
- `blobs.py`: content-addressed files under blobs/
- `signing.py`: the project's Ed25519 key pair and the signature some events carry
- `lock.py`: one writer per run (flock), is_locked for status
- `project_lock.py`: one `ratchet run` per project at a time
- `rundir.py`: the run directory layout (docs/ledger.md), run ids, .git/info/exclude
- `files.py`: exclusive writes (O_EXCL|O_NOFOLLOW temp, fsync, rename)

Effects: reads and writes files under `.ratchet/` (events, index, blobs, locks, keys) and
`.git/info/exclude`; takes flocks.
"""

from ratchet.core.state import AttemptState, BudgetUsed, Champion, Judgment, RunState, TreeRef, fold
from ratchet.ledger.blobs import BlobStore
from ratchet.ledger.events import (
    EVENT_KINDS,
    GENESIS_PREV,
    Event,
    EventKind,
    EventLog,
    LedgerLineError,
    read_events,
    scan_events,
    scan_log,
)
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.index import Index
from ratchet.ledger.lock import RunLock, acquire_lock, is_locked
from ratchet.ledger.rundir import (
    RunDir,
    ensure_ratchet_dir,
    latest_run,
    list_runs,
    new_run_id,
    open_run,
)

__all__ = [
    "EVENT_KINDS",
    "GENESIS_PREV",
    "AttemptState",
    "BlobStore",
    "BudgetUsed",
    "Champion",
    "Event",
    "EventKind",
    "EventLog",
    "Index",
    "Judgment",
    "LedgerLineError",
    "RunDir",
    "RunLock",
    "RunState",
    "TreeRef",
    "acquire_lock",
    "ensure_ratchet_dir",
    "fold",
    "is_locked",
    "latest_run",
    "list_runs",
    "new_run_id",
    "open_run",
    "read_events",
    "scan_events",
    "scan_log",
    "write_exclusive",
]
