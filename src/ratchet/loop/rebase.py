"""A moving champion (`agent.workers` > 1): a candidate built on one champion, re-based onto the
champion promoted since (a git three-way merge of its change), and what a conflict is called.

A candidate's change is the diff from the champion it was built on (`base`) to its tree; re-basing
applies that change to the new champion (`onto`) with `git merge-tree`, the old champion as merge
base. A clean merge is a tree whose diff against `onto` is the candidate's change (plus nothing
else); a conflict ends the attempt `rejected` with reason `stale` (core.gate.REASONS) before any
job runs. docs/workers.md says why every promoted gain stays a measured gain over the tree it
replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

from ratchet.core.gate import Decision
from ratchet.core.state import AttemptState, RunState
from ratchet.workspace.git import Git

MAX_CONFLICTS_SHOWN = 10
"""Conflicted paths named in a `stale` verdict's text (the rest are counted)."""


@dataclass(frozen=True)
class Rebased:
    """A candidate re-based onto `onto`: its new tree (None on a conflict) and the conflicted paths."""

    tree: str | None
    conflicts: tuple[str, ...] = ()


def rebase(git: Git, base: str, onto: str, tree: str) -> Rebased:
    """Candidate `tree`, built on champion tree `base`, re-based onto champion tree `onto`: `tree`
    itself when `onto` is `base` (nothing moved). Raises GitError `git.merge_failed`."""
    if base == onto:
        return Rebased(tree)
    merged, conflicts = git.merge_trees(base, onto, tree)
    return Rebased(merged, tuple(conflicts))


def stale_decision(state: RunState, attempt: AttemptState, conflicts: tuple[str, ...]) -> Decision:
    """The `stale` verdict of `attempt`, whose change conflicts with the champion promoted since
    its candidate was built (its text names the promoted attempt and the conflicted paths: the
    agent reads it)."""
    promoted = state.champion.attempt
    shown = ", ".join(conflicts[:MAX_CONFLICTS_SHOWN])
    more = f" and {len(conflicts) - MAX_CONFLICTS_SHOWN} more" if len(conflicts) > MAX_CONFLICTS_SHOWN else ""
    text = (f"stale: attempt {promoted} was promoted after this candidate was built; its change does not "
            f"re-base onto the new champion (conflicts in {shown or 'the tree'}{more})")
    return Decision.without_jobs("stale", text[:1000], 0.0)


def moved(attempt: AttemptState) -> bool:
    """Whether the champion moved between the start of `attempt` (the champion its candidate was
    built on) and its submission (the champion its trial measures against)."""
    return (attempt.base_tree is not None and attempt.against_tree is not None
            and attempt.base_tree != attempt.against_tree)
