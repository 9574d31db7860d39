"""What this build can run. The schema knows more than the kernel runs yet; `ratchet run` refuses a
setting listed here with exit 2 instead of silently ignoring it (DESIGN.md §4).
"""

from __future__ import annotations

from ratchet.contract import Contract
from ratchet.errors import UnsupportedError

SUPPORTED_AGENTS = frozenset({"search", "files"})
SUPPORTED_TARGETS = frozenset({"benchmark", "examples"})
SUPPORTED_BACKENDS = frozenset({"local"})


def unsupported_settings(contract: Contract, agent: bool = True) -> list[UnsupportedError]:
    """Every setting in `contract` this build validates but cannot run, as errors (empty: runnable).
    `agent`: include the agent kind (not needed by `ratchet compare`)."""
    out: list[UnsupportedError] = []
    if agent and contract.agent.kind not in SUPPORTED_AGENTS:
        out.append(
            UnsupportedError(
                "unsupported.agent_kind",
                f"agent.kind = {contract.agent.kind!r} is not supported yet by this build",
                hint=f"use one of: {', '.join(sorted(SUPPORTED_AGENTS))}",
            )
        )
    if contract.target.kind not in SUPPORTED_TARGETS:
        out.append(
            UnsupportedError(
                "unsupported.target_kind",
                f"target.kind = {contract.target.kind!r} is not supported yet by this build",
                hint=f"use one of: {', '.join(sorted(SUPPORTED_TARGETS))}",
            )
        )
    if contract.compute.backend not in SUPPORTED_BACKENDS:
        out.append(
            UnsupportedError(
                "unsupported.backend",
                f"compute.backend = {contract.compute.backend!r} is not supported yet by this build",
                hint="use compute.backend = \"local\"",
            )
        )
    if contract.compute.gpus_per_job > 0:
        out.append(
            UnsupportedError(
                "unsupported.gpus",
                f"compute.gpus_per_job = {contract.compute.gpus_per_job} is not supported yet by the local executor",
                hint="set compute.gpus_per_job = 0",
            )
        )
    return out


def refuse_unsupported(contract: Contract, agent: bool = True) -> None:
    """Raise the first unsupported setting (exit 2), if any (`agent`: see unsupported_settings)."""
    problems = unsupported_settings(contract, agent)
    if problems:
        raise problems[0]
