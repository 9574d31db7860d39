"""The files agent: prepared candidates, one per attempt, in name order (docs/agents.md).

Each entry of `[agent.files].path` is either a subdirectory whose files are overlaid onto the
champion's tree, or a `.patch` file applied to it. A patch that does not apply is a rejected attempt
with git's reason, not a crash. Other files in the folder (a README) are ignored.
"""

from __future__ import annotations

from pathlib import Path

from ratchet.agents.base import Action, Agent, AgentContext, GiveUp, LaunchResult, Submit, TreeBuilder
from ratchet.core.errors import DataError, GitError

REPORT_FILE = "REPORT.md"
"""A file in a candidate subdirectory that holds its written report (never overlaid)."""


def list_candidates(folder: Path) -> list[Path]:
    """Subdirectories and `.patch` files of `folder`, sorted by name. Raises DataError
    `files.missing` when the folder does not exist."""
    if not folder.is_dir():
        raise DataError("files.missing", f"agent.files.path {folder} is not a directory")
    return sorted(
        (p for p in folder.iterdir() if (p.is_dir() and not p.is_symlink()) or p.suffix == ".patch"),
        key=lambda p: p.name,
    )


class FilesAgent(Agent):
    """Submits the prepared candidate number `ctx.ordinal` (1-based: the attempt's number among the
    proposed ones, re-base attempts not counted); gives up when none are left. Its candidates were
    written before the run and never depend on earlier results; stateless, so the workers of
    `agent.workers` share one instance, each attempt taking the next candidate."""

    reads_history = False
    proposes_at_once = True

    def __init__(self, folder: Path, trees: TreeBuilder):
        self.folder = folder
        self.trees = trees

    def start(self, ctx: AgentContext) -> Action:
        """Build the attempt's candidate tree from its prepared entry."""
        entries = list_candidates(self.folder)
        if ctx.ordinal > len(entries):
            return GiveUp(f"all {len(entries)} prepared candidates in {self.folder} were submitted")
        entry = entries[ctx.ordinal - 1]
        if entry.is_dir():
            return self._overlay(ctx, entry)
        return self._patch(ctx, entry)

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        """The files agent never launches experiments."""
        return GiveUp("the files agent does not launch experiments")

    def _overlay(self, ctx: AgentContext, entry: Path) -> Submit:
        files: dict[str, bytes | None] = {}
        report = f"Prepared candidate {entry.name}."
        for path in sorted(entry.rglob("*")):
            rel = path.relative_to(entry).as_posix()
            if path.is_symlink():
                why = f"{entry.name}/{rel} is a symlink; candidates may not add symlinks"
                return Submit(None, report, entry.name, invalid=why)
            if not path.is_file():
                continue
            if rel == REPORT_FILE:
                report = path.read_text(encoding="utf-8", errors="replace")
                continue
            files[rel] = path.read_bytes()
        if not files:
            return Submit(None, report, entry.name, invalid=f"{entry.name} holds no files")
        tree = self.trees.overlay_tree(ctx.champion_tree, files)
        return Submit(tree=tree, report=report, summary=entry.name)

    def _patch(self, ctx: AgentContext, entry: Path) -> Submit:
        report = f"Prepared patch {entry.name}."
        try:
            tree = self.trees.apply_patch(ctx.champion_tree, entry.read_bytes())
        except GitError as exc:
            return Submit(None, report, entry.name, invalid=f"{entry.name} does not apply: {exc.message}")
        return Submit(tree=tree, report=report, summary=entry.name)
