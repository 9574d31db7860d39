"""What this build can run. The schema knows more than the kernel runs yet; `ratchet run` refuses a
setting listed here with exit 2 instead of silently ignoring it.
"""

from __future__ import annotations

from ratchet.core.contract import Contract
from ratchet.core.errors import UnsupportedError

SUPPORTED_AGENTS = frozenset({"search", "files", "command", "llm"})
SUPPORTED_TARGETS = frozenset({"benchmark", "examples"})
SUPPORTED_BACKENDS = frozenset({"local", "slurm"})


def _refusal(what: str, setting: str, hint: str) -> UnsupportedError:
    return UnsupportedError(f"unsupported.{what}", f"{setting} is not supported yet by this build", hint=hint)


def unsupported_settings(contract: Contract, agent: bool = True) -> list[UnsupportedError]:
    """Every setting in `contract` this build validates but cannot run, as errors (empty: runnable).
    `agent`: include the agent kind (not needed by `ratchet compare`)."""
    checks = [
        (agent and contract.agent.kind not in SUPPORTED_AGENTS, "agent_kind",
         f"agent.kind = {contract.agent.kind!r}", f"use one of: {', '.join(sorted(SUPPORTED_AGENTS))}"),
        (contract.target.kind not in SUPPORTED_TARGETS, "target_kind",
         f"target.kind = {contract.target.kind!r}", f"use one of: {', '.join(sorted(SUPPORTED_TARGETS))}"),
        (contract.compute.backend not in SUPPORTED_BACKENDS, "backend",
         f"compute.backend = {contract.compute.backend!r}", 'use compute.backend = "local"'),
    ]
    return [_refusal(what, setting, hint) for refused, what, setting, hint in checks if refused]


def refuse_unsupported(contract: Contract, agent: bool = True) -> None:
    """Raise the first unsupported setting (exit 2), if any (`agent`: see unsupported_settings)."""
    problems = unsupported_settings(contract, agent)
    if problems:
        raise problems[0]
