"""Every path the contract names, checked before anything runs (`ratchet check`, `ratchet run`,
`ratchet compare`), so a typo stops the command instead of turning every attempt into a
`scope_violation` or every example into a `check_error`:

- each path exists as what its key needs (a file, a folder) where a run reads it
  (`core.inputs.contract_paths`): tracked in the tree of HEAD, the commit a run starts from, or in
  the working tree; a missing one names the key, the path, and the closest existing path;
- the search agent's params file lies where a candidate may change it (under `scope.allowed`,
  not protected nor hidden), since it is what every attempt changes;
- a custom check's script is out of a candidate's reach (outside `scope.allowed`) and readable.

Effects: reads the working tree (stat) and HEAD's tree (`git ls-tree`).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import ContractError
from ratchet.core.inputs import ContractPath, contract_paths
from ratchet.workspace.git import Git
from ratchet.workspace.scope import DiffEntry, check_scope, matching_entry

SIMILAR_CUTOFF = 0.6
"""difflib ratio from which an existing path is offered as "did you mean" for a missing one."""

SOURCE_TEXT = {"head": "not tracked in HEAD's tree (the commit a run starts from)",
               "working_tree": "not found in the project's working tree"}
"""A path missing where a run reads it, as an error says it."""


def check_contract_paths(loaded: LoadedContract, git: Git, agent: bool = True) -> None:
    """Raise ContractError for the first path of the contract that is missing, of the wrong kind or
    out of place (see the module docstring); the agent's paths only when `agent`. Codes:
    `contract.path_missing` (the key, the path, where it was looked for, "did you mean" when a close
    path exists), `contract.path_scope` (the key, the path and the scope rule it breaks)."""
    paths = [p for p in contract_paths(loaded.contract) if agent or not p.agent]
    if not paths:
        return
    tracked = _tracked(git)
    for cp in paths:
        problem = _missing(cp, loaded.root, tracked)
        if problem is not None:
            raise ContractError("contract.path_missing", f"{cp.key} = {cp.path!r}: {problem}",
                                hint=_hint(cp, loaded.root, tracked))
        scope = scope_problem(loaded.contract, cp)
        if scope is not None:
            message, hint = scope
            raise ContractError("contract.path_scope", f"{cp.key} = {cp.path!r}: {message}", hint=hint)


def _tracked(git: Git) -> dict[str, str]:
    """HEAD's paths: each file with "file", each folder holding one with "folder"."""
    kinds: dict[str, str] = {}
    for entry in git.ls_tree(git.tree_of(git.head_commit())):
        kinds[entry.path] = "file"
        parts = entry.path.split("/")
        for i in range(1, len(parts)):
            kinds.setdefault("/".join(parts[:i]), "folder")
    return kinds


def _missing(cp: ContractPath, root: Path, tracked: dict[str, str]) -> str | None:
    """Why `cp` is not what its key needs where a run reads it, or None."""
    path = cp.path.rstrip("/")
    if cp.source == "head":
        kind = tracked.get(path)
    else:
        full = root / path
        kind = "folder" if full.is_dir() else "file" if full.is_file() else None
    if kind is None:
        return SOURCE_TEXT[cp.source]
    if cp.kind != "file_or_folder" and kind != cp.kind:
        return f"is a {kind}, not a {cp.kind}"
    if kind == "file" and cp.source == "working_tree" and not os.access(root / path, os.R_OK):
        return "cannot be read (check its permissions)"
    return None


def _hint(cp: ContractPath, root: Path, tracked: dict[str, str]) -> str:
    """'did you mean X?' for the closest existing path, else how to make it exist."""
    path = cp.path.rstrip("/")
    if cp.source == "head" and (root / path).exists():
        return f"{cp.path} exists but is not committed: git add {cp.path} && git commit"
    names = set(tracked)
    if cp.source == "working_tree":
        parent = (root / path).parent
        if parent.is_dir():
            names |= {os.path.relpath(p, root) for p in parent.iterdir() if p.name != ".git"}
    close = difflib.get_close_matches(path, sorted(names), n=1, cutoff=SIMILAR_CUTOFF)
    if close and close[0] != path:
        return f"did you mean {close[0]!r}?"
    return f"create {cp.path}, or correct {cp.key} (paths are relative to the project root)"


def scope_problem(contract: Contract, cp: ContractPath) -> tuple[str, str] | None:
    """(message, hint) when `cp` sits where scope defeats it, else None: the search agent's params
    file a candidate may not change, or a custom check's script a candidate may change."""
    if cp.key == "agent.search.file":
        report = check_scope([DiffEntry("M", cp.path, "100644", "100644")], contract.scope.allowed,
                             contract.protected_paths, contract.hidden_paths)
        if not report.ok:
            rules = "; ".join(v.split(": ", 1)[1] for v in report.violations)
            return (f"every attempt would be a scope_violation: the search agent writes this file, and it is {rules}",
                    f"add {cp.path!r} to scope.allowed (and keep it out of scope.protected and scope.hidden)")
    if cp.key.startswith("target.checks[") and matching_entry(cp.path, contract.scope.allowed) is not None:
        return ("a check script under scope.allowed is a file a candidate may change: the checks that judge "
                "candidates must be out of their reach",
                f"move {cp.path!r} out of scope.allowed (and list it in scope.protected)")
    return None
