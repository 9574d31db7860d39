"""`ratchet compare BASE CANDIDATE`: one controlled paired comparison of two git revisions on the
target, with the gate at level `gate.alpha` (a single trial) and the looks of `gate.units`.

Recorded in a run directory like any run (attempt 1 submits CANDIDATE against BASE; no promotion,
no confirmation, no holdout). Its unit seeds derive from the two trees and the campaign seed rather
than a random salt, so comparing the same pair again reuses the measurement cache and runs no new
job (with `target.cache = true`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.commands.run import open_project
from ratchet.core.errors import UnsupportedError
from ratchet.loop.one_shot import compare_trees
from ratchet.loop.trial import TrialOutcome
from ratchet.present.progress import CampaignUI


def compare_revisions(directory: Path, base: str, candidate: str, ui: CampaignUI) -> dict[str, Any]:
    """Compare revision `candidate` against `base`; returns {run_id, base, candidate, verdict,
    reason, reason_text, estimate, interval, p_value, units, level, units_table}.

    Raises GitError `git.bad_revision` for an unknown revision, RatchetError `interrupted` (exit
    130) on Ctrl-C, and what `ratchet run` raises for a bad contract or a baseline without a metric."""
    loaded, git = open_project(directory, for_compare=True)
    c = loaded.contract
    if c.target.kind != "benchmark":
        raise UnsupportedError("unsupported.compare_examples",
                               "`ratchet compare` supports benchmark targets only in this build",
                               hint="for an examples target, run a campaign with the files agent")
    base_commit, cand_commit = git.rev_parse_commit(base), git.rev_parse_commit(candidate)
    base_tree, cand_tree = git.tree_of(base_commit), git.tree_of(cand_commit)
    compared = compare_trees(loaded, base_commit, base_tree, cand_tree, f"{base} -> {candidate}", ui)
    decision = compared.decision
    return {
        "run_id": compared.run_id, "base": {"rev": base, "commit": base_commit, "tree": base_tree},
        "candidate": {"rev": candidate, "commit": cand_commit, "tree": cand_tree},
        **{k: v for k, v in decision.to_json().items() if k not in ("retry_units", "look", "threshold")},
        "units_table": _units_table(compared.outcome, c.target.direction),
    }


def _units_table(outcome: TrialOutcome | None, direction: str) -> list[dict[str, Any]]:
    if outcome is None:
        return []
    sign = 1.0 if direction == "max" else -1.0
    rows = []
    for s in outcome.scores:
        diff = None if s.champion is None or s.candidate is None else sign * (s.candidate - s.champion)
        rows.append({"unit": s.unit, "base": s.champion, "candidate": s.candidate, "gain": diff,
                     "base_failed": s.champion_failed, "candidate_failed": s.candidate_failed})
    return rows
