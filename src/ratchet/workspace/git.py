"""Safe git on one repository: revisions, clean checkouts of trees, sealing directories into trees,
overlays, patches, diffs, commits and branches.

Every git command goes through `gitrun.git_command` (hooks, fsmonitor, credential helpers, global
and system config neutralised). Filters and textconv never run because trees are read and written
with raw plumbing (`cat-file --batch`, `hash-object --no-filters`, `--no-textconv`). Ratchet never
touches the user's HEAD, index or working tree: trees are built in temporary index files and
branches are moved with `update-ref` and an expected old value.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ratchet.core.errors import GitError
from ratchet.workspace.gitrun import git_command, run_git, stderr_text
from ratchet.workspace.locks import STALE_LOCK_S, clean_stale_locks
from ratchet.workspace.scope import DiffEntry
from ratchet.workspace.trees import (
    GITLINK_MODE,
    SYMLINK_MODE,
    CatFile,
    TreeEntry,
    check_path,
    excluded,
    parse_ls_tree,
    scan_dir,
    write_entries,
)

FALLBACK_NAME = "Ratchet"
FALLBACK_EMAIL = "ratchet@localhost"


class Git:
    """Neutralised git on one repository whose work tree top is `root`.

    Raises GitError `git.not_a_repo` when `root` is not the top of a git work tree. Stale lock files
    (see STALE_LOCK_S) are removed when the object is created and before each branch update.
    """

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        proc = run_git(self.root, ["rev-parse", "--show-toplevel", "--git-common-dir"], check=False)
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != self.root:
            raise GitError(
                "git.not_a_repo",
                f"{self.root} is not the top of a git repository",
                hint=f"run `git init` in {self.root} and commit the project",
            )
        common = Path(lines[1])
        self.git_dir = (common if common.is_absolute() else self.root / common).resolve()
        self.clean_stale_locks()

    @classmethod
    def init_repo(cls, root: Path, branch: str = "main") -> Git:
        """Create a new, empty, standalone repository at `root` (an existing directory that is not
        inside another repository's work tree) and open it. Raises GitError `git.init_failed`."""
        run_git(Path(root), ["init", "-q", "-b", branch], code="git.init_failed")
        return cls(root)

    def reset_to(self, commit: str) -> None:
        """Point HEAD (its branch) at `commit` and the index at its tree, as `git reset --mixed`
        does; the working tree is not touched."""
        self._run(["update-ref", "HEAD", commit], code="git.update_failed")
        self._run(["read-tree", commit], code="git.update_failed")

    @staticmethod
    def is_repo(path: Path) -> bool:
        """True when `path` is inside a git work tree (any depth)."""
        proc = run_git(Path(path), ["rev-parse", "--is-inside-work-tree"], check=False)
        return proc.returncode == 0 and proc.stdout.strip() == b"true"

    def _run(self, args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        return run_git(self.root, args, **kwargs)

    def _out(self, args: Sequence[str], **kwargs: Any) -> str:
        return self._run(args, **kwargs).stdout.decode("utf-8", "surrogateescape").strip()

    def changed_paths(self) -> list[str]:
        """Tracked files whose working-tree content differs from HEAD, and untracked files git does
        not ignore (`git status --porcelain`): what a run from HEAD will not measure."""
        # Not stripped: each entry starts with a two-letter status whose first letter may be a space.
        out = self._run(["status", "--porcelain", "--untracked-files=normal", "-z"]).stdout
        entries = out.decode("utf-8", "surrogateescape").split("\0")
        paths, i = [], 0
        while i < len(entries):
            entry = entries[i]
            if len(entry) > 3:
                paths.append(entry[3:])
            i += 2 if entry[:1] in ("R", "C") else 1  # a rename or copy is followed by its source path
        return paths

    # -- revisions -------------------------------------------------------------------------------

    def rev_parse_commit(self, rev: str) -> str:
        """The full commit hash `rev` names. Raises GitError `git.bad_revision` naming `rev`."""
        return self._peel(rev, "commit")

    def tree_of(self, rev: str) -> str:
        """The tree hash of a commit or tree `rev`. Raises GitError `git.bad_revision`."""
        return self._peel(rev, "tree")

    def _peel(self, rev: str, kind: str) -> str:
        if not rev or rev.startswith("-") or "\n" in rev:
            raise GitError("git.bad_revision", f"{rev!r} is not a valid revision")
        proc = self._run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{{kind}}}"], check=False
        )
        if proc.returncode != 0:
            raise GitError(
                "git.bad_revision",
                f"{rev!r} does not name a {kind} in {self.root}",
                hint="check the revision with `git log --oneline`",
            )
        return proc.stdout.decode().strip()

    def head_commit(self) -> str:
        """The commit HEAD points to. Raises GitError `git.no_commits` when the repo has none."""
        proc = self._run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False)
        if proc.returncode != 0:
            raise GitError(
                "git.no_commits",
                f"the repository {self.root} has no commit yet",
                hint="commit the project first: git add -A && git commit -m baseline",
            )
        return proc.stdout.decode().strip()

    # -- reading trees ---------------------------------------------------------------------------

    def ls_tree(self, tree: str) -> list[TreeEntry]:
        """Every entry of `tree`, recursively (blobs, symlinks, gitlinks; no directories)."""
        out = self._run(["ls-tree", "-r", "-z", "--full-tree", tree], code="git.bad_revision").stdout
        return parse_ls_tree(out)

    def read_blob(self, tree: str, path: str) -> bytes | None:
        """The raw bytes of file `path` in `tree` (a symlink gives its target text); None when the
        path is absent or is a directory or submodule. Raises GitError `git.bad_path` for a path with
        a newline, `.` or `..` component."""
        if "\n" in path or any(p in ("", ".", "..") for p in path.split("/")):
            raise GitError("git.bad_path", f"{path!r} is not a repository path")
        with self.cat_file() as cat:
            header = cat.request(f"{tree}:{path}")
            if header is None:
                return None
            oid, kind, size = header
            data = cat.read_all(size)
        return data if kind == "blob" else None

    @contextmanager
    def cat_file(self) -> Iterator[CatFile]:
        """One `git cat-file --batch` process for many object reads; closed on exit."""
        argv, env = git_command(self.root, ["cat-file", "--batch"])
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        try:
            yield CatFile(proc)
        finally:
            if proc.stdin:
                proc.stdin.close()
            if proc.stdout:
                proc.stdout.close()
            proc.wait()

    def materialize_tree(self, tree: str, dest: Path, exclude: Iterable[str] = ()) -> None:
        """Write a clean checkout of `tree` into `dest` (which must not exist or be empty).

        Blobs are written byte for byte (no smudge filters, no eol conversion, .gitattributes
        ignored: export-ignore has no effect); mode 100755 gets 0o755, others 0o644; symlinks are
        created as symlinks after every file, so no write ever goes through one; submodules are
        skipped. `exclude`: paths (files or directory prefixes) never written.
        Raises GitError `git.dest_not_empty`, `git.unsafe_path` (a crafted tree entry like `..`).
        """
        dest = Path(dest)
        if dest.is_symlink() or (dest.exists() and any(dest.iterdir())):
            raise GitError(
                "git.dest_not_empty", f"{dest} exists and is not empty", hint="use a fresh directory"
            )
        dest.mkdir(parents=True, exist_ok=True)
        rules = list(exclude)
        entries = [e for e in self.ls_tree(tree) if e.mode != GITLINK_MODE and not excluded(e.path, rules)]
        entries.sort(key=lambda e: e.mode == SYMLINK_MODE)
        with self.cat_file() as cat:
            write_entries(cat, entries, dest)

    # -- writing trees ---------------------------------------------------------------------------

    @contextmanager
    def _temp_index(self) -> Iterator[dict[str, str]]:
        with tempfile.TemporaryDirectory(prefix="ratchet-index-") as tmp:
            yield {"GIT_INDEX_FILE": str(Path(tmp) / "index")}

    def tree_from_entries(self, entries: Iterable[TreeEntry]) -> str:
        """Write a tree holding exactly `entries` (objects must exist); returns its hash."""
        lines = b"".join(
            f"{e.mode} {e.oid}\t".encode() + e.path.encode("utf-8", "surrogateescape") + b"\0"
            for e in entries
        )
        with self._temp_index() as env:
            self._run(["update-index", "--add", "-z", "--index-info"], stdin=lines, env=env)
            return self._out(["write-tree"], env=env)

    def hash_blobs(self, contents: Sequence[bytes]) -> list[str]:
        """Store each bytes value as a blob (no filters); returns their hashes in order."""
        if not contents:
            return []
        with tempfile.TemporaryDirectory(prefix="ratchet-blobs-") as tmp:
            paths = []
            for i, data in enumerate(contents):
                path = Path(tmp) / str(i)
                path.write_bytes(data)
                paths.append(str(path))
            return self._hash_paths(paths)

    def _hash_paths(self, paths: Sequence[str], pass_fds: Sequence[int] = ()) -> list[str]:
        stdin = "".join(p + "\n" for p in paths).encode()
        argv, env = git_command(self.root, ["hash-object", "-w", "--no-filters", "--stdin-paths"])
        proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, pass_fds=tuple(pass_fds))
        if proc.returncode != 0:
            raise GitError("git.hash_failed", f"git hash-object failed: {stderr_text(proc)}")
        oids = proc.stdout.decode().split()
        if len(oids) != len(paths):
            raise GitError(
                "git.hash_failed", f"git hash-object returned {len(oids)} hashes for {len(paths)} files"
            )
        return oids

    def tree_from_dir(self, src: Path, base_tree: str | None = None, keep: Iterable[str] = ()) -> str:
        """The tree hash of the files under `src` exactly as on disk (no clean filters, no
        .gitattributes, no .gitignore): regular files (mode 100755 when the owner may execute),
        symlinks (as symlinks), nothing else. `.git` (anywhere) and a top-level `.ratchet-sys` are
        ignored. Each file is read through a descriptor opened with O_NOFOLLOW, so a symlink swapped
        in while sealing is never followed.

        base_tree: when given, its submodules and its entries under `keep` (paths or directory
        prefixes a workspace never contains, e.g. hidden paths) are carried over, and anything in
        `src` under `keep` is ignored.
        """
        rules = list(keep)
        entries = [
            e for e in scan_dir(Path(src), self._hash_paths, self.hash_blobs) if not excluded(e.path, rules)
        ]
        if base_tree is not None:
            entries += [
                e for e in self.ls_tree(base_tree) if e.mode == GITLINK_MODE or excluded(e.path, rules)
            ]
        return self.tree_from_entries(entries)

    def overlay_tree(self, base_tree: str, files: Mapping[str, bytes | None]) -> str:
        """A new tree: `base_tree` with each path in `files` replaced by its bytes (None deletes the
        path, or everything under it when it is a directory). A replaced file keeps its mode; a new
        one is 100644. A file replacing a directory (or the reverse) removes what it replaces.
        Raises GitError `git.unsafe_path` for absolute paths, `.`/`..`/`.git` components.
        """
        base = self.ls_tree(base_tree)
        entries = {e.path: e for e in base}
        old_modes = {e.path: e.mode for e in base}
        writes = {check_path(p): data for p, data in files.items()}
        for path in writes:
            for old in [
                q for q in entries if q == path or q.startswith(path + "/") or path.startswith(q + "/")
            ]:
                del entries[old]
        new = [(p, d) for p, d in writes.items() if d is not None]
        oids = self.hash_blobs([d for _, d in new])
        for (path, _), oid in zip(new, oids, strict=True):
            kept = old_modes.get(path)
            mode = kept if kept in ("100644", "100755") else "100644"
            entries[path] = TreeEntry(mode, "blob", oid, path)
        return self.tree_from_entries(entries.values())

    def apply_patch(self, base_tree: str, patch: bytes) -> str:
        """The tree of `base_tree` with a unified diff applied (`git apply --cached` in a temporary
        index). Raises GitError `git.patch_failed` with git's message when it does not apply."""
        with self._temp_index() as env:
            self._run(["read-tree", base_tree], env=env, code="git.bad_revision")
            proc = self._run(
                ["apply", "--cached", "--whitespace=nowarn", "-"], stdin=patch, env=env, check=False
            )
            if proc.returncode != 0:
                raise GitError(
                    "git.patch_failed",
                    f"the patch does not apply to tree {base_tree[:12]}: {stderr_text(proc)}",
                    hint="make the patch against the current champion (git diff output)",
                )
            return self._out(["write-tree"], env=env)

    # -- diffs -----------------------------------------------------------------------------------

    def diff_entries(self, tree_a: str, tree_b: str) -> list[DiffEntry]:
        """Every changed path from `tree_a` to `tree_b` (recursive, renames as delete + add)."""
        out = self._run(
            ["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", tree_a, tree_b],
            code="git.bad_revision",
        ).stdout
        fields = out.split(b"\0")
        result = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].decode().lstrip(":").split()
            path = fields[i + 1].decode("utf-8", "surrogateescape")
            result.append(DiffEntry(status=meta[4][0], path=path, old_mode=meta[0], new_mode=meta[1]))
        return result

    def diff_text(self, tree_a: str, tree_b: str, binary: bool = False) -> str:
        """The unified diff from `tree_a` to `tree_b` (no textconv, no external diff driver), as
        text (undecodable bytes replaced). binary: include binary patches (`--binary`), which
        `apply_patch` can apply."""
        args = ["diff-tree", "-p", "-r", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"]
        args += ["--binary"] if binary else []
        out = self._run([*args, tree_a, tree_b], code="git.bad_revision").stdout
        return out.decode("utf-8", "replace")

    # -- commits and branches --------------------------------------------------------------------

    def identity(self) -> tuple[str, str]:
        """(name, email) for Ratchet's commits: GIT_AUTHOR_NAME/EMAIL from the environment, else the
        repository's own `user.name`/`user.email` (global config is ignored), else `Ratchet
        <ratchet@localhost>`."""
        name = os.environ.get("GIT_AUTHOR_NAME") or self._config("user.name") or FALLBACK_NAME
        email = os.environ.get("GIT_AUTHOR_EMAIL") or self._config("user.email") or FALLBACK_EMAIL
        return name, email

    def _config(self, key: str) -> str | None:
        proc = self._run(["config", "--get", key], check=False)
        value = proc.stdout.decode("utf-8", "replace").strip()
        return value if proc.returncode == 0 and value else None

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        """Create a commit of `tree` with `parents` and `message` (never signed, hooks never run);
        returns its hash. Touches no branch, HEAD or index."""
        name, email = self.identity()
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self._out([*args, "-F", "-"], stdin=message.encode(), env=env, code="git.commit_failed")

    def merge_trees(self, base_tree: str, ours_tree: str, theirs_tree: str) -> tuple[str | None, list[str]]:
        """Three-way merge of `theirs_tree`'s change from `base_tree` onto `ours_tree` (`git
        merge-tree --write-tree`, git >= 2.38, over throwaway commits whose only common ancestor is
        `base_tree`'s). Returns (merged tree, []) when clean, (None, the conflicted paths) when not.
        Touches no branch, HEAD, index or work tree. Raises GitError `git.merge_failed` when git
        cannot merge at all (an unknown tree, a git too old)."""
        message = "ratchet: re-base"
        base = self.commit_tree(base_tree, [], message)
        ours = self.commit_tree(ours_tree, [base], message)
        theirs = self.commit_tree(theirs_tree, [base], message)
        proc = self._run(["merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs], check=False)
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode == 0 and lines:
            return lines[0].strip(), []
        if proc.returncode == 1 and lines:
            return None, sorted({line.strip() for line in lines[1:] if line.strip()})
        raise GitError("git.merge_failed", f"git merge-tree failed (exit {proc.returncode}): "
                       f"{proc.stderr.decode('utf-8', 'replace').strip()[:500]}",
                       hint="Ratchet needs git >= 2.38 to re-base a candidate onto a moved champion")

    def branch_commit(self, name: str) -> str | None:
        """The commit branch `name` points to, or None when it does not exist."""
        proc = self._run(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}^{{commit}}"], check=False)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def update_branch(self, name: str, commit: str, expected_old: str | None) -> None:
        """Point branch `name` at `commit` if it currently points at `expected_old` (None: it must
        not exist yet). Never moves a branch checked out in a worktree.
        Raises GitError `git.bad_branch`, `git.branch_checked_out`, `git.branch_moved` (someone else
        moved it: nothing changed)."""
        ref = f"refs/heads/{name}"
        if self._run(["check-ref-format", ref], check=False).returncode != 0:
            raise GitError("git.bad_branch", f"{name!r} is not a valid branch name")
        if ref in self._checked_out_refs():
            raise GitError(
                "git.branch_checked_out",
                f"branch {name} is checked out; Ratchet will not move it",
                hint="check out another branch",
            )
        self.clean_stale_locks()
        old = expected_old if expected_old is not None else ""
        proc = self._run(["update-ref", "-m", "ratchet", ref, commit, old], check=False)
        if proc.returncode != 0:
            current = self.branch_commit(name)
            if current != expected_old:
                raise GitError(
                    "git.branch_moved",
                    f"branch {name} is at {current or 'nothing'}, expected {expected_old or 'nothing'}",
                )
            raise GitError("git.update_failed", f"could not update branch {name}: {stderr_text(proc)}")

    def ref_commit(self, ref: str) -> str | None:
        """The commit the full ref `ref` (`refs/...`) points to, or None when it does not exist."""
        proc = self._run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def update_ref(self, ref: str, commit: str) -> None:
        """Create the full ref `ref` (`refs/...`, not a branch) pointing at `commit`; it must not exist
        yet. Raises GitError `git.bad_ref` (malformed name) or `git.update_failed`."""
        if not ref.startswith("refs/") or self._run(["check-ref-format", ref], check=False).returncode != 0:
            raise GitError("git.bad_ref", f"{ref!r} is not a valid ref name")
        self.clean_stale_locks()
        proc = self._run(["update-ref", "-m", "ratchet", ref, commit, ""], check=False)
        if proc.returncode != 0:
            raise GitError("git.update_failed", f"could not create {ref}: {stderr_text(proc)}")

    def has_object(self, name: str) -> bool:
        """True when the object `name` (a hash) is in the repository."""
        return self._run(["cat-file", "-e", name], check=False).returncode == 0

    def _checked_out_refs(self) -> set[str]:
        out = self._out(["worktree", "list", "--porcelain"])
        return {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("branch ")}

    # -- locks -----------------------------------------------------------------------------------

    def clean_stale_locks(self, max_age_s: float = STALE_LOCK_S) -> list[Path]:
        """Remove stale `*.lock` files of this repository (see `locks.clean_stale_locks`); returns
        the removed paths."""
        return clean_stale_locks(self.root, self.git_dir, max_age_s)
