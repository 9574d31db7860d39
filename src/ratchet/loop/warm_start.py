"""Warm-starting the search agent from earlier runs of the same search (docs/agents.md, "Warm start").

A new campaign whose agent is `search` on a benchmark target reads, once, as it starts, the trials
of the project's earlier campaigns that searched the same thing: the same `[target]` table, the same
`agent.search.file` and `agent.search.space`, and the same code (the two baselines' trees are equal
once the params file and ratchet.toml are set aside). Of each such run it takes every attempt whose trial measured its
candidate: its params and the candidate's mean on its trial (None for a candidate that failed). The
verdicts are never taken: every candidate is judged again in the new run.

What was taken is stored as a blob and named in the new run's `run.started` (data.warm_start), so a
resume reads exactly the same history, whatever ran or finished after the run started. An examples
target is never warm-started (its trials measured val, which never reaches an agent).

Effects: reads other runs' ledgers and contracts (read-only) and git trees; writes one blob.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.agents.base import PastAttempt
from ratchet.core.canonical import digest
from ratchet.core.contract import Contract
from ratchet.core.contract_base import CONTRACT_FILE
from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import RatchetError
from ratchet.core.payloads import RunStarted, given
from ratchet.core.state import fold
from ratchet.ledger.events import scan_log
from ratchet.ledger.rundir import ONE_SHOT_MODES, RunDir, list_runs
from ratchet.loop.history import past_attempts
from ratchet.workspace.git import Git

WARM_START_FORMAT = 1
"""The version of the warm-start blob's layout ({"format", "key", "trials": [...]})."""


def search_key(contract: Contract) -> str | None:
    """The digest of what makes two runs' search trials comparable: the `[target]` table (defaults
    applied) and `agent.search.file` and `agent.search.space`; None when the run does not warm-start
    (an agent other than search, or an examples target)."""
    search = contract.agent.search
    if contract.agent.kind != "search" or search is None or contract.target.kind != "benchmark":
        return None
    return digest({
        "target": contract.target.model_dump(mode="json"),
        "file": search.file,
        "space": {name: p.model_dump(mode="json") for name, p in sorted(search.space.items())},
    })


def gather(root: Path, run_id: str, contract: Contract, baseline_tree: str, git: Git) -> dict[str, Any] | None:
    """The warm-start history of new run `run_id` of the project at `root`, as the blob's JSON:
    {"format", "key", "runs": [run ids taken, oldest first], "trials": [{"run_id", "attempt",
    "params", "value"}]}; None when the run does not warm-start (`search_key` is None). Runs whose
    ledger or contract cannot be read are left out (listed under "unreadable")."""
    key = search_key(contract)
    if key is None:
        return None
    assert contract.agent.search is not None
    code = _code_tree(git, baseline_tree, contract.agent.search.file)
    runs: list[str] = []
    unreadable: list[str] = []
    trials: list[dict[str, Any]] = []
    for other in list_runs(root):
        if other == run_id:
            continue
        try:
            taken = _trials_of(RunDir(root, other), key, code, contract.agent.search.file, git)
        except RatchetError:
            unreadable.append(other)
            continue
        if taken is not None:
            runs.append(other)
            trials += taken
    return {"format": WARM_START_FORMAT, "key": key, "runs": runs, "unreadable": unreadable, "trials": trials}


def _code_tree(git: Git, tree: str, params_file: str) -> str:
    """`tree` with the params file and the contract set aside: what the search does not change (a
    budget raised in ratchet.toml between two runs leaves the code measured the same)."""
    return git.overlay_tree(tree, {params_file: None, CONTRACT_FILE: None})


def _trials_of(run: RunDir, key: str, code: str, params_file: str, git: Git) -> list[dict[str, Any]] | None:
    """The measured trials of earlier run `run`, or None when it is not a campaign of the same search
    on the same code. Raises RatchetError for a ledger or contract that does not read."""
    if not run.events.exists() or not run.contract.exists():
        return None
    if search_key(parse_contract(run.contract.read_text(encoding="utf-8"))) != key:
        return None
    events, _torn = scan_log(run.events)
    started = events[0].payload if events else None
    if not isinstance(started, RunStarted) or given(started.mode) in ONE_SHOT_MODES:
        return None
    if _code_tree(git, started.baseline.tree, params_file) != code:
        return None
    out = []
    for past in past_attempts(fold(events), examples=False):
        if past.params is None:
            continue
        if past.candidate_mean is None and past.reason != "candidate_failed":
            continue  # decided without measuring the candidate: it says nothing of these params
        out.append({"run_id": run.run_id, "attempt": past.attempt, "params": dict(past.params),
                    "value": past.candidate_mean})
    return out


def summary(blob: str, history: Mapping[str, Any]) -> dict[str, Any]:
    """`run.started` data.warm_start: the blob's digest, the runs taken and how many trials."""
    return {"blob": blob, "key": history["key"], "runs": list(history["runs"]), "trials": len(history["trials"])}


def history_of(trials: Sequence[Mapping[str, Any]]) -> tuple[PastAttempt, ...]:
    """The warm-start trials (the blob's "trials") as PastAttempts without a verdict or a tree
    (`attempt` is the earlier run's number; the agent reads only params and value)."""
    return tuple(PastAttempt(int(t["attempt"]), None, dict(t["params"]), None, None,
                             None if t["value"] is None else float(t["value"])) for t in trials)
