"""Building a CommandAgent from a contract: the one call the loop makes for `agent.kind = "command"`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.agents.command.agent import CommandAgent, CommandSetup, Record, RecordBlob, RunJob, Spent
from ratchet.agents.command.messages import TaskView
from ratchet.agents.command.workspace import ScopeRules
from ratchet.core.budget import limits_of
from ratchet.core.contract import Contract
from ratchet.core.errors import ContractError

MAX_BRIEF_BYTES = 64 * 1024
"""Bytes of `agent.command.brief` read into the prompt."""


def scope_rules(contract: Contract) -> ScopeRules:
    """The scope a command agent's workspace obeys (always-protected and always-hidden paths included)."""
    return ScopeRules(tuple(contract.scope.allowed), contract.protected_paths, contract.hidden_paths)


def target_summary(contract: Contract) -> str:
    """One paragraph on what is measured, for the prompt."""
    t = contract.target
    if t.kind == "benchmark":
        better = "larger" if t.direction == "max" else "smaller"
        return (f"`{t.command}` prints a JSON line whose `{t.metric}` is the metric ({better} is better); "
                f"the seed of each unit is in ${t.seed_env}. Each run may take {t.timeout_s:g} s at most.")
    return (f"`python3 {t.solution}` reads one example's input on stdin and prints its output; the checks "
            "compare it with the expected output. The examples the gate measures on are never shown.")


def read_brief(root: Path, contract: Contract) -> str:
    """The text of `agent.command.brief` (empty when not set). Raises ContractError
    `contract.agent_brief` when the file cannot be read or is too large."""
    cfg = contract.agent.command
    if cfg is None or cfg.brief is None:
        return ""
    path = root / cfg.brief
    try:
        if path.is_symlink() or not path.is_file():
            raise OSError("not a regular file")
        data = path.read_bytes()
        if len(data) > MAX_BRIEF_BYTES:
            raise OSError(f"larger than {MAX_BRIEF_BYTES} bytes")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError("contract.agent_brief", f"agent.command.brief {cfg.brief}: {exc}",
                            hint="name a UTF-8 text file of the project") from exc


def build_command_agent(contract: Contract, root: Path, project: Any, work_dir: Path | Callable[[], Path],
                        record_blob: RecordBlob, record: Record, run_job: RunJob, *,
                        dev_examples: Sequence[Any] | None = None,
                        budget_view: Callable[[], Mapping[str, Any]] | None = None,
                        wall_left: Callable[[], float | None] | None = None, spent: Spent | None = None,
                        environ: Mapping[str, str] | None = None, bwrap: str | None = None,
                        launches_view: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
                        siblings_view: Callable[[int], Sequence[Mapping[str, Any]]] | None = None) -> CommandAgent:
    """The CommandAgent for `contract` (agent.kind = "command") of the project at `root`.
    project: its Git. work_dir: kernel-owned, outside the project, the run's own (a directory, or a
    function returning it once the run is open: the loop's `AgentLink.work_dir`). See CommandAgent
    for the callbacks. Raises ContractError, SandboxError (exit 2)."""
    cfg = contract.agent.command
    if cfg is None:
        raise ContractError("contract.invalid", "agent.kind = 'command' requires an [agent.command] section")
    rules = scope_rules(contract)
    task = TaskView(read_brief(root, contract), target_summary(contract), rules.allowed, rules.protected)
    where = work_dir if callable(work_dir) else _fixed(Path(work_dir))
    setup = CommandSetup(cfg, project, rules, where, task, dev_examples, limits_of(contract),
                         tuple(contract.sandbox.read_only))
    return CommandAgent(setup, record_blob, record, run_job, budget_view=budget_view, wall_left=wall_left,
                        spent=spent, environ=environ, bwrap=bwrap, launches_view=launches_view,
                        siblings_view=siblings_view)


def _fixed(path: Path) -> Callable[[], Path]:
    """A work-directory function that always returns `path`."""
    return lambda: path
