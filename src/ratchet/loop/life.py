"""A run's life, from its first event to its last: open a new run or resume one, record
`run.started` and `run.resumed`, turn Ctrl-C or SIGTERM into stop reason `interrupted`, record
`run.stopped`, and abandon an unfinished run (`run.abandoned`).

Every lifecycle event of a ledger is written here, through `Kernel.record`'s payload check (an
abandon, which has no kernel, through the same check). `ratchet run` opens a campaign here; the
one-shot runs (`loop.one_shot`: compare, calibrate) open, interrupt and stop here too.
Effects: creates and locks run directories, appends to ledgers, kills job processes a dead kernel
left behind.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ratchet.compute.pids import kill_marked_under, kill_recorded
from ratchet.core.budget import recorded_limits
from ratchet.core.contract_load import LoadedContract, parse_contract
from ratchet.core.errors import EXIT_INTERRUPTED, ContractError, DataError, LedgerError, RatchetError
from ratchet.core.events import LEDGER_FORMAT, RESUMABLE_FORMATS
from ratchet.core.gate_design import gate_design
from ratchet.core.gate_rules import GATE_RULES, RESUMABLE_RULES, recorded_rules
from ratchet.core.payloads import RunAbandoned, RunResumed, RunStarted, RunStopped, TreeRefData, check_payload
from ratchet.core.reach import reach_warnings
from ratchet.core.state import fold
from ratchet.core.vocab import StopReason
from ratchet.ledger.events import Event, EventLog, scan_log
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.index import Index
from ratchet.ledger.lock import acquire_lock, is_locked
from ratchet.ledger.rundir import ONE_SHOT_MODES, RunDir, list_runs, new_run_id, open_run
from ratchet.loop.audit_trail import versions
from ratchet.loop.kernel import SALT_ENV, Clock, Kernel, open_kernel, remove_agent_work_dir, utc_now
from ratchet.loop.measure import Interrupted
from ratchet.loop.prompt_eval import make_judge, prompt_record
from ratchet.loop.warm_start import gather, summary
from ratchet.targets.base import Target
from ratchet.targets.checks import CHECKS_VERSION, refuse_other_checks_version
from ratchet.targets.examples import ExampleData, check_same_dataset
from ratchet.targets.factory import make_target
from ratchet.workspace.git import Git

ONE_SHOT_INTERRUPTED = {
    "compare": ("the comparison was interrupted; its jobs were killed",
                "run it again: finished measurements are cached"),
    "calibrate": ("the calibration was interrupted; its jobs were killed", "run `ratchet calibrate` again"),
}
"""A one-shot run's RatchetError `interrupted` (message, hint), by run mode."""


# -- opening -------------------------------------------------------------------------------------

def new_kernel(loaded: LoadedContract, clock: Clock = utc_now, salt: str | None = None) -> tuple[Kernel, str]:
    """Create a run directory, take its lock, keep the contract and the salt: `salt` (a comparison's
    deterministic one) or a fresh random one (SALT_ENV in tests).

    Returns (kernel, salt). Raises LedgerError when the run cannot be created or locked, and
    what `open_kernel` raises (the run directory is then removed: nothing was recorded).
    """
    now = clock()
    run = RunDir(loaded.root, new_run_id(now, secrets.token_hex(2)))
    run.create()
    lock = acquire_lock(run.root)
    try:
        write_exclusive(run.contract, loaded.text.encode("utf-8"))
        salt = salt or os.environ.get(SALT_ENV) or secrets.token_hex(16)
        write_exclusive(run.root / "salt", salt.encode())
        log = EventLog.open(run.events)
        try:
            return open_kernel(loaded, run, lock, log, clock), salt
        except BaseException:
            log.close()
            raise
    except BaseException:
        # Refused before anything was recorded (the executor, the sandbox probe on a cluster's
        # nodes): a run directory without run.started would only break `ratchet status`.
        shutil.rmtree(run.root, ignore_errors=True)
        lock.release()
        raise


def resume_kernel(loaded: LoadedContract, run_id: str, clock: Clock = utc_now) -> Kernel:
    """Reopen run `run_id`: take its lock, repair a torn last line (recording `ledger.repaired`),
    refuse a changed contract (naming the changed keys), kill job processes a crashed kernel left
    behind (recorded, or carrying a marker under the run's jobs directory) and its job checkouts.
    Records nothing else (`record_resumed` does, once the caller accepts the run).
    Raises DataError `run.not_found` / `run.not_started` / `run.finished` / `run.is_compare` /
    `run.is_calibrate` / `ledger.old_format`, ContractError `contract.changed`, LedgerError
    (`ledger.locked` naming the holder's pid, a damaged ledger)."""
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
        _check_format(run_id, started.ledger_format, loaded.root)
        _check_rules(run_id, started.gate)
        state = fold(log.events)
        mode = started.mode
        if mode in ONE_SHOT_MODES:
            code = "run.is_compare" if mode == "compare" else "run.is_calibrate"
            raise DataError(code, f"run {run_id} is a `ratchet {mode}`, not a campaign: nothing to resume",
                            hint=f"run `ratchet {mode}` again")
        if state.state == "stopped":
            raise DataError("run.finished", f"run {run_id} already stopped ({state.stop_reason}); nothing to resume",
                            hint=f"start a new run with `ratchet run`; `ratchet report {run_id} --dir {loaded.root}` "
                                 "re-renders its report")
        kernel = open_kernel(loaded, run, lock, log, clock)
        remove_dead_checkouts(run.work, state.running_jobs if kernel.executor.jobs_outlive_kernel else {})
    except BaseException:
        lock.release()
        raise
    # Jobs a crashed kernel started and never finished: those that die with their kernel (a local
    # job's pipes did) are killed now and run again; those that outlive it (a scheduler's) are
    # re-attached by the runner when the loop reaches them, so none is submitted twice.
    if not kernel.executor.jobs_outlive_kernel:
        kernel.executor.reattach({job_id: str(ext) for job_id, ext in state.running_jobs.items() if ext is not None})
    return kernel


def remove_dead_checkouts(work: Path, alive: Mapping[str, object]) -> None:
    """Remove the checkouts a dead kernel left under `work` (`<work>/<job_id>/`, the checkout
    pool's templates), except those of the jobs in `alive`: tasks a scheduler may still be running
    or have queued, re-attached later; their checkouts go when they end (the runner)."""
    if not work.is_dir():
        return
    for entry in work.iterdir():
        if entry.name not in alive:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def open_campaign(loaded: LoadedContract, git: Git, resume: str | None, data: ExampleData | None,
                  shown_dir: Path) -> tuple[Kernel, Target]:
    """Open `ratchet run`'s campaign: a new run on HEAD (`run.started`), or run `resume` reopened
    (`run.resumed`). `data`: an examples target's split (None for a benchmark); `shown_dir`: the
    project directory as the user gave it (quoted in hints). Returns the open kernel and the run's
    target; the caller closes the kernel.

    Raises DataError `run.interrupted_exists` for a new run while an interrupted one can be resumed,
    what `resume_kernel` raises, and for a resume of an examples target what
    `refuse_other_checks_version` and `check_same_dataset` raise."""
    if resume is not None:
        kernel = resume_kernel(loaded, resume)
        try:
            if data is not None:
                _check_same_examples(kernel, data)
            salt = kernel.state().salt or ""
            target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt, data,
                                 judge=make_judge(loaded.contract, loaded.root))
            record_resumed(kernel)
        except BaseException:
            kernel.close()
            raise
        return kernel, target
    stale = interrupted_runs(loaded.root)
    if stale:
        raise DataError(
            "run.interrupted_exists",
            f"run {stale[-1]} was interrupted and can be resumed",
            hint=f"resume it: ratchet run {shown_dir} --resume {stale[-1]}; or give it up (nothing is "
                 f"deleted): ratchet abandon {stale[-1]} --dir {shown_dir}",
        )
    commit = git.head_commit()
    tree = git.tree_of(commit)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt, data,
                         judge=make_judge(loaded.contract, loaded.root))
    extra = {}
    if data is not None:
        extra["examples"] = {"fingerprint_blob": kernel.blobs.put_json(data.fingerprint),
                             "sizes": data.split.sizes(), "warnings": list(data.examples.warnings),
                             "checks_version": CHECKS_VERSION}
        prompt = prompt_record(loaded.contract)
        if prompt is not None:
            extra["examples"]["prompt"] = prompt
    history = gather(loaded.root, kernel.run.run_id, loaded.contract, tree, git)
    if history is not None:
        extra["warm_start"] = summary(kernel.blobs.put_json(history), history)
    record_started(kernel, salt, commit, tree, target.reserve_units(), target.looks("trial"), **extra)
    return kernel, target


def _check_same_examples(kernel: Kernel, data: ExampleData) -> None:
    """Refuse to resume an examples run on other checks or another dataset than it started with."""
    started = kernel.recorded(RunStarted)
    examples = (started.examples or {}) if started else {}
    refuse_other_checks_version(examples.get("checks_version"))
    recorded = examples.get("fingerprint_blob")
    check_same_dataset(kernel.blobs.get_json(recorded) if recorded else {}, data)


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
        if not events or events[0].kind != "run.started":
            continue
        try:
            if cast(RunStarted, events[0].payload).mode in ONE_SHOT_MODES:
                continue
            if torn is not None or fold(events).state in ("running", "interrupted"):
                out.append(run_id)
        except RatchetError:  # an event that does not read as its model: unless abandoned, it blocks
            if events[-1].kind != "run.abandoned":
                out.append(run_id)
    return out


def _check_rules(run_id: str, gate: Any) -> None:
    """Refuse to resume a run judged by other gate rules than this build's (its remaining trials
    would be judged differently from its first ones). Raises DataError `run.old_rules`."""
    rules = recorded_rules(gate)
    if rules not in RESUMABLE_RULES:
        raise DataError(
            "run.old_rules",
            f"run {run_id} was judged by gate rules {rules}; this build judges by rules {GATE_RULES} "
            "(docs/gate.md, \"Gate rules\"), so its remaining trials cannot be judged as its first ones were",
            hint=f"start a new run with `ratchet run`; `ratchet verify {run_id}` re-derives its verdicts with "
                 "its own rules, and status and report still read it",
        )


def _check_format(run_id: str, recorded: Any, root: Path) -> None:
    """Refuse to resume a run written in another ledger format (its steps would not replay the
    same). Raises DataError `ledger.old_format`."""
    if recorded not in RESUMABLE_FORMATS:
        formats = ", ".join(str(f) for f in sorted(RESUMABLE_FORMATS))
        raise DataError(
            "ledger.old_format",
            f"run {run_id} was recorded in ledger format {recorded}; this build resumes formats {formats} only",
            hint=f"start a new run with `ratchet run`; `ratchet status {run_id} --dir {root}` and "
                 f"`ratchet report {run_id} --dir {root}` still read it",
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


# -- the lifecycle events ------------------------------------------------------------------------

def record_started(kernel: Kernel, salt: str, baseline_commit: str, baseline_tree: str, reserve: int,
                   looks: Sequence[int] | None = None, **extra: Any) -> None:
    """Record `run.started` for a new run: `reserve` the job-units kept for the final measurement
    (Target.reserve_units); `looks` the target's trial looks (Target.looks("trial")): when given,
    `warnings` records what core.reach finds (trials that can never accept, with the fix; the
    campaign shows them at its start and the report repeats them); `extra`: more data, e.g. the
    examples fingerprint or a one-shot run's `mode`."""
    c = kernel.contract
    warnings = reach_warnings(c, looks) if looks is not None else []
    kernel.record(RunStarted(
        ledger_format=LEDGER_FORMAT, run_id=kernel.run.run_id, contract_digest=kernel.loaded.digest,
        baseline=TreeRefData(commit=baseline_commit, tree=baseline_tree), salt=salt,
        sandbox=kernel.sandbox.mode, target_kind=c.target.kind, direction=c.target.direction,
        limits=recorded_limits(c), holdout_reserve=reserve, warnings=warnings,
        gate=gate_design(c.gate.test, c.target.metric_range, max_unit_loss=c.gate.max_unit_loss),
        versions=versions(),
        signing_key=kernel.signer.public_record() if kernel.signer is not None else None,
        **_job_token(kernel),
        **extra,
    ))


def _job_token(kernel: Kernel) -> dict[str, Any]:
    """{"job_token": ...} for run.started when the executor names its scheduler jobs (Slurm), else {}."""
    token = kernel.executor.token
    return {"job_token": token} if token is not None else {}


def record_resumed(kernel: Kernel) -> None:
    """Record `run.resumed` by this process."""
    kernel.record(RunResumed(pid=os.getpid()))


def record_stopped(kernel: Kernel, reason: str, budget: str | None = None, detail: str | None = None,
                   calibration: Mapping[str, Any] | None = None) -> Event:
    """Record `run.stopped` with stop `reason` (core.vocab.StopReason), the `budget` that stopped
    the run, a `detail` (a budget's arithmetic, an error code, a one-shot run's mode) and a
    calibration's result. Returns the event."""
    extra = {"calibration": dict(calibration)} if calibration is not None else {}
    return kernel.record(RunStopped(stop_reason=cast(StopReason, reason), budget=budget, detail=detail, **extra))


@dataclass(frozen=True)
class Stop:
    """How a campaign ended: `reason` (core.vocab.StopReason), the `budget` that stopped it (for
    `budget_exhausted`) and the stop's `detail`."""

    reason: str
    budget: str | None = None
    detail: str | None = None


def live_campaign(kernel: Kernel, body: Callable[[], Stop]) -> Stop:
    """Run a campaign's `body` (a callable returning its Stop) with Ctrl-C and SIGTERM stopping it
    cleanly: jobs killed, stop reason `interrupted` (resumable). Records `run.stopped` either way
    and returns the Stop recorded. Other errors propagate with nothing recorded."""
    kernel.install_sigint()
    try:
        stop = body()
    except Interrupted:
        stop = Stop("interrupted")
    if kernel.interrupted:
        stop = Stop("interrupted")
    record_stopped(kernel, stop.reason, stop.budget, stop.detail)
    return stop


@contextmanager
def one_shot_interrupts(kernel: Kernel, mode: str) -> Iterator[None]:
    """For the block: Ctrl-C and SIGTERM kill the one-shot run's jobs; the run is recorded as
    stopped `interrupted` (detail: `mode`) and RatchetError `interrupted` (exit 130) is raised. A
    one-shot run is never resumed."""
    kernel.install_sigint()
    try:
        yield
    except Interrupted:
        record_stopped(kernel, "interrupted", detail=mode)
        message, hint = ONE_SHOT_INTERRUPTED[mode]
        raise RatchetError("interrupted", message, hint=hint, exit_code=EXIT_INTERRUPTED) from None


# -- abandon -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Abandoned:
    """An abandoned run: its state before (`running`, `interrupted`, or `unreadable` when an event
    does not read as its model) and the job ids whose leftover processes were killed."""

    run_id: str
    state_before: str
    killed_jobs: list[str]


def abandon(project_root: Path, run_id: str) -> Abandoned:
    """Close unfinished run `run_id` of the project at `project_root` for good: take its lock (a run
    another process is writing is refused), repair a torn last line (`ledger.repaired`), kill job
    processes a dead kernel left behind and append `run.abandoned` {pid, reason}: the run's state
    becomes `stopped`, stop reason `abandoned`. Nothing of the run directory is deleted; the run's
    agent work directory outside the project (`kernel.agent_work_dir`: workspaces nobody will resume)
    is. The contract is not read (a changed contract is what an abandon is for).

    Raises DataError `run.bad_id` / `run.not_found` / `run.not_started` / `run.finished` (already
    stopped: nothing to abandon), LedgerError `ledger.locked` (a kernel is running it: stop it
    first) or for a damaged ledger."""
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
            state_before = _state_before_abandon(run.run_id, log.events)
            killed = kill_recorded(run.pids)
            kill_marked_under(run.jobs)
            reason = f"abandoned by `ratchet abandon` (state {state_before})"
            data = RunAbandoned(pid=os.getpid(), reason=reason).to_data()
            check_payload(RunAbandoned.kind, data)  # no kernel here: the check Kernel.record makes
            log.append(RunAbandoned.kind, data, utc_now())
        finally:
            log.close()
        remove_agent_work_dir(run.project_root, run.run_id)
        try:
            with Index(run.index) as index:
                index.sync(list(log.events))
        except LedgerError as exc:
            if exc.code != "ledger.malformed":
                raise  # the index is derived: one that cannot read an event is left for `status` to name
    finally:
        lock.release()
    return Abandoned(run.run_id, state_before, killed)


def _state_before_abandon(run_id: str, events: Sequence[Event]) -> str:
    """The state of a run about to be abandoned: `running` or `interrupted`, or `unreadable` when an
    event does not read as its model (such a run can never be resumed: abandoning it is the way
    out). Raises DataError `run.finished` for a run that already stopped."""
    try:
        state = fold(events)
    except LedgerError:
        return "unreadable"
    if state.state == "stopped":
        raise DataError(
            "run.finished",
            f"run {run_id} already stopped ({state.stop_reason}); there is nothing to abandon",
            hint="a new `ratchet run` is not blocked by a stopped run",
        )
    return state.state
