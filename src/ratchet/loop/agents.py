"""Building the run's agent from the contract (`agent.kind`), before the run's kernel is open (so a
bad agent setting stops `ratchet run` before anything is recorded), with a link through which the
agent records to that kernel once it is.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.agents.base import Agent
from ratchet.core.canonical import digest
from ratchet.core.contract import Contract
from ratchet.loop.kernel import Kernel
from ratchet.targets.examples import ExampleData
from ratchet.workspace.git import Git

AGENTS_TMP = "ratchet-agents"
"""Under the system's temporary directory: command agents' workspaces, one folder per project."""

EVENT_KEYS: Mapping[str, tuple[str, ...]] = {"agent.leg": ("attempt", "leg"),
                                             "agent.harvested": ("attempt", "leg", "use")}
"""What makes an agent's record unique (a resume replaying a leg records nothing twice)."""


@dataclass
class AgentLink:
    """The agent's way to the run's kernel (set by `bind` once the kernel is open)."""

    kernel: Kernel | None = None

    def bind(self, kernel: Kernel) -> None:
        """Attach the open kernel."""
        self.kernel = kernel

    def _k(self) -> Kernel:
        if self.kernel is None:
            raise RuntimeError("the agent recorded before the run's kernel was open")
        return self.kernel

    def put_bytes(self, data: bytes) -> str:
        """Store bytes as a blob of the run; returns its digest."""
        return self._k().blobs.put_bytes(data)

    def record(self, kind: str, data: Mapping[str, Any]) -> None:
        """Record an agent event once (see EVENT_KEYS)."""
        self._k().once(kind, dict(data), *EVENT_KEYS.get(kind, ("attempt",)))

    def budget_view(self) -> Mapping[str, Any]:
        """What an agent may read of the budget: the limits and what was used."""
        state = self._k().state()
        used = state.budget_used
        return {"limits": dict(state.limits), "used": {"attempts": used.attempts, "evaluations": used.evaluations,
                                                      "cpu_hours": used.cpu_hours, "wall_s": used.wall_s}}

    def wall_left(self) -> float | None:
        """Seconds `budget.max_wall` still allows (None: unlimited)."""
        k = self._k()
        limit = k.contract.budget.max_wall_s
        return max(0.0, limit - k.state().budget_used.wall_s) if limit else None


def agent_work_dir(root: Path) -> Path:
    """Where a project's command agents work: outside the project, the same across a resume."""
    return Path(tempfile.gettempdir()) / AGENTS_TMP / digest(str(root.resolve()))[7:23]


def make_agent(contract: Contract, root: Path, git: Git, link: AgentLink, data: ExampleData | None = None) -> Agent:
    """The agent named by `agent.kind`, seeing trees through a view that hides `scope.hidden` and
    `target.examples`. Raises ContractError / DataError / SandboxError (exit 2) for a bad setting."""
    from ratchet.agents.view import AgentTreeView

    view = AgentTreeView(git, contract.hidden_paths)
    kind = contract.agent.kind
    if kind == "search":
        from ratchet.agents.search import SearchAgent

        assert contract.agent.search is not None
        return SearchAgent(contract.agent.search, contract.target.direction, view)
    if kind == "command":
        from ratchet.agents.command.factory import build_command_agent

        dev = [{"input": ex.input, "expected_output": ex.expected_output} for ex in data.split.dev] if data else None
        return build_command_agent(contract, root, git, agent_work_dir(root), link.put_bytes, link.record,
                                   dev_examples=dev, budget_view=link.budget_view, wall_left=link.wall_left)
    from ratchet.agents.files import FilesAgent, list_candidates

    assert contract.agent.files is not None
    folder = root / contract.agent.files.path
    list_candidates(folder)  # fail now (exit 2) when the folder is missing
    return FilesAgent(folder, view)
