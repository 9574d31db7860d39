"""`ratchet compare BASE CANDIDATE`: one controlled paired comparison of two git revisions on the
target, with the gate at level `gate.alpha` (a single trial) and the looks of `gate.units`.

Recorded in a run directory like any run (attempt 1 submits CANDIDATE against BASE; no promotion,
no confirmation, no holdout). Its unit seeds derive from the two trees and the campaign seed rather
than a random salt, so comparing the same pair again reuses the measurement cache and runs no new
job (with `target.cache = true`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from ratchet.commands.run import open_project
from ratchet.core.canonical import digest
from ratchet.core.errors import EXIT_INTERRUPTED, RatchetError, UnsupportedError
from ratchet.core.gate import Decision
from ratchet.core.gate_design import margin_for_state
from ratchet.core.payloads import AttemptStarted, AttemptSubmitted, RunStopped, TrialJudged
from ratchet.ledger.files import write_temp
from ratchet.ledger.rundir import COMPARE_MODE
from ratchet.loop.campaign import measure_plan, preflight, start_record
from ratchet.loop.kernel import new_kernel
from ratchet.loop.measure import Interrupted
from ratchet.loop.trial import TrialOutcome
from ratchet.present.progress import CampaignUI
from ratchet.targets.benchmark import BenchmarkTarget


def compare_salt(base_tree: str, candidate_tree: str, seed: int) -> str:
    """The deterministic salt of a comparison: 32 hex digits of the digest of the two trees and seed."""
    return digest(["ratchet.compare", base_tree, candidate_tree, seed])[7:39]


def compare_revisions(directory: Path, base: str, candidate: str, ui: CampaignUI) -> dict[str, Any]:
    """Compare revision `candidate` against `base`; returns {run_id, base, candidate, verdict,
    reason, reason_text, estimate, interval, p_value, units, level, units_table}.

    Raises GitError `git.bad_revision` for an unknown revision, and what `ratchet run` raises for a
    bad contract or a baseline without a metric."""
    loaded, git = open_project(directory, for_compare=True)
    c = loaded.contract
    if c.target.kind != "benchmark":
        raise UnsupportedError("unsupported.compare_examples",
                               "`ratchet compare` supports benchmark targets only in this build",
                               hint="for an examples target, run a campaign with the files agent")
    base_commit, cand_commit = git.rev_parse_commit(base), git.rev_parse_commit(candidate)
    base_tree, cand_tree = git.tree_of(base_commit), git.tree_of(cand_commit)
    salt = compare_salt(base_tree, cand_tree, c.campaign.seed)
    kernel, _ = new_kernel(loaded)
    os.replace(write_temp(kernel.run.root / "salt", salt.encode()), kernel.run.root / "salt")
    try:
        target = BenchmarkTarget(c, kernel.sandbox, salt)
        start_record(kernel, salt, base_commit, base_tree, target.reserve_units(), mode=COMPARE_MODE)
        kernel.record(AttemptStarted(attempt=1))
        kernel.record(AttemptSubmitted(attempt=1, tree=cand_tree, summary=f"{base} -> {candidate}", report_blob=None,
                                       params=None))
        if base_tree == cand_tree:
            outcome = None
            decision = Decision.without_jobs("no_change", "the two revisions have the same tree: nothing to measure",
                                             c.gate.alpha)
        else:
            try:
                kernel.install_sigint()
                preflight(kernel, target, ui)
                plan = target.plan("trial", 1, 1, base_tree, cand_tree, target.looks("trial"))
                margin = margin_for_state(c.gate.min_effect, c.gate.min_effect_rel, kernel.state().champion_mean)
                outcome = measure_plan(kernel, target, plan, c.gate.alpha, margin, ui.jobs)
            except Interrupted:
                kernel.record(RunStopped(stop_reason="interrupted", budget=None, detail="compare"))
                raise RatchetError("interrupted", "the comparison was interrupted; its jobs were killed",
                                   hint="run it again: finished measurements are cached",
                                   exit_code=EXIT_INTERRUPTED) from None
            decision = outcome.decision
        kernel.record(TrialJudged(attempt=1, stage="trial", **cast(dict[str, Any], decision.to_json())))
        kernel.record(RunStopped(stop_reason="compared", budget=None, detail=None))
    finally:
        kernel.close()
    return {
        "run_id": kernel.run.run_id, "base": {"rev": base, "commit": base_commit, "tree": base_tree},
        "candidate": {"rev": candidate, "commit": cand_commit, "tree": cand_tree},
        **{k: v for k, v in decision.to_json().items() if k not in ("retry_units", "look", "threshold")},
        "units_table": _units_table(outcome, c.target.direction),
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
