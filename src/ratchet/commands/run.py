"""`ratchet run`: check the contract and the repository, hold the project's run lock, open (or
resume) the run, build the target and the agent, run the campaign (its preflight first), write the
report. Returns the `--json` result.
"""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from ratchet.commands.preflight import sandbox_diagnosis
from ratchet.commands.project import check_project
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import EXIT_INTERRUPTED, MeasurementError
from ratchet.core.inputs import uncommitted_warning
from ratchet.ledger.project_lock import sole_run
from ratchet.ledger.rundir import champion_branch, ensure_ratchet_dir
from ratchet.loop.agents import AgentLink, make_agents
from ratchet.loop.kernel import Kernel
from ratchet.present.progress import CampaignUI
from ratchet.targets.examples import ExampleData, load_split
from ratchet.workspace.git import Git


def open_project(directory: Path, for_compare: bool = False) -> tuple[LoadedContract, Git]:
    """Refuse what a run cannot run (`commands.project.check_project`: the agent's settings only
    when not `for_compare`), warn about uncommitted changes to inputs read from HEAD, and create
    `.ratchet/`. Raises ContractError / UnsupportedError / DataError / GitError (exit 2)."""
    loaded, git = check_project(directory, for_compare)
    warning = uncommitted_warning(git.changed_paths(), loaded.contract)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    ensure_ratchet_dir(loaded.root)
    return loaded, git


def load_examples_data(loaded: LoadedContract) -> ExampleData | None:
    """The run's examples split (examples targets), or None. Raises DataError (examples.*)."""
    c = loaded.contract
    if c.target.kind != "examples":
        return None
    return load_split(loaded.root, c.target.examples or "", c.target.split, c.campaign.seed)


def run_project(directory: Path, resume: str | None, ui: CampaignUI, allow_concurrent: bool = False
                ) -> dict[str, Any]:
    """`ratchet run [DIR] [--resume RUN_ID] [--allow-concurrent]`: returns {run_id, stop_reason,
    budget, promotions, baseline, champion, holdout, report, branch, merge} (and `_exit_code` 130 and
    `resume` when interrupted; `merge`: the command that merges the champion, when something was
    promoted). Raises
    DataError `run.concurrent` while another run of the project is in progress (see
    `ledger.project_lock.sole_run`) unless `allow_concurrent`."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # before the kernel's handler: as Ctrl-C
    loaded, git = open_project(directory)
    with sole_run(loaded.root, allow_concurrent, resume):
        return _start(loaded, git, directory, resume, ui)


def _start(loaded: LoadedContract, git: Git, directory: Path, resume: str | None, ui: CampaignUI
           ) -> dict[str, Any]:
    from ratchet.loop.campaign import Campaign
    from ratchet.loop.life import open_campaign

    data = load_examples_data(loaded)
    link = AgentLink()
    agents = make_agents(loaded.contract, loaded.root, git, link, data)
    kernel, target = open_campaign(loaded, git, resume, data, directory)
    link.bind(kernel)
    return _run(kernel, Campaign(kernel, agents, ui, target))


def _run(kernel: Kernel, campaign: Any) -> dict[str, Any]:
    from ratchet.commands.runs import run_status, write_report

    try:
        try:
            reason, budget = campaign.run()
        except MeasurementError as err:
            raise sandbox_diagnosis(kernel, err) from None
        report = write_report(kernel.run, kernel.state())
    finally:
        kernel.close()
    status = run_status(kernel.loaded.root, kernel.run.run_id)
    result = {
        "run_id": kernel.run.run_id,
        "stop_reason": reason,
        "budget": budget,
        "promotions": status["promotions"],
        "baseline": status["baseline"],
        "champion": status["champion"],
        "holdout": status["holdout"],
        "report": str(report),
        "branch": champion_branch(kernel.run.run_id) if status["promotions"] else None,
        "merge": merge_command(kernel) if status["promotions"] and reason != "interrupted" else None,
    }
    if reason == "interrupted":
        result["_exit_code"] = EXIT_INTERRUPTED
        result["resume"] = f"ratchet run {kernel.loaded.root} --resume {kernel.run.run_id}"
    return result


def merge_command(kernel: Kernel) -> str:
    """The command that brings the run's champion into the branch checked out in the project:
    `git merge --ff-only ratchet/<run_id>/champion` while HEAD is still the run's baseline (the
    champion branch grows from it), a plain `git merge` once HEAD has moved on."""
    branch = champion_branch(kernel.run.run_id)
    moved = kernel.git.head_commit() != kernel.state().baseline.commit
    return f"git -C {shlex.quote(str(kernel.loaded.root))} merge {'' if moved else '--ff-only '}{branch}"

