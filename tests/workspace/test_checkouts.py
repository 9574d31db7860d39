"""Checkouts copied from a template: the same files, modes and symlinks as `materialize_tree`,
private to each job, on real temporary repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ratchet.core.errors import GitError
from ratchet.workspace.checkouts import TEMPLATES_PREFIX, CheckoutPool
from ratchet.workspace.git import Git


def _listing(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under `root`: relative path -> (kind, permission bits, content or link target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            st = os.lstat(path)
            if path.is_symlink():
                out[rel] = ("link", 0, os.readlink(path).encode())
            elif path.is_dir():
                out[rel] = ("dir", st.st_mode & 0o777, b"")
            else:
                out[rel] = ("file", st.st_mode & 0o777, path.read_bytes())
    return out


@pytest.fixture
def rich_repo(tmp_path, git_cli, make_repo) -> Git:
    """A repository with an executable, nested directories, a symlink, CRLF bytes and a hidden dir."""
    root = make_repo(tmp_path / "repo", files={"bin/run.sh": "#!/bin/sh\necho run\n", "a/b/c.txt": "deep\r\n",
                                               "hidden/answers.txt": "42\n"})
    os.chmod(root / "bin" / "run.sh", 0o755)
    os.symlink("a/b/c.txt", root / "link")
    git_cli(root, "add", "-A")
    git_cli(root, "commit", "-q", "-m", "rich")
    return Git(root)


def test_a_copied_checkout_is_identical_to_materialize_tree(rich_repo, tmp_path):
    tree = rich_repo.tree_of("HEAD")
    rich_repo.materialize_tree(tree, tmp_path / "direct", exclude=["hidden/"])
    with CheckoutPool(rich_repo, tmp_path / "work", exclude=["hidden/"]) as pool:
        pool.checkout(tree, tmp_path / "work" / "j1")  # the first one writes the template
        pool.checkout(tree, tmp_path / "work" / "j2")  # the second copies it
    direct = _listing(tmp_path / "direct")
    assert direct["bin/run.sh"][1] == 0o755 and direct["link"] == ("link", 0, b"a/b/c.txt")
    assert "hidden" not in direct
    assert _listing(tmp_path / "work" / "j1") == direct
    assert _listing(tmp_path / "work" / "j2") == direct


def test_each_checkout_is_private_and_writable(rich_repo, tmp_path):
    tree = rich_repo.tree_of("HEAD")
    work = tmp_path / "work"
    with CheckoutPool(rich_repo, work) as pool:
        pool.checkout(tree, work / "j1")
        (work / "j1" / "a" / "b" / "c.txt").write_text("changed by job 1")
        (work / "j1" / "new.txt").write_text("new")
        pool.checkout(tree, work / "j2")
        assert os.stat(work / "j1" / "bench.py").st_ino != os.stat(work / "j2" / "bench.py").st_ino
    assert (work / "j2" / "a" / "b" / "c.txt").read_bytes() == b"deep\r\n"
    assert not (work / "j2" / "new.txt").exists()


def test_the_pool_reads_each_tree_once_and_removes_its_templates(rich_repo, tmp_path, git_cli):
    first = rich_repo.tree_of("HEAD")
    second = rich_repo.overlay_tree(first, {"params.toml": b"x = 2.0\n"})
    work = tmp_path / "work"
    with CheckoutPool(rich_repo, work) as pool:
        for i, tree in enumerate([first, second, first, second, first]):
            pool.checkout(tree, work / f"j{i}")
        templates = [p for p in work.iterdir() if p.name.startswith(TEMPLATES_PREFIX)]
        assert len(templates) == 1 and len(list(templates[0].iterdir())) == 2
    assert not any(p.name.startswith(TEMPLATES_PREFIX) for p in work.iterdir())
    assert (work / "j3" / "params.toml").read_text() == "x = 2.0\n"
    assert (work / "j4" / "params.toml").read_bytes() == rich_repo.read_blob(first, "params.toml")


def test_a_checkout_into_a_full_directory_is_refused(rich_repo, tmp_path):
    dest = tmp_path / "work" / "j1"
    dest.mkdir(parents=True)
    (dest / "left-over").write_text("x")
    with CheckoutPool(rich_repo, tmp_path / "work") as pool, pytest.raises(GitError) as err:
        pool.checkout(rich_repo.tree_of("HEAD"), dest)
    assert err.value.code == "git.dest_not_empty"
