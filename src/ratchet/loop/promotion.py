"""Promotion as a compare-and-swap: an accepted candidate becomes the champion (a commit on
`ratchet/<run_id>/champion` and `champion.promoted`) only while the champion is still the commit
its trial measured it against. With several workers another attempt may have been promoted
meanwhile: then nothing is promoted, and the campaign re-bases the candidate in a new attempt
(docs/workers.md says why every promoted gain stays a measured gain over the tree it replaced).
"""

from __future__ import annotations

from ratchet.agents.base import Submit
from ratchet.core.gate import Decision
from ratchet.core.payloads import ChampionPromoted
from ratchet.ledger.rundir import champion_branch
from ratchet.loop.kernel import Kernel
from ratchet.loop.trial import TrialOutcome
from ratchet.present.progress import CampaignUI


def promote(k: Kernel, ui: CampaignUI, number: int, sub: Submit, outcome: TrialOutcome) -> bool:
    """Promote attempt `number`'s accepted candidate `sub`, judged by `outcome`, under the kernel's
    lock, only while the run's champion is the one its trial measured against (its
    `against_commit`) and the branch head is that champion (a head a killed kernel moved to this
    very tree is adopted). Returns False, promoting nothing, when another attempt was promoted
    meanwhile; True once promoted (now or before). Raises GitError `git.branch_moved` when
    someone else moved the branch."""
    with k.guard:
        if k.find("champion.promoted", attempt=number):
            return True
        state = k.state()
        branch = champion_branch(k.run.run_id)
        head = k.git.branch_commit(branch)
        parent = state.champion.commit or ""
        me = state.attempt(number)
        measured = (me.against_commit if me is not None else None) or parent
        d = outcome.decision
        if head is not None and head != parent and k.git.tree_of(head) == sub.tree:
            commit = head  # promoted by a kernel killed before it could record it
        elif measured != parent:
            ui.note(f"attempt {number}: accepted against a champion that attempt {state.champion.attempt} "
                    "has replaced since: not promoted; its change is re-based and measured again")
            return False
        else:
            message = promotion_message(number, sub, d, k.contract.target.metric or "metric")
            commit = k.git.commit_tree(sub.tree or "", [parent], message)
            k.git.update_branch(branch, commit, head)
        k.record(ChampionPromoted(
            attempt=number, commit=commit, tree=sub.tree or "", estimate=d.estimate,
            interval=list(d.interval) if d.interval else None, mean=outcome.candidate_mean,
            lcb=outcome.candidate_lcb, branch=branch,
        ))
    ui.promoted(number, commit, d.estimate, d.interval)
    return True


def promotion_message(number: int, sub: Submit, d: Decision, metric: str) -> str:
    """The champion commit's message: the summary, the confirmed gain, and the attempt's report."""
    interval = f"[{d.interval[0]:.4g}, {d.interval[1]:.4g}]" if d.interval else "-"
    return (
        f"ratchet: promote attempt {number}: {sub.summary}\n\n"
        f"Confirmed gain: {d.estimate:+.4g} {metric} (95% interval {interval}, p = {d.p_value:.3g}, "
        f"{d.units} paired units, level {d.level:.3g}).\n\n"
        f"Report:\n{sub.report}\n"
    )
