"""Where a run reads each of its inputs: the working tree as it is, or the commit HEAD.

A run measures trees, never the working tree: the baseline is HEAD's tree (the target command, the
benchmark's files, the solution), and candidates are trees derived from it. A few inputs are read
from the working tree as they are when the run starts (or when they are used):

- the contract, `ratchet.toml` (kept in the run directory as the run starts);
- `target.examples`, the examples file (its fingerprint is kept; a resume refuses a changed one);
- `agent.files.path`, the files agent's prepared candidates (each read when its attempt starts);
- the scripts of `custom` checks (run from the project root when a shard is judged).

So an uncommitted change matters (is not measured) only for paths read from HEAD. Every path the
contract names, with the tree it is read from, is `contract_paths` (what `ratchet check` and
`ratchet run` check before anything runs). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ratchet.core.contract import CONTRACT_FILE, Contract, CustomCheck, scope_covers

InputSource = Literal["head", "working_tree"]
"""Where a run reads a path: `head`, the tree of the commit the run starts from (the first
champion's tree: it must be tracked there); `working_tree`, the project directory as it is."""

PathKind = Literal["file", "folder", "file_or_folder"]
"""What a contract path must be: a regular file, a folder, or either (`agent.files.path`: a folder
of candidates or one `.patch` file)."""


@dataclass(frozen=True)
class ContractPath:
    """One path the contract names. key: its key path (`agent.search.file`, `target.checks[1].script`,
    0-based as contract errors name keys); path: as written; source: where a run reads it; kind:
    what it must be; agent: an agent's setting (`ratchet compare` runs no agent)."""

    key: str
    path: str
    source: InputSource
    kind: PathKind = "file"
    agent: bool = False


def contract_paths(contract: Contract) -> list[ContractPath]:
    """Every path key of `contract` with a value, in contract order: target.examples, target.solution,
    the scripts of custom checks, and of the agent kind in use: agent.search.file, agent.files.path,
    agent.command.brief or the agent.llm.prompts files."""
    t, agent = contract.target, contract.agent
    found: list[ContractPath] = []
    if t.examples:
        found.append(ContractPath("target.examples", t.examples, "working_tree"))
    if t.solution:
        found.append(ContractPath("target.solution", t.solution, "head"))
    for i, check in enumerate(t.checks or []):
        if isinstance(check, CustomCheck):
            found.append(ContractPath(f"target.checks[{i}].script", check.script, "working_tree"))
    if agent.kind == "search" and agent.search is not None:
        found.append(ContractPath("agent.search.file", agent.search.file, "head", agent=True))
    if agent.kind == "files" and agent.files is not None:
        found.append(ContractPath("agent.files.path", agent.files.path, "working_tree", "file_or_folder", True))
    if agent.kind == "command" and agent.command is not None and agent.command.brief is not None:
        found.append(ContractPath("agent.command.brief", agent.command.brief, "working_tree", agent=True))
    if agent.kind == "llm" and agent.llm is not None:
        for name, path in agent.llm.prompts.model_dump().items():
            if path is not None:
                found.append(ContractPath(f"agent.llm.prompts.{name}", path, "working_tree", agent=True))
    return found


def working_tree_inputs(contract: Contract) -> tuple[str, ...]:
    """The paths (files, or directories ending in `/`) a run reads from the working tree."""
    paths = [CONTRACT_FILE]
    if contract.target.examples:
        paths.append(contract.target.examples)
    paths += [c.script for c in contract.target.checks if isinstance(c, CustomCheck)]
    if contract.agent.files is not None:
        paths.append(contract.agent.files.path)
    return tuple(dict.fromkeys(paths))


def changes_not_measured(changed: Iterable[str], contract: Contract) -> list[str]:
    """The paths of `changed` (uncommitted changes, as `git status` names them) that a run reads
    from HEAD: their working-tree version is not what the run measures."""
    live = working_tree_inputs(contract)
    return [p for p in changed if not any(scope_covers(entry, p) for entry in live)]


def uncommitted_warning(changed: Iterable[str], contract: Contract, shown: int = 5) -> str | None:
    """The warning for uncommitted changes to inputs read from HEAD (None: there are none); it
    names at most `shown` paths and says which inputs are read from the working tree instead."""
    stale = changes_not_measured(changed, contract)
    if not stale:
        return None
    names = ", ".join(stale[:shown]) + (f" and {len(stale) - shown} more" if len(stale) > shown else "")
    return (f"uncommitted changes are not measured: the run measures the tree of HEAD, and these differ "
            f"from it: {names} (commit them to measure them; read as they are in the working tree: "
            f"{', '.join(working_tree_inputs(contract))})")
