"""What an agent may read of a tree: everything but the hidden paths.

Agents build candidates through a `TreeBuilder`; the kernel hands them this view, so a hidden path
(`scope.hidden`, `target.examples`) reads as absent. Writing one is caught later by the scope check
(`scope_violation`), so the view does not need to refuse writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ratchet.agents.base import TreeBuilder
from ratchet.core.contract import scope_covers
from ratchet.workspace.trees import TreeEntry


class ListingTrees(TreeBuilder, Protocol):
    """A TreeBuilder that also lists a tree's entries (implemented by `workspace.git.Git`)."""

    def ls_tree(self, tree: str) -> list[TreeEntry]: ...


class AgentTreeView:
    """A TreeBuilder over `trees` whose `read_blob` returns None, and whose `ls_tree` lists nothing,
    for any path under `hidden`."""

    def __init__(self, trees: ListingTrees, hidden: Sequence[str]):
        self.trees = trees
        self.hidden = tuple(hidden)

    def read_blob(self, tree: str, path: str) -> bytes | None:
        """The blob at `path` in `tree`, or None when absent or hidden."""
        if any(scope_covers(h, path) for h in self.hidden):
            return None
        return self.trees.read_blob(tree, path)

    def ls_tree(self, tree: str) -> list[TreeEntry]:
        """Every entry of `tree` (recursive, no directories) except those under a hidden path."""
        return [e for e in self.trees.ls_tree(tree) if not any(scope_covers(h, e.path) for h in self.hidden)]

    def overlay_tree(self, base_tree: str, files: Mapping[str, bytes | None]) -> str:
        """See TreeBuilder.overlay_tree."""
        return self.trees.overlay_tree(base_tree, files)

    def apply_patch(self, base_tree: str, patch: bytes) -> str:
        """See TreeBuilder.apply_patch."""
        return self.trees.apply_patch(base_tree, patch)
