"""The scope check: which changed paths a candidate may contain. Pure: takes diff entries, returns a
report; touches nothing.

Rules, in order, each violation one line naming the path and the rule:
- a symlink (mode 120000) or a submodule (mode 160000) may not be added or changed anywhere;
- a changed path must lie under an entry of `scope.allowed`;
- it must not lie under an entry of `scope.protected` (the caller adds `ratchet.toml` and
  `target.examples`, which are always protected) nor of `scope.hidden`.

An entry matches a path equal to it or a path under it: "model/" and "model" both match "model/x";
"params.toml" matches only itself (and anything under a directory of that name).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ratchet.workspace.trees import GITLINK_MODE, SYMLINK_MODE


@dataclass(frozen=True)
class DiffEntry:
    """One changed path between two trees (as `Git.diff_entries` reads `git diff-tree -r --no-renames`).

    status: A (added), D (deleted), M (modified), T (type changed). old_mode/new_mode: git modes as
    6-digit strings ("100644", "100755", "120000" symlink, "160000" submodule, "000000" absent).
    """

    status: str
    path: str
    old_mode: str
    new_mode: str


@dataclass(frozen=True)
class ScopeReport:
    """ok: no violation. violations: one line per broken rule, e.g.
    "bench.py: protected by scope.protected entry 'bench.py'"."""

    ok: bool
    violations: tuple[str, ...]


def _normalize(entry: str) -> str:
    entry = entry.strip()
    while entry.startswith("./"):
        entry = entry[2:]
    return entry.rstrip("/")


def matching_entry(path: str, entries: Iterable[str]) -> str | None:
    """The first entry (as written) that `path` equals or lies under, or None. An entry that is
    empty or `.` matches every path."""
    for raw in entries:
        entry = _normalize(raw)
        if entry in ("", ".") or path == entry or path.startswith(entry + "/"):
            return raw
    return None


def check_scope(
    entries: Sequence[DiffEntry],
    allowed: Sequence[str],
    protected: Sequence[str] = (),
    hidden: Sequence[str] = (),
) -> ScopeReport:
    """Check every changed path of a candidate (diff entries champion -> candidate) against the
    scope lists. Returns a ScopeReport; never raises for a bad candidate."""
    violations: list[str] = []
    for entry in entries:
        violations += _path_violations(entry, allowed, protected, hidden)
    return ScopeReport(ok=not violations, violations=tuple(violations))


def _path_violations(
    entry: DiffEntry, allowed: Sequence[str], protected: Sequence[str], hidden: Sequence[str]
) -> list[str]:
    path = entry.path
    found = []
    if entry.new_mode == SYMLINK_MODE:
        found.append(
            f"{path}: {'adds' if entry.status == 'A' else 'changes'} a symlink; candidates may not contain "
            "new or changed symlinks"
        )
    if entry.new_mode == GITLINK_MODE:
        found.append(
            f"{path}: {'adds' if entry.status == 'A' else 'changes'} a submodule; candidates may not "
            "contain new or changed submodules"
        )
    if matching_entry(path, allowed) is None:
        listed = ", ".join(allowed) if allowed else "nothing"
        found.append(f"{path}: outside scope.allowed ({listed})")
    rule = matching_entry(path, protected)
    if rule is not None:
        found.append(f"{path}: protected by scope.protected entry {rule!r}")
    rule = matching_entry(path, hidden)
    if rule is not None:
        found.append(f"{path}: under scope.hidden entry {rule!r}")
    return found
