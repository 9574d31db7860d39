"""Reading recorded runs for `status` and `report`: find a run, fold its ledger, render its report.

A torn last line (a kernel killed mid-write) does not stop `status`: it shows what is complete and
says so; only an explicit resume repairs the ledger.

`status` always checks the ledger's hash chain. When the run's index holds exactly the ledger's
events (the chain ends on the index's last event), the state is read from the index; otherwise
every line is parsed and verified and the events are folded. `result.ledger` says which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.core.state import RunState, fold
from ratchet.ledger.events import Chain, Event, Torn, check_chain, read_log_bytes, scan_events, scan_log
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.index import Snapshot
from ratchet.ledger.lock import is_locked
from ratchet.ledger.rundir import COMPARE_MODE, RunDir, list_runs, open_run, run_mode
from ratchet.present.status import status_result


def _torn_warning(run: RunDir, torn: Torn | None) -> str | None:
    if torn is None:
        return None
    return (f"events.jsonl line {torn.line} is torn (a kernel was killed mid-write); "
            f"`ratchet run --resume {run.run_id}` repairs it")


def read_run(run: RunDir) -> tuple[list[Event], str | None]:
    """The run's verified events and a warning when its last line is torn (else None)."""
    events, torn = scan_log(run.events)
    return events, _torn_warning(run, torn)


def find_run(project_root: Path, run_id: str | None) -> RunDir:
    """Run `run_id`, or when None the latest campaign (`ratchet compare` runs are skipped unless
    there is nothing else). Raises DataError `run.bad_id` / `run.not_found`."""
    if run_id is None:
        for candidate in reversed(list_runs(project_root)):
            if run_mode(RunDir(Path(project_root), candidate)) != COMPARE_MODE:
                run_id = candidate
                break
    return open_run(project_root, run_id)


def run_status(project_root: Path, run_id: str | None) -> dict[str, Any]:
    """The `ratchet status` result for `run_id` (the latest run when None).

    `result.ledger`: {"events", "verified", "state_from"}. verified "hash_chain", state_from
    "index": the index (whose events the kernel verified one by one as it wrote them) was read in
    one snapshot, and the ledger's whole hash chain up to the index's last event was checked over
    the raw bytes and ends on that event's digest. Lines beyond it are accepted only while a kernel
    holds the run's lock (it is writing them; the state shown is the snapshot's). verified "full",
    state_from "events": every line parsed and verified (canonical form, fields, seq, chain) and
    folded; used whenever the index cannot vouch for the ledger. `events`: the events shown.
    Raises LedgerError for a damaged ledger (never a state read past a defect).
    """
    run = find_run(project_root, run_id)
    holder = is_locked(run.root)
    snapshot = Snapshot.open(run.index)  # before the ledger: the kernel appends there first
    try:
        raw = read_log_bytes(run.events)
        state, chain = _indexed_state(snapshot, raw, holder)
    finally:
        if snapshot is not None:
            snapshot.close()
    if state is not None and chain is not None:
        result = status_result(state, holder)
        result["warnings"] = []
        result["ledger"] = {"events": len(chain.lines), "verified": "hash_chain", "state_from": "index"}
        return result
    events, torn = scan_events(raw)
    warning = _torn_warning(run, torn)
    result = status_result(fold(events), holder)
    result["warnings"] = [warning] if warning else []
    result["ledger"] = {"events": len(events), "verified": "full", "state_from": "events"}
    return result


def _indexed_state(
    snapshot: Snapshot | None, raw: bytes, holder: int | None
) -> tuple[RunState | None, Chain | None]:
    """The state from the index snapshot when the ledger's chain ends on its last event (see
    run_status), else (None, None)."""
    if snapshot is None or snapshot.last is None:
        return None, None
    chain = check_chain(raw, snapshot.last[0] + 1)
    if chain is None or ((chain.later_lines or chain.torn) and holder is None):
        return None, None  # no writer: the index lags a kill, or a line is torn; fold says which
    return snapshot.status_state(chain), chain


def write_report(run: RunDir, state: RunState | None = None) -> Path:
    """(Re-)render `report.md` and its plots for `run` from its ledger, ending with the ledger head and
    the last signature (core.audit.evidence_lines); returns the report's path."""
    from ratchet.core.audit import evidence_lines
    from ratchet.core.contract_load import parse_contract  # pydantic: only for reports, not for status
    from ratchet.present.report.markdown import render_report
    from ratchet.present.report.plots import champion_plot, effects_plot

    events, _ = read_run(run)
    state = state or fold(events)
    contract = parse_contract(run.contract.read_text(encoding="utf-8"), source=str(run.contract))
    status = status_result(state, is_locked(run.root))
    promotions = [e.data for e in events if e.kind == "champion.promoted"]
    holdout = [e.data for e in events if e.kind == "trial.judged" and e.data.get("stage") == "holdout"]
    run.plots.mkdir(parents=True, exist_ok=True)
    plots = [
        champion_plot(status["attempts"], promotions, status["holdout"], run.plots / "champion.png"),
        effects_plot(status["attempts"], run.plots / "effects.png"),
    ]
    text = render_report(
        status,
        campaign=contract.campaign.name,
        gate=contract.gate.model_dump(),
        target=contract.target.model_dump(),
        promotions=promotions,
        plots=[p.relative_to(run.root).as_posix() for p in plots],
        splits=holdout[-1].get("splits") if holdout else None,
    )
    text += "\n" + "\n".join(evidence_lines(events, run.run_id))
    write_exclusive(run.report, text.encode("utf-8"))
    return run.report
