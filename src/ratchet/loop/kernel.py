"""The kernel's effects for one run: the run directory, its lock, the ledger writer and index, the
blob store, git, the executor, the agent's local executor, the sandbox and the cache (`loop.life`
opens it for a new run or a resume).

Everything the campaign loop touches on disk or in other processes goes through a `Kernel`.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from ratchet.compute.base import Executor, SandboxSpec
from ratchet.compute.cache import MeasurementCache
from ratchet.compute.env import sandbox_spec
from ratchet.compute.factory import make_agent_executor, make_executor
from ratchet.core.canonical import digest
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.payloads import Payload, RunStarted, check_payload
from ratchet.core.state import RunState, fold
from ratchet.ledger.blobs import BlobStore
from ratchet.ledger.events import Event, EventLog
from ratchet.ledger.index import Index
from ratchet.ledger.lock import RunLock
from ratchet.ledger.rundir import RATCHET_DIR, RunDir
from ratchet.ledger.signing import SIGNED_KINDS, Signer, load_signer
from ratchet.loop.measure import Progress, Runner
from ratchet.loop.prompt_eval import make_prompt_executor
from ratchet.targets.base import Jobs
from ratchet.workspace.git import Git

Clock = Callable[[], dt.datetime]

P = TypeVar("P", bound=Payload)

CRASH_AT_ENV = "RATCHET_TEST_CRASH_AT"
"""Test hook (tests/loop/test_resume.py): `before:<event kind>:<n>` or `after:<event kind>:<n>` makes the
kernel SIGKILL itself just before or just after the n-th event of that kind in the whole ledger is
appended — a crash at an exact step. Read when a kernel opens; unset in normal use."""

SALT_ENV = "RATCHET_TEST_SALT"
"""Test hook (tests/loop/test_slurm_campaign.py): the run's salt instead of a random one, so two
runs draw the same unit seeds (the same campaign on two backends). Unset in normal use: a salt an
agent could predict would let it pick its units."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a run cleanly: jobs killed, stop reason `interrupted`, exit 130, resumable."""

AGENTS_TMP = "ratchet-agents"
"""Under the system's temporary directory: command agents' workspaces and legs, one folder per run
(`<project digest>/<run_id>/`)."""

AGENT_JOBS_DIR = "legs"
"""Under a run's agent work directory: `<job_id>/` of each job the agent executor ran (a command
agent's legs)."""


def agent_work_dir(root: Path, run_id: str) -> Path:
    """Where run `run_id` of the project at `root` has its command agent work: outside the project,
    the run's own (no other run of the project, concurrent or later, uses it), the same across a
    resume. Removed when the run stops for good (`Kernel.close`, `loop.life.abandon`)."""
    return Path(tempfile.gettempdir()) / AGENTS_TMP / digest(str(root.resolve()))[7:23] / run_id


def remove_agent_work_dir(root: Path, run_id: str) -> None:
    """Remove run `run_id`'s agent work directory (`agent_work_dir`) and its project's folder once
    empty; nothing when there is none."""
    where = agent_work_dir(root, run_id)
    shutil.rmtree(where, ignore_errors=True)
    try:
        where.parent.rmdir()
    except OSError:
        pass  # another run of the project still has its folder there (or it is gone already)


def utc_now() -> dt.datetime:
    """The wall clock, timezone-aware UTC (the only clock the kernel reads)."""
    return dt.datetime.now(dt.UTC)


@dataclass
class Kernel:
    """An open run: holds the lock until `close()`. `record` appends one ledger event (and keeps
    the SQLite index in step); `state()` folds the ledger. `executor` runs the target's jobs on
    `compute.backend`; `agent_executor` runs an agent's own processes (a command agent's legs) one
    per worker at a time on this machine, whatever the backend, in the run's `agent_dir`."""

    loaded: LoadedContract
    run: RunDir
    lock: RunLock
    log: EventLog
    index: Index
    blobs: BlobStore
    git: Git
    executor: Executor
    agent_executor: Executor
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
    guard: threading.RLock = field(default_factory=threading.RLock, repr=False)
    """Held around every ledger read and write (`record`, `once`, `state`, `find`): the campaign's
    workers (`agent.workers`) record from their own threads, and a step that reads the ledger and
    then records (a trial's number, a compare-and-swap promotion) holds it across both."""

    @property
    def contract(self) -> Contract:
        """The run's contract."""
        return self.loaded.contract

    @property
    def agent_dir(self) -> Path:
        """The run's own agent work directory (`agent_work_dir`): a command agent's workspaces and legs."""
        return agent_work_dir(self.loaded.root, self.run.run_id)

    def record(self, payload: Payload) -> Event:
        """Append one event of `payload`'s kind (fsynced) and apply it to the index; an event of
        SIGNED_KINDS is signed first (ledger/signing.py). Raises LedgerError `ledger.bad_payload`
        (nothing written) when `payload` does not hold its model's types (core.payloads)."""
        with self.guard:
            return self._record(payload)

    def _record(self, payload: Payload) -> Event:
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
        with self.guard:
            for event in reversed(self.events_of(kind)):
                payload = event.payload
                if all(getattr(payload, k) == v for k, v in key.items()):
                    return event
            return None

    def events_of(self, kind: str) -> list[Event]:
        """The ledger's events of `kind`, oldest first: the per-kind lists are brought up to date
        with the events appended since the last call (the ledger only grows). Read-only: the list is
        the kernel's own."""
        with self.guard, self._scan_lock:
            for event in self.log.events_after(self._indexed - 1):
                self._by_kind.setdefault(event.kind, []).append(event)
                self._indexed = event.seq + 1
            return self._by_kind.get(kind, [])

    def recorded(self, model: type[P], **key: Any) -> P | None:
        """The payload of the last recorded event of `model`'s kind whose fields match every `key`
        (see `find`), or None."""
        event = self.find(model.kind, **key)
        return cast(P, event.payload) if event is not None else None  # PAYLOADS[model.kind] is model

    def once(self, payload: P, *keys: str) -> P:
        """Record `payload` unless an event of its kind with the same `keys` field values exists (a
        resume replaying the loop never records a step twice); returns the recorded payload either
        way (the earlier one when it existed: its values, not `payload`'s, are the run's)."""
        with self.guard:  # found and recorded as one step: two workers never record the same step
            event = self.find(payload.kind, **{k: getattr(payload, k) for k in keys}) or self.record(payload)
        return cast(P, event.payload)

    def state(self) -> RunState:
        """The run's state folded from its ledger; folded again only when an event was appended
        since the last call (the ledger only grows, and `fold` is pure)."""
        with self.guard:
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
        return Runner(git=self.git, executor=self.executor, target=target, work_dir=self.run.work,
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
        """Restore the stop signals' handlers, close the log, index and executors, remove the
        run's agent work directory when the run stopped for good (an interrupted or crashed run
        keeps it for its resume), release the lock."""
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()
        self.executor.close()
        self.agent_executor.close()
        try:
            if self.state().state == "stopped":
                remove_agent_work_dir(self.loaded.root, self.run.run_id)
        finally:
            self.index.close()
            self.log.close()
            self.lock.release()


def open_kernel(loaded: LoadedContract, run: RunDir, lock: RunLock, log: EventLog, clock: Clock = utc_now) -> Kernel:
    """The kernel of run directory `run`, whose `lock` is held and whose ledger `log` is open: its
    executor, sandbox (probed), cache, index (brought up to date), blobs, git and signer."""
    contract = loaded.contract
    executor = make_executor(contract.compute, run.jobs, pid_dir=run.pids, job_token=recorded_job_token(log),
                             workers=contract.agent.workers)
    if contract.target.solution_kind == "prompt":  # the kernel makes the model calls itself
        executor.close()
        executor = make_prompt_executor(contract, loaded.root, run.jobs)
    mode = executor.probe_sandbox(contract.sandbox.mode)  # where the jobs run (a cluster's nodes); in run.started
    if mode == "none" and contract.sandbox.mode == "none":
        print("warning: sandbox.mode = 'none': jobs run without isolation from your files and network",
              file=sys.stderr)
    cache = MeasurementCache(loaded.root / RATCHET_DIR / "cache") if contract.target.cache else None
    index = Index(run.index)
    index.sync(log.events)
    agent_executor = make_agent_executor(agent_work_dir(loaded.root, run.run_id) / AGENT_JOBS_DIR,
                                         contract.agent.workers)
    return Kernel(loaded, run, lock, log, index, BlobStore(run.blobs), Git(loaded.root), executor, agent_executor,
                  sandbox_spec(contract.sandbox, mode, contract.target.command, loaded.root), cache, clock,
                  crash_at=_crash_at(os.environ.get(CRASH_AT_ENV)), signer=load_signer(loaded.root))


def recorded_job_token(log: EventLog) -> str | None:
    """The `job_token` of the run's `run.started` (None: a new run, the local backend, or a run
    recorded before job tokens were)."""
    started = next((e.payload for e in log.events if e.kind == "run.started"), None)
    if isinstance(started, RunStarted) and isinstance(started.job_token, str):
        return started.job_token
    return None


def _crash_at(spec: str | None) -> tuple[str, str, int] | None:
    """Parse CRASH_AT_ENV (`before|after:<kind>:<n>`); ValueError for anything else (a typo in a
    test must not silently run without its crash)."""
    if not spec:
        return None
    when, kind, n = spec.split(":")
    if when not in ("before", "after") or not n.isdigit():
        raise ValueError(f"{CRASH_AT_ENV}={spec!r}: expected before|after:<event kind>:<n>")
    return when, kind, int(n)
