"""`ratchet report RUN --attempt N`: one attempt as the ledger and the repository keep it: the
agent's report, the candidate's diff against the champion (its blob, or git when a run predates
diff blobs), the verdicts of its trial and confirmation with their figures, its promotion, whether
its tree is still in the repository (kept by `refs/ratchet/<run_id>/attempts/<n>`), and a command
agent's legs (`present.report.legs`: command, exit, seconds, tokens, requests, the end of its output).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.core.errors import DataError, LedgerError, RatchetError
from ratchet.core.payloads import AgentLeg, AttemptSubmitted, ChampionPromoted, RunStarted, TrialJudged, given
from ratchet.core.state import fold
from ratchet.ledger.blobs import BlobStore
from ratchet.loop.audit_trail import attempt_ref
from ratchet.present.report.legs import leg_views
from ratchet.present.status import attempt_row
from ratchet.workspace.git import Git

FIGURES = ("verdict", "reason", "reason_text", "estimate", "interval", "p_value", "threshold", "units", "look",
           "level", "champion_mean", "candidate_mean", "skewness")
"""The recorded figures of a trial.judged shown for each stage (`skewness`: None when not recorded)."""


def attempt_report(project_root: Path, run_id: str | None, number: int) -> dict[str, Any]:
    """{"run_id", "attempt", "summary", "tree", "params" (a search agent's, else None), "ref",
    "ref_commit", "tree_present", "report", "diff", "verdict", "reason", "stages": {stage: figures},
    "promotion", "gave_up", "revises", "legs"} (`revises`: the attempt this one revised in the same
    agent session, or None; `legs`: a
    command agent's legs as `present.report.legs.leg_views` gives them, [] for other agents). Raises
    DataError `run.*` and `attempt.not_found`, LedgerError for a damaged ledger or a damaged report or
    diff blob (a leg's missing output blob is shown as missing)."""
    from ratchet.commands.runs import find_run, read_run

    run = find_run(project_root, run_id)
    events, _ = read_run(run)
    row_state = fold(events).attempt(number)
    if row_state is None:
        raise DataError("attempt.not_found", f"run {run.run_id} has no attempt {number}",
                        hint=f"`ratchet status {run.run_id} --dir {run.project_root}` lists its attempts")
    row = attempt_row(row_state)
    blobs = BlobStore(run.blobs)
    payloads = [e.payload for e in events]
    submitted = next((p for p in payloads if isinstance(p, AttemptSubmitted) and p.attempt == number), None)
    stages = {p.stage: {k: given(getattr(p, k)) for k in FIGURES} for p in payloads
              if isinstance(p, TrialJudged) and p.attempt == number}
    promotion = next((p for p in payloads if isinstance(p, ChampionPromoted) and p.attempt == number), None)
    report_blob = submitted.report_blob if submitted is not None else None
    diff_blob = given(submitted.diff_blob) if submitted is not None else None
    ref = attempt_ref(run.run_id, number)
    git, ref_commit = _git(project_root), None
    tree = submitted.tree if submitted is not None else None
    if git is not None:
        ref_commit = git.ref_commit(ref)
    diff = blobs.get_bytes(diff_blob).decode("utf-8", "replace") if isinstance(diff_blob, str) else \
        _git_diff(git, events, number, tree)
    return {
        "run_id": run.run_id, "attempt": number, "summary": submitted.summary if submitted is not None else None,
        "tree": tree, "params": row["params"],
        "ref": ref, "ref_commit": ref_commit,
        "tree_present": bool(git is not None and isinstance(tree, str) and git.has_object(tree)),
        "report": blobs.get_bytes(report_blob).decode("utf-8", "replace") if isinstance(report_blob, str) else None,
        "diff": diff, "verdict": row["verdict"], "reason": row["reason"], "stages": stages,
        "promotion": {k: getattr(promotion, k) for k in ("commit", "tree", "estimate", "interval", "branch")}
        if promotion else None,
        "gave_up": row_state.gave_up,
        "revises": row_state.revises,
        "legs": attempt_legs(blobs, payloads, number),
    }


def attempt_legs(blobs: BlobStore, payloads: list[Any], number: int) -> list[dict[str, Any]]:
    """The legs of attempt `number` among the run's event `payloads` (`leg_views`), their blobs read
    from `blobs` (one that cannot be read is shown as missing)."""
    def read(digest: str) -> bytes | None:
        try:
            return blobs.get_bytes(digest)
        except LedgerError:
            return None

    legs = [p for p in payloads if isinstance(p, AgentLeg) and p.attempt == number]
    return leg_views(legs, read, lambda digest: str(blobs.path_of(digest)))


def _git(project_root: Path) -> Git | None:
    try:
        return Git(project_root)
    except RatchetError:
        return None


def _git_diff(git: Git | None, events: list[Any], number: int, tree: Any) -> str | None:
    """The diff from the champion before attempt `number` (a run without diff blobs), or None."""
    if git is None or not isinstance(tree, str) or not events:
        return None
    started = events[0].payload
    base = started.baseline.tree if isinstance(started, RunStarted) else None
    for e in events:
        if isinstance(p := e.payload, ChampionPromoted) and p.attempt < number:
            base = p.tree
    try:
        return git.diff_text(base, tree, binary=True) if isinstance(base, str) else None
    except RatchetError:
        return None
