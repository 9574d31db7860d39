"""What the loop keeps so that someone who was not there can check a run (docs/verify.md): every
attempt's diff and tree, the versions that ran, and a resume that measures exactly the plan that
was recorded.
"""

from __future__ import annotations

import platform
from typing import Any, cast

from ratchet import __version__
from ratchet.core.errors import PlanError
from ratchet.core.payloads import TrialPlanned
from ratchet.core.plan import Plan
from ratchet.loop.kernel import Kernel


def attempt_ref(run_id: str, attempt: int) -> str:
    """`refs/ratchet/<run_id>/attempts/<n>`: the ref keeping attempt n's candidate tree reachable."""
    return f"refs/ratchet/{run_id}/attempts/{attempt}"


def keep_attempt(k: Kernel, attempt: int, champion_commit: str, champion_tree: str, tree: str) -> str:
    """Keep attempt `attempt`'s candidate `tree`: a commit of it (parent: the champion's commit) on
    `attempt_ref`, so `git gc --prune=now` loses nothing, and its diff against the champion's tree
    as a blob. Returns the diff blob's digest. A ref already there (a resume) is kept. Raises
    GitError."""
    ref = attempt_ref(k.run.run_id, attempt)
    if k.git.ref_commit(ref) is None:
        parents = [champion_commit] if champion_commit else []
        commit = k.git.commit_tree(tree, parents, f"ratchet: attempt {attempt} of run {k.run.run_id}\n")
        k.git.update_ref(ref, commit)
    return k.blobs.put_bytes(k.git.diff_text(champion_tree, tree, binary=True).encode("utf-8"))


def check_recorded_plan(k: Kernel, plan: Plan) -> None:
    """Refuse to measure a plan that differs from the one recorded for its (attempt, stage) (a
    resume re-compiles every plan). Raises PlanError `plan.digest_mismatch` naming both digests."""
    recorded = k.find("trial.planned", attempt=plan.attempt, stage=plan.stage)
    digest = cast(TrialPlanned, recorded.payload).plan_digest if recorded is not None else plan.digest
    if recorded is None or digest == plan.digest:
        return
    raise PlanError(
        "plan.digest_mismatch",
        f"the {plan.stage} plan of attempt {plan.attempt} re-compiles to {plan.digest}, but event "
        f"{recorded.seq} recorded {digest}: the run's inputs changed since",
        hint="restore the contract, examples and salt the run started with, or start a new run",
    )


def versions() -> dict[str, Any]:
    """The versions `run.started` records: {"ratchet", "python", "implementation", "platform"}."""
    return {"ratchet": __version__, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "platform": platform.platform()}
