"""`ratchet verify [RUN]`: check a run offline, from its run directory alone (docs/verify.md).

The hash chain and every blob; every plan re-compiled from its recorded inputs and compared byte
for byte; every verdict re-derived through the gate from the recorded per-unit results at the
recorded level and margin; every promotion backed by its acceptances; the budgets; the holdout (and
an examples run's test split) measured once on units no decision used; the signatures (against
`--key` when given); report.md's closing digest and signature. The checks are core/audit.py; this
module reads the run directory and feeds them.

Exit codes: 0 every check holds; 3 a check failed (`result.findings`: code, event seq, what
differed); 2 the run cannot be read (no such run, no ledger, no contract, no run.started).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Generic, TypeVar

from ratchet.commands.verify_rederive import Recorded, rebuild_target, rederive
from ratchet.core import audit, audit_budget
from ratchet.core.audit import Finding
from ratchet.core.audit_view import Planned, RunView, read_view
from ratchet.core.canonical import digest_bytes
from ratchet.core.contract import Contract
from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import EXIT_CHECK_FAILED, DataError, LedgerError, PlanError, RatchetError
from ratchet.core.events import LedgerLineError
from ratchet.core.gate_rules import recorded_rules
from ratchet.core.plan import Plan
from ratchet.core.state import Folder, RunState
from ratchet.core.stats.level_pool import shares_in_order
from ratchet.core.stats.multiplicity import split_share
from ratchet.ledger.blobs import BlobStore
from ratchet.ledger.events import read_log_bytes, scan_events
from ratchet.ledger.rundir import RunDir
from ratchet.ledger.signing import SIGNED_KINDS, check_signature, read_public_key
from ratchet.loop.trial import baseline_guardrails, settings_for
from ratchet.targets.base import Target
from ratchet.targets.examples_target import ExamplesTarget

T = TypeVar("T")

PARALLEL_MIN_PLANS = 200
"""Runs with at least this many plans re-compile and re-judge them in forked worker processes (one
per CPU this process may use, at most MAX_WORKERS); smaller runs in this process (a fork costs more)."""

MAX_WORKERS = 8


def verify_run(project_root: Path, run_id: str | None, key: Path | None = None,
               workers: int | None = None) -> dict[str, Any]:
    """`ratchet verify`: {"run_id", "verified", "events", "head", "checked", "findings", "warnings"}
    (`_exit_code` 3 and `_error` when a check failed). `workers`: processes re-compiling plans and
    re-deriving verdicts (None: PARALLEL_MIN_PLANS decides; the findings are the same either way).
    Raises DataError / LedgerError / ContractError (exit 2) when the run cannot be read, DataError
    `keys.bad_public_key` for an unreadable `key`."""
    from ratchet.commands.runs import find_run

    run = find_run(project_root, run_id)
    given_key = read_public_key(key) if key is not None else None
    raw = read_log_bytes(run.events)
    try:
        events, torn = scan_events(raw)
    except LedgerLineError as err:
        finding = Finding("verify.chain", err.line - 1, err.message)
        return _result(run, [], [finding], [], {"chain": 1})
    warnings = [f"events.jsonl line {torn.line} is torn (a kernel was killed mid-write); the lines before it "
                "were checked"] if torn is not None else []
    if not events or events[0].kind != "run.started":
        raise DataError("run.not_started", f"run {run.run_id} has no run.started: nothing to verify")
    contract = _contract(run)
    view = read_view(events)
    blobs = BlobStore(run.blobs)
    if workers is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        workers = min(cpus, MAX_WORKERS) if len(view.planned) >= PARALLEL_MIN_PLANS else 1
    findings, checked = _check_all(run, view, contract, blobs, given_key, warnings, workers)
    return _result(run, events, findings, warnings, checked)


def _contract(run: RunDir) -> Contract:
    try:
        text = run.contract.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError("verify.no_contract", f"{run.contract} cannot be read: {exc}",
                        hint="the run directory must keep the contract the run started with") from None
    return parse_contract(text, source=str(run.contract))


def _check_all(run: RunDir, view: RunView, contract: Contract, blobs: BlobStore, given_key: bytes | None,
               warnings: list[str], workers: int) -> tuple[list[Finding], dict[str, int]]:
    target = _target(contract, view, run, blobs)
    inputs = audit.plan_inputs(view)
    recorded = Recorded(view.finished)

    def chunk(i: int) -> tuple[list[Finding], list[Planned], dict[int, tuple[Any, ...]]]:
        plan_findings, plans, units = _plans(inputs[i::workers], target, blobs)
        return plan_findings + _verdicts(view, target, plans, recorded), [p for p, _ in plans], units

    with fork_map(chunk, workers) as chunks:  # the workers re-compile and re-judge while this process checks the rest
        findings = audit.check_blobs(view, lambda d: _blob_problem(blobs, d))
        findings += _blob_files(blobs)
        settings = _settings(view, contract, [p for p, i in inputs if not isinstance(i, Finding)])
        findings += audit.check_without_jobs(view)
        findings += audit.check_promotions(view, target.confirms and view.mode != "compare")
        command = contract.agent.command if contract.agent.kind == "command" else None
        findings += audit_budget.check_budgets(view, command.price if command is not None else None)
        signature_findings, notes = audit.check_signatures(view, SIGNED_KINDS, check_signature, given_key)
        findings += signature_findings
        planned: list[Planned] = []
        units: dict[int, tuple[Any, ...]] = {}
        for chunk_findings, chunk_planned, chunk_units in chunks.results():
            findings += chunk_findings
            planned += chunk_planned
            units.update(chunk_units)
    compiled = {p.seq for p in planned}
    findings += [f for f in settings if f.seq in compiled]  # a plan that does not re-compile is one finding
    findings += audit.check_holdout(view, units)
    if isinstance(target, ExamplesTarget):
        split = target.split
        ids = {name: [ex.id for ex in getattr(split, name)] for name in ("dev", "val", "test")}
        findings += audit.check_splits(view, ids, units)
    report_findings, report_notes = audit.check_report(view, _report_text(run))
    findings += report_findings
    warnings += notes + report_notes
    checked = {"events": len(view.events), "blobs": len(set(d for _, _, d in view.blob_refs)),
               "plans": len(planned), "verdicts": len(view.judged),
               "promotions": len(view.promoted),
               "signatures": sum(1 for e in view.events if e.kind in SIGNED_KINDS)}
    return sorted(findings, key=lambda f: (f.seq if f.seq is not None else -1, f.code)), checked


def _blob_problem(blobs: BlobStore, digest: str) -> str | None:
    try:
        blobs.get_bytes(digest)
    except LedgerError as err:
        return f"{err.code}: {err.message}"
    return None


def _blob_files(blobs: BlobStore) -> list[Finding]:
    """Every file under blobs/ holds the bytes its name is the digest of (named or not)."""
    if not blobs.root.is_dir():
        return []
    out = []
    for entry in os.scandir(blobs.root):
        if entry.name.startswith("."):
            continue
        problem = _blob_problem(blobs, "sha256:" + entry.name)
        if problem is not None and "ledger.bad_digest" not in problem:
            out.append(Finding("verify.blob", None, f"blobs/{entry.name}: {problem}"))
    return out


def _target(contract: Contract, view: RunView, run: RunDir, blobs: BlobStore) -> Target:
    return rebuild_target(contract, view, run.root, blobs.get_json)


class fork_map(Generic[T]):  # noqa: N801 (used as a function: `with fork_map(fn, n) as results`)
    """fn(0), ..., fn(workers - 1), each in a forked child process when `workers` > 1 (the parent's
    memory shared copy-on-write, nothing pickled but the results), started on entering the `with`
    so the caller works meanwhile; `results()` waits for them, in order. With one worker (or where
    fork does not exist) the calls run in this process when `results()` is called. The children's
    BLAS runs one thread each (threadpoolctl): the processes already use the cores, more threads
    only contend. A child's exception is raised by `results()`; a child that dies (killed, out of
    memory) raises BrokenProcessPool, never hangs."""

    def __init__(self, fn: Callable[[int], T], workers: int):
        self.fn, self.workers = fn, max(workers, 1)
        self.forked = self.workers > 1 and "fork" in multiprocessing.get_all_start_methods()
        self.stack = contextlib.ExitStack()
        self.futures: list[Future[T]] = []

    def __enter__(self) -> fork_map[T]:
        global _FORKED
        if self.forked:
            from threadpoolctl import threadpool_limits

            _FORKED = self.fn
            self.stack.callback(_forget_forked)
            with threadpool_limits(limits=1):  # the children copy the setting as they are forked
                pool = self.stack.enter_context(
                    ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork")))
                self.futures = [pool.submit(_call_forked, i) for i in range(self.workers)]
        return self

    def results(self) -> list[T]:
        """Each call's result, in order (raises what a call raised)."""
        if not self.forked:
            return [self.fn(i) for i in range(self.workers)]
        return [f.result() for f in self.futures]

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


def _forget_forked() -> None:
    global _FORKED
    _FORKED = None


_FORKED: Callable[[int], Any] | None = None
"""The function fork_map runs in its children (inherited through fork, never pickled)."""


def _call_forked(i: int) -> Any:
    assert _FORKED is not None
    return _FORKED(i)


def _plans(recorded_inputs: list[tuple[Planned, audit.PlanInputs | Finding]], target: Target, blobs: BlobStore
           ) -> tuple[list[Finding], list[tuple[Planned, Plan]], dict[int, tuple[Any, ...]]]:
    """Re-compile each plan from the inputs the ledger gives (`audit.plan_inputs`) and compare it
    with its record. Returns the findings, the re-compiled plans, and the units each recorded plan
    measured (what the holdout and split checks judge) by its trial.planned seq."""
    findings: list[Finding] = []
    plans: list[tuple[Planned, Plan]] = []
    units: dict[int, tuple[Any, ...]] = {}
    for p, inputs in recorded_inputs:
        if isinstance(inputs, Finding):
            findings.append(inputs)
            continue
        try:
            looks = target.looks(inputs.stage, inputs.units_used)
            plan = target.plan(inputs.stage, inputs.attempt, inputs.trial, inputs.champion_tree,
                               inputs.candidate_tree, looks, inputs.block)
        except (PlanError, ValueError) as exc:
            findings.append(Finding("verify.plan", p.seq, f"{p.stage} plan of attempt {p.attempt} cannot be "
                                    f"re-compiled: {exc}"))
            continue
        recorded = _blob_or_none(blobs, p.plan_blob)
        # bytes that hash to the re-compiled plan's digest are its canonical bytes: encoded only when not
        same = recorded is not None and digest_bytes(recorded) == plan.digest
        compiled = recorded if same and recorded is not None else plan.canonical_bytes()
        findings += audit.compare_plan(p, recorded, compiled, plan.digest)
        plans.append((p, plan))
        units[p.seq] = plan.units if recorded == compiled else _units_of(recorded, plan)
    return findings, plans, units


def _units_of(recorded: bytes | None, compiled: Plan) -> tuple[Any, ...]:
    """The units of a recorded plan that differs from its re-compilation (the re-compiled plan's
    when the record cannot be read as a plan: already a finding)."""
    try:
        return Plan.from_json(json.loads(recorded or b"")).units
    except (ValueError, PlanError, AttributeError):
        return compiled.units


def _blob_or_none(blobs: BlobStore, blob: Any) -> bytes | None:
    try:
        return blobs.get_bytes(blob) if isinstance(blob, str) else None
    except LedgerError:
        return None


def _states_before(view: RunView, seqs: set[int]) -> tuple[dict[int, RunState], RunState]:
    """(seq -> the run's state as folded from the events before it, the state after every event):
    one pass over the ledger; finished_jobs and running_jobs left empty."""
    folder = Folder()
    out: dict[int, RunState] = {}
    for event in view.events:
        if event.seq in seqs:
            out[event.seq] = folder.result(jobs=False)  # the levels and margins read no jobs
        folder.step(event)
    return out, folder.result(jobs=False)


def _shares(view: RunView, contract: Contract, final: RunState) -> dict[int, float] | str:
    """attempt -> the share of alpha loop/campaign.py grants it when its trial is planned
    (stats.level_pool: base weight plus the credits released before that planning, in ledger
    order, by the run's recorded gate rules; loop.history.level_timeline), or why the ledger's
    plannings and decisions give none (a tampered order)."""
    from ratchet.loop.history import level_timeline

    gate = contract.gate
    try:
        return shares_in_order(gate.alpha, gate.multiplicity, contract.budget.max_attempts,
                               level_timeline(final, recorded_rules(view.gate)))
    except RatchetError as exc:
        return exc.message


def _expected_level(view: RunView, contract: Contract, p: Planned, shares: dict[int, float] | str
                    ) -> float | str:
    """The level loop/campaign.py grants the stage of `p`: alpha for the holdout and a comparison;
    else the trial's or the confirmation's part of the attempt's share (`_shares`,
    stats.multiplicity.split_share); a text when there is none."""
    gate = contract.gate
    if p.stage == "holdout" or view.mode == "compare":
        return gate.alpha
    if isinstance(shares, str):
        return shares
    if p.attempt not in shares:
        return "its attempt has no trial planned before it"
    levels = split_share(shares[p.attempt], gate.confirm and contract.target.kind == "benchmark")
    return levels.confirm if p.stage == "confirm" else levels.trial


def _settings(view: RunView, contract: Contract, planned: list[Planned]) -> list[Finding]:
    out = []
    states, final = _states_before(view, {p.seq for p in planned})
    shares = _shares(view, contract, final)
    gate = contract.gate
    for p in planned:
        state = states[p.seq]
        margin = audit.expected_margin(p, gate.min_effect, gate.min_effect_rel, state.champion_mean)
        level = _expected_level(view, contract, p, shares)
        if isinstance(level, str):
            out.append(Finding("verify.level", p.seq, f"{p.stage} of attempt {p.attempt}: recorded level "
                               f"{p.level!r}, no level can be derived: {level}"))
            level = p.level if isinstance(p.level, float) else 0.0
        out += audit.check_settings(p, level, margin)
    return out


def _verdicts(view: RunView, target: Target, plans: list[tuple[Planned, Plan]], recorded: Recorded
              ) -> list[Finding]:
    """Each judged plan's decision re-derived from the results recorded (`recorded`) before its verdict."""
    out = []
    for p, plan in plans:
        judged = view.judged_for(p.attempt, p.stage)
        if judged is None or judged.seq < p.seq:
            continue  # not judged yet (an interrupted run)
        level = p.level if isinstance(p.level, int | float) else 0.0
        margin = p.margin if isinstance(p.margin, int | float) else 0.0
        try:
            settings = settings_for(plan, target, float(level), float(margin), recorded_rules(view.gate),
                                    baseline_guardrails(view.finished))
            derived = rederive(plan, target, settings, recorded, judged.seq)
        except Exception as exc:  # a recorded value the gate refuses (a tampered score) is a finding
            out.append(Finding("verify.verdict", judged.seq, f"{p.stage} of attempt {p.attempt}: the recorded "
                               f"results cannot be judged: {exc}"))
            continue
        if isinstance(derived, str):
            out.append(Finding("verify.results_missing", judged.seq, f"{p.stage} of attempt {p.attempt}: job "
                               f"{derived} has no usable job.finished before the verdict"))
            continue
        out += audit.compare_decision(judged, derived)
    return out


def _report_text(run: RunDir) -> str | None:
    try:
        return run.report.read_text(encoding="utf-8")
    except OSError:
        return None


def _result(run: RunDir, events: list[Any], findings: list[Finding], warnings: list[str],
            checked: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "run_id": run.run_id, "verified": not findings, "events": len(events),
        "head": events[-1].digest if events else None, "checked": checked,
        "findings": [f.to_json() for f in findings], "warnings": warnings,
    }
    if findings:
        result["_exit_code"] = EXIT_CHECK_FAILED
        codes = sorted({f.code for f in findings})
        result["_error"] = {"code": "verify.failed", "message": f"{len(findings)} check(s) failed: {', '.join(codes)}",
                            "hint": "each finding names the event (seq) and what differed"}
    return result
