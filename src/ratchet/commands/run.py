"""`ratchet run`: check the contract and the repository, preflight the baseline, open (or resume)
the run, build the agent, run the campaign, write the report. Returns the `--json` result.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from ratchet.agents.base import Agent
from ratchet.commands.preflight import measure_baseline, preflight_error
from ratchet.commands.project import check_project
from ratchet.compute.env import sandbox_spec
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import EXIT_INTERRUPTED, DataError
from ratchet.core.inputs import uncommitted_warning
from ratchet.ledger.project_lock import sole_run
from ratchet.ledger.rundir import ensure_ratchet_dir
from ratchet.loop.examples_trial import check_same_dataset, load_split
from ratchet.loop.kernel import Kernel, interrupted_runs, new_kernel, resume_kernel
from ratchet.loop.measure import Measurement
from ratchet.present.progress import CampaignUI
from ratchet.workspace.git import Git


def make_agent(contract: Contract, root: Path, git: Git) -> Agent:
    """The agent named by `agent.kind` (search or files in this build), seeing trees through a view
    that hides `scope.hidden` and `target.examples`."""
    from ratchet.agents.view import AgentTreeView

    view = AgentTreeView(git, contract.hidden_paths)
    if contract.agent.kind == "search":
        from ratchet.agents.search import SearchAgent

        assert contract.agent.search is not None
        return SearchAgent(contract.agent.search, contract.target.direction, view)
    from ratchet.agents.files import FilesAgent, list_candidates

    assert contract.agent.files is not None
    folder = root / contract.agent.files.path
    list_candidates(folder)  # fail now (exit 2) when the folder is missing
    return FilesAgent(folder, view)


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


def preflight(loaded: LoadedContract, git: Git, tree: str) -> Measurement:
    """Run the baseline once before any budget is spent and return its measurement; a job without
    a metric stops here with exit 2 and the job's stderr tail. Raises MeasurementError
    `preflight.no_metric`, or `preflight.sandbox_only` when it measures only outside the sandbox
    (see `commands.preflight`)."""
    c = loaded.contract
    sandbox = sandbox_spec(c.sandbox, resolve_mode(c.sandbox.mode))
    m, tail = measure_baseline(loaded, git, tree, sandbox)
    if m.state != "ok":
        raise preflight_error(loaded, git, tree, sandbox, m, tail)
    return m


def run_project(directory: Path, resume: str | None, ui: CampaignUI, allow_concurrent: bool = False
                ) -> dict[str, Any]:
    """`ratchet run [DIR] [--resume RUN_ID] [--allow-concurrent]`: returns {run_id, stop_reason,
    budget, promotions, champion, holdout, report} (and `_exit_code` 130 when interrupted). Raises
    DataError `run.concurrent` while another run of the project is in progress (see
    `ledger.project_lock.sole_run`) unless `allow_concurrent`."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # before the kernel's handler: as Ctrl-C
    loaded, git = open_project(directory)
    with sole_run(loaded.root, allow_concurrent, resume):
        return _start(loaded, git, directory, resume, ui)


def _start(loaded: LoadedContract, git: Git, directory: Path, resume: str | None, ui: CampaignUI
           ) -> dict[str, Any]:
    from ratchet.loop.campaign import Campaign, start_record

    data = load_split(loaded.root, loaded.contract) if loaded.contract.target.kind == "examples" else None
    if resume is None:
        stale = interrupted_runs(loaded.root)
        if stale:
            raise DataError(
                "run.interrupted_exists",
                f"run {stale[-1]} was interrupted and can be resumed",
                hint=f"resume it: ratchet run {directory} --resume {stale[-1]}; or give it up (nothing is "
                     f"deleted): ratchet abandon {stale[-1]} --dir {directory}",
            )
        commit = git.head_commit()
        tree = git.tree_of(commit)
        if data is None:
            preflight(loaded, git, tree)
        kernel, salt = new_kernel(loaded)
        extra = {}
        if data is not None:
            extra["examples"] = {"fingerprint_blob": kernel.blobs.put_json(data.fingerprint),
                                 "sizes": data.split.sizes(), "warnings": list(data.examples.warnings)}
        start_record(kernel, salt, commit, tree, **extra)
    else:
        kernel = resume_kernel(loaded, resume)
        try:
            if data is not None:
                started = kernel.find("run.started")
                recorded = (started.data.get("examples") or {}).get("fingerprint_blob") if started else None
                check_same_dataset(kernel.blobs.get_json(recorded) if recorded else {}, data)
        except BaseException:
            kernel.close()
            raise
        salt = kernel.state().salt or ""
        kernel.record("run.resumed", {"pid": _pid()})
    agent = make_agent(loaded.contract, loaded.root, git)
    return _run(kernel, Campaign(kernel, agent, ui, salt, data))


def _run(kernel: Kernel, campaign: Any) -> dict[str, Any]:
    from ratchet.commands.runs import run_status, write_report

    kernel.install_sigint()
    try:
        reason, budget = campaign.run()
        report = write_report(kernel.run, kernel.state())
    finally:
        kernel.close()
    status = run_status(kernel.loaded.root, kernel.run.run_id)
    result = {
        "run_id": kernel.run.run_id,
        "stop_reason": reason,
        "budget": budget,
        "promotions": status["promotions"],
        "champion": status["champion"],
        "holdout": status["holdout"],
        "report": str(report),
        "branch": f"ratchet/{kernel.run.run_id}/champion" if status["promotions"] else None,
    }
    if reason == "interrupted":
        result["_exit_code"] = EXIT_INTERRUPTED
        result["resume"] = f"ratchet run {kernel.loaded.root} --resume {kernel.run.run_id}"
    return result


def _pid() -> int:
    import os

    return os.getpid()
