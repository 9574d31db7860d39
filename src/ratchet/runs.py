"""Reading recorded runs for `status` and `report`: find a run, fold its ledger, render its report.

A torn last line (a kernel killed mid-write) does not stop `status`: it shows what is complete and
says so; only an explicit resume repairs the ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.contract_load import parse_contract
from ratchet.ledger.events import Event, scan_log
from ratchet.ledger.lock import is_locked
from ratchet.ledger.reducer import RunState, fold
from ratchet.ledger.rundir import RunDir, open_run
from ratchet.status import status_result


def read_run(run: RunDir) -> tuple[list[Event], str | None]:
    """The run's verified events and a warning when its last line is torn (else None)."""
    events, torn = scan_log(run.events)
    warning = None
    if torn is not None:
        warning = (f"events.jsonl line {torn.line} is torn (a kernel was killed mid-write); "
                   f"`ratchet run --resume {run.run_id}` repairs it")
    return events, warning


def run_status(project_root: Path, run_id: str | None) -> dict[str, Any]:
    """The `ratchet status` result for `run_id` (the latest run when None)."""
    run = open_run(project_root, run_id)
    events, warning = read_run(run)
    result = status_result(fold(events), is_locked(run.root))
    result["warnings"] = [warning] if warning else []
    return result


def write_report(run: RunDir, state: RunState | None = None) -> Path:
    """(Re-)render `report.md` and its plots for `run` from its ledger; returns the report's path."""
    from ratchet.report.markdown import render_report
    from ratchet.report.plots import champion_plot, effects_plot

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
    run.report.write_text(text, encoding="utf-8")
    return run.report
