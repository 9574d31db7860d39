"""The kernel's effects for one run: the run directory, its lock, the ledger writer and index, the
blob store, git, the executor, the sandbox and the cache — opened for a new run or a resume.

Everything the campaign loop touches on disk or in other processes goes through a `Kernel`.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import shutil
import signal
import sys
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet.compute.base import Executor, SandboxSpec
from ratchet.compute.cache import MeasurementCache
from ratchet.compute.env import sandbox_spec
from ratchet.compute.factory import make_executor
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract, parse_contract
from ratchet.core.errors import ContractError, DataError, RatchetError
from ratchet.core.events import RESUMABLE_FORMATS
from ratchet.core.payloads import Payload, RunStarted, check_payload
from ratchet.core.state import RunState, fold
from ratchet.ledger.blobs import BlobStore
from ratchet.ledger.events import Event, EventLog, scan_log
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.index import Index
from ratchet.ledger.lock import RunLock, acquire_lock, is_locked
from ratchet.ledger.rundir import ONE_SHOT_MODES, RATCHET_DIR, RunDir, list_runs, new_run_id
from ratchet.ledger.signing import SIGNED_KINDS, Signer, load_signer
from ratchet.loop.measure import Progress, Runner
from ratchet.targets.base import Jobs
from ratchet.workspace.git import Git

Clock = Callable[[], dt.datetime]

CRASH_AT_ENV = "RATCHET_TEST_CRASH_AT"
"""Test hook (tests/test_resume.py): `before:<event kind>:<n>` or `after:<event kind>:<n>` makes the
kernel SIGKILL itself just before or just after the n-th event of that kind in the whole ledger is
appended — a crash at an exact step. Read when a kernel opens; unset in normal use."""

SALT_ENV = "RATCHET_TEST_SALT"
"""Test hook (tests/loop/test_slurm_campaign.py): the run's salt instead of a random one, so two
runs draw the same unit seeds (the same campaign on two backends). Unset in normal use: a salt an
agent could predict would let it pick its units."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a run cleanly: jobs killed, stop reason `interrupted`, exit 130, resumable."""


def utc_now() -> dt.datetime:
    """The wall clock, timezone-aware UTC (the only clock the kernel reads)."""
    return dt.datetime.now(dt.UTC)


@dataclass
class Kernel:
    """An open run: holds the lock until `close()`. `record` appends one ledger event (and keeps
    the SQLite index in step); `state()` folds the ledger."""

    loaded: LoadedContract
    run: RunDir
    lock: RunLock
    log: EventLog
    index: Index
    blobs: BlobStore
    git: Git
    executor: Executor
    sandbox: SandboxSpec
    cache: MeasurementCache | None
    clock: Clock = utc_now
    interrupted: bool = False
    crash_at: tuple[str, str, int] | None = None
    signer: Signer | None = None
    _old_handlers: dict[int, Any] = field(default_factory=dict, repr=False)
    _folded: tuple[int, RunState] | None = field(default=None, repr=False)
    _by_kind: dict[str, list[Event]] = field(default_factory=dict, repr=False)
    _indexed: int = field(default=0, repr=False)
    _scan_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def contract(self) -> Contract:
        """The run's contract."""
        return self.loaded.contract

    def record(self, payload: Payload) -> Event:
        """Append one event of `payload`'s kind (fsynced) and apply it to the index; an event of
        SIGNED_KINDS is signed first (ledger/signing.py). Raises LedgerError `ledger.bad_payload`
        (nothing written) when `payload` does not hold its model's types (core.payloads)."""
        kind = payload.kind
        data = payload.to_data()
        if self.signer is not None and kind in SIGNED_KINDS:  # signed over its data and the chain head
            data = self.signer.sign(kind, self.log.last_seq + 1, self.log.last_digest, data)
        check_payload(kind, data)
        if self.crash_at is not None:
            self._crash_if("before", kind)
        event = self.log.append(kind, data, self.clock())
        self.index.apply(event)
        if self.crash_at is not None:
            self._crash_if("after", kind)
        return event

    def _crash_if(self, when: str, kind: str) -> None:
        """The CRASH_AT_ENV test hook: SIGKILL this process at the configured step."""
        assert self.crash_at is not None
        at, at_kind, n = self.crash_at
        if (at, at_kind) != (when, kind):
            return
        count = sum(1 for e in self.log.events if e.kind == kind) + (1 if when == "before" else 0)
        if count == n:
            os.kill(os.getpid(), signal.SIGKILL)

    def find(self, kind: str, **key: Any) -> Event | None:
        """The last recorded event of `kind` whose payload matches every `key` (field name ->
        value; None: none). Scans only the events of that kind (kept per kind as the ledger grows)."""
        for event in reversed(self.events_of(kind)):
            payload = event.payload
            if all(getattr(payload, k) == v for k, v in key.items()):
                return event
        return None

    def events_of(self, kind: str) -> list[Event]:
        """The ledger's events of `kind`, oldest first: the per-kind lists are brought up to date
        with the events appended since the last call (the ledger only grows). Read-only: the list is
        the kernel's own."""
        with self._scan_lock:
            for event in self.log.events_after(self._indexed - 1):
                self._by_kind.setdefault(event.kind, []).append(event)
                self._indexed = event.seq + 1
            return self._by_kind.get(kind, [])

    def once(self, payload: Payload, *keys: str) -> Event:
        """Record `payload` unless an event of its kind with the same `keys` field values exists (a
        resume replaying the loop never records a step twice); returns the event either way."""
        return self.find(payload.kind, **{k: getattr(payload, k) for k in keys}) or self.record(payload)

    def state(self) -> RunState:
        """The run's state folded from its ledger; folded again only when an event was appended
        since the last call (the ledger only grows, and `fold` is pure)."""
        seq = self.log.last_seq
        if self._folded is None or self._folded[0] != seq:
            self._folded = (seq, fold(self.log.events))
        return self._folded[1]

    def runner(self, target: Jobs, progress: Progress | None = None) -> Runner:
        """The runner of `target`'s jobs for this run, reusing every job already finished in the
        ledger."""
        def record(payload: Payload) -> None:
            self.record(payload)

        state = self.state()
        return Runner(git=self.git, executor=self.executor, target=target, work_dir=self.run.root / "work",
                      record=record, cache=self.cache, done=state.finished_jobs, progress=progress,
                      running=state.running_jobs)

    def install_sigint(self) -> None:
        """Ctrl-C or SIGTERM (STOP_SIGNALS): kill running jobs and mark the run interrupted (the
        loop stops at the next step; exit 130, resumable)."""

        def handler(signum: int, frame: Any) -> None:
            self.interrupted = True
            self.executor.cancel()

        for sig in STOP_SIGNALS:
            self._old_handlers[sig] = signal.signal(sig, handler)

    def close(self) -> None:
        """Restore the stop signals' handlers, close the log, index and executor, release the lock."""
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()
        self.executor.close()
        self.index.close()
        self.log.close()
        self.lock.release()


def _effects(loaded: LoadedContract, run: RunDir, lock: RunLock, log: EventLog, clock: Clock) -> Kernel:
    contract = loaded.contract
    executor = make_executor(contract.compute, run.jobs, pid_dir=run.pids)
    # On a cluster the nodes decide: a probe job checks bwrap there (recorded in run.started).
    probe = getattr(executor, "probe_sandbox", None)
    mode = probe(contract.sandbox.mode) if probe is not None else resolve_mode(contract.sandbox.mode)
    if mode == "none" and contract.sandbox.mode == "none":
        print("warning: sandbox.mode = 'none': jobs run without isolation from your files and network",
              file=sys.stderr)
    cache = MeasurementCache(loaded.root / RATCHET_DIR / "cache") if contract.target.cache else None
    index = Index(run.index)
    index.sync(log.events)
    return Kernel(loaded, run, lock, log, index, BlobStore(run.blobs), Git(loaded.root), executor,
                  sandbox_spec(contract.sandbox, mode), cache, clock,
                  crash_at=_crash_at(os.environ.get(CRASH_AT_ENV)), signer=load_signer(loaded.root))


def _crash_at(spec: str | None) -> tuple[str, str, int] | None:
    """Parse CRASH_AT_ENV (`before|after:<kind>:<n>`); ValueError for anything else (a typo in a
    test must not silently run without its crash)."""
    if not spec:
        return None
    when, kind, n = spec.split(":")
    if when not in ("before", "after") or not n.isdigit():
        raise ValueError(f"{CRASH_AT_ENV}={spec!r}: expected before|after:<event kind>:<n>")
    return when, kind, int(n)


def interrupted_runs(root: Path) -> list[str]:
    """Runs of this project recorded as running or interrupted whose lock nobody holds (a run
    killed before its `run.started` was written measured nothing and is not one of them)."""
    out = []
    for run_id in list_runs(root):
        run = RunDir(root, run_id)
        if not run.events.exists() or is_locked(run.root) is not None:
            continue
        try:
            events, torn = scan_log(run.events)
        except RatchetError:
            out.append(run_id)  # damaged: only an explicit resume can say more
            continue
        if not events or not isinstance(started := events[0].payload, RunStarted) or started.mode in ONE_SHOT_MODES:
            continue
        if torn is not None or fold(events).state in ("running", "interrupted"):
            out.append(run_id)
    return out


def new_kernel(loaded: LoadedContract, clock: Clock = utc_now) -> tuple[Kernel, str]:
    """Create a run directory, take its lock, keep the contract and a fresh random salt.

    Returns (kernel, salt). Raises LedgerError when the run cannot be created or locked.
    """
    now = clock()
    run = RunDir(loaded.root, new_run_id(now, secrets.token_hex(2)))
    run.create()
    lock = acquire_lock(run.root)
    write_exclusive(run.contract, loaded.text.encode("utf-8"))
    salt = os.environ.get(SALT_ENV) or secrets.token_hex(16)
    write_exclusive(run.root / "salt", salt.encode())
    log = EventLog.open(run.events)
    return _effects(loaded, run, lock, log, clock), salt


def resume_kernel(loaded: LoadedContract, run_id: str, clock: Clock = utc_now) -> Kernel:
    """Reopen run `run_id`: take its lock, repair a torn last line (recording `ledger.repaired`),
    refuse a changed contract (naming the changed keys), kill job processes a crashed kernel left
    behind (recorded, or carrying a marker under the run's jobs directory) and its job checkouts.
    Raises DataError `run.not_found` / `run.not_started` / `run.finished`, ContractError
    `contract.changed`, LedgerError (`ledger.locked` naming the holder's pid, a damaged ledger)."""
    run = RunDir(loaded.root, run_id)
    if not run.exists():
        raise DataError("run.not_found", f"run {run_id} does not exist in {run.root.parent}")
    lock = acquire_lock(run.root)
    try:
        _check_same_contract(run, loaded)
        log = EventLog.open(run.events, repair=True, now=clock().isoformat())
        started = log.events[0].payload if log.events else None
        if not isinstance(started, RunStarted):
            raise DataError("run.not_started", f"run {run_id} was stopped before it started (no run.started "
                            "in its ledger): nothing was measured, nothing to resume",
                            hint="start a new run with `ratchet run`")
        _check_format(run_id, started.ledger_format)
        state = fold(log.events)
        mode = started.mode
        if mode in ONE_SHOT_MODES:
            code = "run.is_compare" if mode == "compare" else "run.is_calibrate"
            raise DataError(code, f"run {run_id} is a `ratchet {mode}`, not a campaign: nothing to resume",
                            hint=f"run `ratchet {mode}` again")
        if state.state == "stopped":
            raise DataError("run.finished", f"run {run_id} already stopped ({state.stop_reason}); nothing to resume",
                            hint=f"start a new run with `ratchet run`; `ratchet report {run_id}` re-renders "
                                 "its report")
        shutil.rmtree(run.root / "work", ignore_errors=True)  # checkouts the dead kernel left behind
        kernel = _effects(loaded, run, lock, log, clock)
    except BaseException:
        lock.release()
        raise
    # Jobs a crashed kernel started and never finished: local ones are killed now (their pipes died
    # with that kernel) and run again; a scheduler's keep running and the runner re-attaches to them
    # when the loop reaches them (Runner.measure), so none is submitted twice.
    if kernel.executor.backend == "local":
        kernel.executor.reattach({job_id: str(ext) for job_id, ext in state.running_jobs.items() if ext is not None})
    return kernel


def _check_format(run_id: str, recorded: Any) -> None:
    """Refuse to resume a run written in another ledger format (its steps would not replay the
    same). Raises DataError `ledger.old_format`."""
    if recorded not in RESUMABLE_FORMATS:
        formats = ", ".join(str(f) for f in sorted(RESUMABLE_FORMATS))
        raise DataError(
            "ledger.old_format",
            f"run {run_id} was recorded in ledger format {recorded}; this build resumes formats {formats} only",
            hint=f"start a new run with `ratchet run`; `ratchet status {run_id}` and `ratchet report {run_id}` "
                 "still read it",
        )


def _check_same_contract(run: RunDir, loaded: LoadedContract) -> None:
    before = run.contract.read_text(encoding="utf-8")
    if before == loaded.text:
        return
    old = _flatten(tomllib.loads(before)) if _parses(before) else {}
    new = _flatten(tomllib.loads(loaded.text))
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if not changed:
        return  # comments or formatting only
    raise ContractError(
        "contract.changed",
        f"ratchet.toml changed since run {run.run_id} started: {', '.join(changed)}",
        hint=f"restore it (the original is {run.contract}), or give the run up with "
             f"`ratchet abandon {run.run_id} --dir {run.project_root}` and start a new run",
    )


def _parses(text: str) -> bool:
    try:
        parse_contract(text)
        return True
    except RatchetError:
        return False


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(_flatten(value, path))
        else:
            out[path] = value
    return out
