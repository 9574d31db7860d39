"""Where a run reads each of its inputs: the working tree as it is, or the commit HEAD.

A run measures trees, never the working tree: the baseline is HEAD's tree (the target command, the
benchmark's files, the solution), and candidates are trees derived from it. A few inputs are read
from the working tree as they are when the run starts (or when they are used):

- the contract, `ratchet.toml` (kept in the run directory as the run starts);
- `target.examples`, the examples file (its fingerprint is kept; a resume refuses a changed one);
- `agent.files.path`, the files agent's prepared candidates (each read when its attempt starts);
- the scripts of `custom` checks (run from the project root when a shard is judged).

So an uncommitted change matters (is not measured) only for paths read from HEAD. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from ratchet.core.contract import CONTRACT_FILE, Contract, CustomCheck, scope_covers


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
