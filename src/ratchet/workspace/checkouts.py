"""Clean checkouts for a batch of jobs: each tree is read from git once, then copied per job.

`Git.materialize_tree` costs two git processes and one object read per file; a batch of a trial's
look checks out the same two trees (champion and candidate) once per unit. `CheckoutPool` writes
each distinct tree once into a template directory and gives every job a plain file copy of it: the
same files, modes and symlinks as `materialize_tree` would write, private to that job and writable.
Templates live in one fresh directory under the pool's root and are removed by `close()`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ratchet.core.errors import GitError
from ratchet.workspace.git import Git

TEMPLATES_PREFIX = "+trees-"
"""Prefix of a pool's template directory under its root; `+` is never in a job id, so the name
cannot collide with a job's checkout next to it."""


class CheckoutPool:
    """Checkouts of git trees for one batch (see the module docstring). Use as a context manager,
    or call `close()`; not shared between threads.

    git: the repository the trees are in; root: an existing or creatable directory that holds the
    templates (a job's work directory); exclude: paths never written (`materialize_tree`'s rule).
    """

    def __init__(self, git: Git, root: Path, exclude: Sequence[str] = ()):
        self.git = git
        self.root = Path(root)
        self.exclude = tuple(exclude)
        self._dir: Path | None = None
        self._templates: dict[str, Path] = {}

    def checkout(self, tree: str, dest: Path) -> None:
        """Write a clean checkout of `tree` into `dest` (which must not exist or be empty),
        identical to `Git.materialize_tree(tree, dest, exclude)`: the first checkout of a tree reads
        it from git into a template, every checkout copies the template (files with their mode,
        symlinks as symlinks; a fresh inode per file, so a job's writes reach no other checkout).
        Raises GitError `git.dest_not_empty`, and what `materialize_tree` raises."""
        dest = Path(dest)
        if dest.is_symlink() or (dest.exists() and any(dest.iterdir())):
            raise GitError("git.dest_not_empty", f"{dest} exists and is not empty", hint="use a fresh directory")
        if dest.exists():
            dest.rmdir()
        # shutil.copy: content and mode, fresh timestamps (as a file written by materialize_tree has)
        shutil.copytree(self._template(tree), dest, symlinks=True, copy_function=shutil.copy)

    def _template(self, tree: str) -> Path:
        template = self._templates.get(tree)
        if template is None:
            if self._dir is None:
                self.root.mkdir(parents=True, exist_ok=True)
                self._dir = Path(tempfile.mkdtemp(prefix=TEMPLATES_PREFIX, dir=self.root))
            template = self._dir / str(len(self._templates))
            self.git.materialize_tree(tree, template, exclude=self.exclude)
            self._templates[tree] = template
        return template

    def close(self) -> None:
        """Remove every template (checkouts already made stay). Idempotent."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        self._templates.clear()

    def __enter__(self) -> CheckoutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
