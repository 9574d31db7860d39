"""An attempt's workspace: a standalone git repository seeded from the champion's tree, and the
harvest that turns what the agent left in it into a candidate tree.

The workspace lives outside the project (never a worktree of the user's repository, whose `.git`
it would expose). It holds the champion's files minus the paths an agent never sees (`scope.hidden`,
`target.examples`, `.ratchet/`), a fresh `.git` whose one commit is that seed (so the agent can
`git diff`), and the channel folder `.ratchet-sys/`. For an examples target the dev split is
written into the channel as data (`data/dev.jsonl`); val and test never are.

The kernel never runs git in the workspace after seeding it (its `.git` belongs to the agent):
`harvest` seals the directory into the *project's* object store and compares it with the seed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ratchet.agents.command.limits import CHANNEL_DIR, REPORT_FILE
from ratchet.core.errors import RatchetError
from ratchet.workspace.git import Git
from ratchet.workspace.scope import check_scope, matching_entry
from ratchet.workspace.trees import GITLINK_MODE, SYMLINK_MODE, TreeEntry, excluded

RUN_DIR = ".ratchet"
"""The project's run directory: never in a workspace."""

DEV_DATA_FILE = "data/dev.jsonl"
"""Where (under the channel) an examples target's dev split is written, one example per line."""

HarvestUse = Literal["submit", "launch"]
"""What a harvest is for. submit: the candidate, with changes to protected or hidden paths taken
too (so the scope check rejects it: `scope_violation`). launch: the tree an experiment runs on, with
only clean changes under `scope.allowed`."""


class WorkspaceError(RatchetError):
    """A workspace that cannot be made or read; codes start with `workspace.`."""


@dataclass(frozen=True)
class ScopeRules:
    """The scope lists a workspace obeys: `allowed`, `protected` (with ratchet.toml and
    target.examples), `hidden` (with target.examples): see `Contract.protected_paths` /
    `hidden_paths`."""

    allowed: tuple[str, ...]
    protected: tuple[str, ...]
    hidden: tuple[str, ...]

    @property
    def never_seeded(self) -> tuple[str, ...]:
        """Paths never written into a workspace: hidden ones, the run directory, the channel."""
        return (*self.hidden, RUN_DIR, CHANNEL_DIR)


@dataclass(frozen=True)
class Harvest:
    """What an agent's workspace yields. tree: the candidate tree (in the project's object
    store). taken: paths changed from the seed and carried into `tree`. ignored: other new, changed
    or deleted paths (caches, logs), listed, never taken. violations: one line per broken scope
    rule of `tree` against the champion (empty when clean)."""

    tree: str
    taken: tuple[str, ...]
    ignored: tuple[str, ...]
    violations: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The record of this harvest (JSON-ready)."""
        return {"tree": self.tree, "taken": list(self.taken), "ignored": list(self.ignored),
                "violations": list(self.violations)}


def seed_entries(project: Git, champion_tree: str, rules: ScopeRules) -> list[TreeEntry]:
    """The champion's entries a workspace is seeded with (no submodules, nothing never seeded).
    Raises WorkspaceError `workspace.tracked_channel` when the champion tracks the channel folder."""
    entries = project.ls_tree(champion_tree)
    if any(excluded(e.path, [CHANNEL_DIR]) for e in entries):
        raise WorkspaceError(
            "workspace.tracked_channel",
            f"the champion's tree tracks {CHANNEL_DIR}/, the agent's channel folder",
            hint=f"remove {CHANNEL_DIR} from the repository (git rm -r --cached {CHANNEL_DIR})",
        )
    return [e for e in entries if e.mode != GITLINK_MODE and not excluded(e.path, rules.never_seeded)]


def create_workspace(
    project: Git,
    champion_tree: str,
    dest: Path,
    rules: ScopeRules,
    dev_examples: Sequence[Any] | None = None,
) -> Path:
    """Seed a new workspace at `dest` (must not exist; must lie outside the project) from
    `champion_tree`; returns `dest` resolved. dev_examples: for an examples target, the dev split
    (JSON-ready values) written to `<channel>/data/dev.jsonl`.

    Raises WorkspaceError `workspace.inside_project`, `workspace.exists`,
    `workspace.tracked_channel`; GitError from git."""
    dest = Path(dest).absolute()
    if dest == project.root or project.root in dest.parents:
        raise WorkspaceError(
            "workspace.inside_project",
            f"the workspace {dest} lies inside the project {project.root}",
            hint="put agent workspaces outside the repository (a temporary directory)",
        )
    if dest.exists() or dest.is_symlink():
        raise WorkspaceError("workspace.exists", f"the workspace {dest} already exists",
                             hint="remove it, or use a fresh path per attempt")
    seed_entries(project, champion_tree, rules)  # refuses a tracked channel before writing anything
    project.materialize_tree(champion_tree, dest, exclude=rules.never_seeded)
    dest = dest.resolve()
    repo = Git.init_repo(dest)
    seed = repo.tree_from_dir(dest)
    repo.reset_to(repo.commit_tree(seed, [], f"ratchet: the champion's tree {champion_tree[:12]}"))
    exclude_file = repo.git_dir / "info" / "exclude"
    exclude_file.parent.mkdir(parents=True, exist_ok=True)
    exclude_file.write_text(f"/{CHANNEL_DIR}/\n")
    channel = dest / CHANNEL_DIR
    channel.mkdir()
    if dev_examples is not None:
        data = channel / DEV_DATA_FILE
        data.parent.mkdir(parents=True)
        data.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in dev_examples))
    return dest


def harvest(project: Git, champion_tree: str, workspace: Path, rules: ScopeRules,
            use: HarvestUse = "submit") -> Harvest:
    """Build the candidate tree from `workspace` (see HarvestUse): the champion's tree with each
    path the agent changed from the seed taken when it lies under `scope.allowed`; other changes
    (and REPORT_FILE at the top, the session's report) listed in `ignored`. The channel folder and
    every `.git` are never read. Objects are written to the project's repository; the workspace's
    own `.git` is never used."""
    seed = project.tree_from_entries(seed_entries(project, champion_tree, rules))
    sealed = project.tree_from_dir(workspace)
    now = {e.path: e for e in project.ls_tree(sealed)}
    entries = {e.path: e for e in project.ls_tree(champion_tree)}
    taken, ignored = [], []
    for change in project.diff_entries(seed, sealed):
        if not _take(change.path, change.new_mode, rules, use):
            ignored.append(change.path)
            continue
        taken.append(change.path)
        if change.path in now:
            entries[change.path] = now[change.path]
        else:
            entries.pop(change.path, None)
    tree = project.tree_from_entries(entries.values())
    report = check_scope(project.diff_entries(champion_tree, tree), rules.allowed, rules.protected, rules.hidden)
    return Harvest(tree, tuple(taken), tuple(ignored), report.violations)


def _take(path: str, new_mode: str, rules: ScopeRules, use: HarvestUse) -> bool:
    """Whether a changed path goes into the harvested tree (never the session's REPORT_FILE)."""
    if path == REPORT_FILE:
        return False
    guarded = matching_entry(path, rules.protected) is not None or matching_entry(path, rules.hidden) is not None
    if use == "submit" and guarded:
        return True  # taken so that the scope check names it: a scope_violation, never a silent drop
    if guarded or (use == "launch" and new_mode in (SYMLINK_MODE, GITLINK_MODE)):
        return False
    return matching_entry(path, rules.allowed) is not None
