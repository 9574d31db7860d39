"""Reading recorded runs for `runs`, `status` and `report`: list a project's runs, find a run, fold
its ledger, render its report.

A torn last line (a kernel killed mid-write) does not stop `status`: it shows what is complete and
says so; only an explicit resume repairs the ledger.

`status` always checks the ledger. When it starts with exactly the lines the run's index was built
from (their recorded segment hashes match), the state is read from the index; otherwise every line
is parsed and verified and the events are folded. `result.ledger` says which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ratchet.core.errors import RatchetError
from ratchet.core.events import line_payload
from ratchet.core.payloads import ChampionPromoted, JobFinished, RunStarted, RunStopped, TrialJudged, given
from ratchet.core.state import RunState, fold
from ratchet.ledger.events import Event, Torn, check_chain, read_log_bytes, scan_events, scan_log
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.index import Snapshot
from ratchet.ledger.lock import is_locked
from ratchet.ledger.rundir import ONE_SHOT_MODES, RunDir, list_runs, open_run, run_mode
from ratchet.present.report.data import (
    MAX_DIFF_CHARS,
    MAX_REPORT_CHARS,
    AttemptDetail,
    ReportData,
    budget_timeline,
    champion_trees,
    clip,
)
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
    """Run `run_id`, or when None the latest campaign (`ratchet compare` and `ratchet calibrate`
    runs are skipped unless there is nothing else). Raises DataError `run.bad_id` / `run.not_found`."""
    if run_id is None:
        for candidate in reversed(list_runs(project_root)):
            if run_mode(RunDir(Path(project_root), candidate)) not in ONE_SHOT_MODES:
                run_id = candidate
                break
    return open_run(project_root, run_id)


def list_project_runs(project_root: Path) -> dict[str, Any]:
    """The `ratchet runs` result: {"project", "runs"}, the runs of the project at `project_root`
    oldest first, each {run_id, mode, state, stop_reason, promotions, attempts, started}.

    mode: `campaign`, `compare` or `calibrate` (run.started's); started: run.started's timestamp.
    A run directory without run.started yet has state `starting` while a process holds its lock,
    else `not_started` (it measured nothing); a run whose ledger cannot be read has state
    `unreadable` and `error` {code, message} (the others are still listed). Each run is read as
    `ratchet status` reads it (the index when it vouches for the ledger)."""
    return {"project": str(project_root), "runs": [_run_row(RunDir(project_root, r)) for r in list_runs(project_root)]}


def _run_row(run: RunDir) -> dict[str, Any]:
    row: dict[str, Any] = {"run_id": run.run_id, "mode": None, "state": None, "stop_reason": None,
                           "promotions": None, "attempts": None, "started": None}
    try:
        with open(run.events, "rb") as f:
            first = json.loads(f.readline() or b"{}")
    except (OSError, ValueError):
        first = {}
    started = line_payload(first) if isinstance(first, dict) and first else None
    if not isinstance(started, RunStarted):
        row["state"] = "starting" if is_locked(run.root) is not None else "not_started"
        return row
    row["mode"] = given(started.mode) or "campaign"
    row["started"] = first.get("ts")
    try:
        status = run_status(run.project_root, run.run_id)
    except RatchetError as exc:
        row.update(state="unreadable", error={"code": exc.code, "message": exc.message})
        return row
    row.update(state=status["state"], stop_reason=status["stop_reason"], promotions=status["promotions"],
               attempts=len(status["attempts"]))
    return row


def run_status(project_root: Path, run_id: str | None) -> dict[str, Any]:
    """The `ratchet status` result for `run_id` (the latest run when None).

    `result.ledger`: {"events", "verified", "state_from"}. verified "prefix_digest", state_from
    "index": the index (whose events the kernel verified one by one as it wrote them) was read in
    one snapshot, and the ledger's bytes up to the index's last event hash, segment by segment, to
    what the index recorded of those lines (ledger/prefix.py): the file still starts with exactly
    the verified lines. Lines beyond them are accepted only while a kernel holds the run's lock (it
    is writing them; the state shown is the snapshot's), and only when their hash chain continues
    from the index's last event. verified "full", state_from "events": every line parsed and
    verified (canonical form, fields, seq, chain) and folded; used whenever the index cannot vouch
    for the ledger. `events`: the events shown.
    Raises LedgerError for a damaged ledger (never a state read past a defect).
    """
    run = find_run(project_root, run_id)
    holder = is_locked(run.root)
    snapshot = Snapshot.open(run.index)  # before the ledger: the kernel appends there first
    try:
        raw = read_log_bytes(run.events)
        state, end = _indexed_state(snapshot, raw, holder)
    finally:
        if snapshot is not None:
            snapshot.close()
    if state is not None and end is not None:
        result = status_result(state, holder)
        if result["stop_reason"] is not None:
            result["stop_detail"] = _stop_detail(raw, end)
        result["warnings"] = []
        result["ledger"] = {"events": state.last_seq + 1, "verified": "prefix_digest", "state_from": "index"}
        return result
    events, torn = scan_events(raw)
    warning = _torn_warning(run, torn)
    result = status_result(fold(events), holder)
    result["warnings"] = [warning] if warning else []
    result["ledger"] = {"events": len(events), "verified": "full", "state_from": "events"}
    return result


_STOPPED = b'"kind":"run.stopped"'


def _stop_detail(raw: bytes, end: int) -> str | None:
    """`data.detail` of the last `run.stopped` among the first `end` bytes of the ledger (the index
    does not keep it), or None."""
    at = raw.rfind(_STOPPED, 0, end)
    while at != -1:
        start = raw.rfind(b"\n", 0, at) + 1
        line = json.loads(raw[start:raw.index(b"\n", at)])
        if isinstance(line, dict) and line.get("kind") == "run.stopped":
            stopped = line_payload(line)
            return stopped.detail if isinstance(stopped, RunStopped) else None
        at = raw.rfind(_STOPPED, 0, start)
    return None


def _indexed_state(snapshot: Snapshot | None, raw: bytes, holder: int | None) -> tuple[RunState | None, int | None]:
    """(the state from the index snapshot, the end of the ledger prefix it vouches for) when the
    ledger starts with the index's lines (see run_status), else (None, None)."""
    if snapshot is None or snapshot.last is None:
        return None, None
    end = snapshot.prefix_end(raw)
    if end is None:
        return None, None
    if end < len(raw):  # lines beyond the index: a kernel writing them, or the index lags a kill
        later = check_chain(raw, end, snapshot.last[0] + 1, snapshot.last[1])
        if holder is None or later is None:
            return None, None  # no writer, or a broken line: the full verification says which
    return snapshot.status_state(raw), end


HTML_REPORT_NAME = "report.html"
"""The file `ratchet report RUN --html` writes in the run's directory."""


def _report_inputs(run: RunDir, state: RunState | None = None) -> dict[str, Any]:
    """What both reports are made of, read once: the events, the `ratchet status` result, the
    contract's sections, the promotions, (examples) the final pass rates per split, and the
    warnings from the trials' recorded skewness (`text.skew_warnings`)."""
    from ratchet.core.contract_load import parse_contract  # pydantic: only for reports, not for status
    from ratchet.present.report.text import skew_warnings

    events, _ = read_run(run)
    state = state or fold(events)
    contract = parse_contract(run.contract.read_text(encoding="utf-8"), source=str(run.contract))
    holdout = [p for e in events if isinstance(p := e.payload, TrialJudged) and p.stage == "holdout"]
    return {
        "events": events,
        "state": state,
        "status": status_result(state, is_locked(run.root)),
        "campaign": contract.campaign.name,
        "gate": contract.gate.model_dump(),
        "target": contract.target.model_dump(),
        "agent": contract.agent.model_dump(),
        "promotions": [p for e in events if isinstance(p := e.payload, ChampionPromoted)],
        "splits": given(holdout[-1].splits) if holdout else None,
        "skew_warnings": skew_warnings([{"attempt": p.attempt, "stage": p.stage, "verdict": p.verdict,
                                         "units": p.units, "skewness": given(p.skewness)}
                                        for e in events if isinstance(p := e.payload, TrialJudged)]),
    }


def write_report(run: RunDir, state: RunState | None = None) -> Path:
    """(Re-)render `report.md` and its plots for `run` from its ledger, ending with the ledger head and
    the last signature (core.audit.evidence_lines); returns the report's path."""
    from ratchet.present.report.markdown import render_report
    from ratchet.present.report.plots import champion_plot, effects_plot

    r = _report_inputs(run, state)
    status = r["status"]
    run.plots.mkdir(parents=True, exist_ok=True)
    plots = [
        champion_plot(status["attempts"], r["promotions"], status["holdout"], run.plots / "champion.png"),
        effects_plot(status["attempts"], run.plots / "effects.png"),
    ]
    text = render_report(
        status,
        campaign=r["campaign"],
        gate=r["gate"],
        target=r["target"],
        promotions=r["promotions"],
        plots=[p.relative_to(run.root).as_posix() for p in plots],
        splits=r["splits"],
        warnings=next((list(p.warnings or []) for e in r["events"] if isinstance(p := e.payload, RunStarted)), [])
        + r["skew_warnings"],
        val_trials=r["state"].trials_run,
    )
    from ratchet.core.audit import evidence_lines

    text += "\n" + "\n".join(evidence_lines(r["events"], run.run_id))
    write_exclusive(run.report, text.encode("utf-8"))
    return run.report


def write_html_report(run: RunDir, state: RunState | None = None) -> Path:
    """(Re-)render `report.html` for `run` from its ledger, its blobs (each attempt's report) and
    git (each attempt's diff against the champion it was measured against); returns its path."""
    from ratchet.commands.report_extras import example_rows, search_space
    from ratchet.present.report.html import render_html

    r = _report_inputs(run, state)
    examples = r["target"].get("examples")
    data = ReportData(
        status=r["status"], campaign=r["campaign"], gate=r["gate"], target=r["target"],
        promotions=r["promotions"], splits=r["splits"], timeline=budget_timeline(r["events"]),
        details=_attempt_details(run, r["state"], r["promotions"], r["events"]), events=len(r["events"]),
        warnings=r["skew_warnings"], search_space=search_space(r["agent"]),
        examples=example_rows(run, run.project_root / examples, (e.payload for e in r["events"]
                                                                 if isinstance(e.payload, JobFinished)))
        if examples else (),
    )
    path = run.root / HTML_REPORT_NAME
    path.write_text(render_html(data), encoding="utf-8")
    return path


def _attempt_details(run: RunDir, state: RunState, promotions: list[ChampionPromoted], events: list[Any]
                     ) -> dict[int, AttemptDetail]:
    """attempt -> AttemptDetail: the submitted report (its blob), the diff from the champion of its
    time to its candidate (git) and a command agent's legs (from `events`, the run's ledger); a
    missing blob or tree object is said, never fatal."""
    from ratchet.commands.attempt import attempt_legs
    from ratchet.ledger.blobs import BlobStore
    from ratchet.workspace.git import Git

    before = champion_trees((a.attempt for a in state.attempts), promotions, state.baseline.tree)
    blobs = BlobStore(run.blobs)
    try:
        git: Git | None = Git(run.project_root)
    except RatchetError:
        git = None
    details = {}
    payloads = [e.payload for e in events]
    for a in state.attempts:
        report = None
        if a.report_blob:
            try:
                report = clip(blobs.get_bytes(a.report_blob).decode("utf-8", "replace"), MAX_REPORT_CHARS)
            except (RatchetError, OSError) as exc:
                report = f"(the report's blob cannot be read: {exc})"
        diff, note = None, None
        if not a.tree or not before[a.attempt]:
            note = "no candidate tree was recorded"
        elif git is None:
            note = f"{run.project_root} is not a git repository here"
        else:
            try:
                diff = clip(git.diff_text(before[a.attempt] or "", a.tree), MAX_DIFF_CHARS) or None
                note = None if diff else "none: the candidate's tree equals the champion's"
            except RatchetError:
                note = "the trees are not in this repository any more (git gc, or a moved run)"
        details[a.attempt] = AttemptDetail(report=report, diff=diff, diff_note=note,
                                           legs=tuple(attempt_legs(blobs, payloads, a.attempt)))
    return details
