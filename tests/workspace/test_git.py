"""Safe git on real temporary repositories: checkouts without filters, sealing trees from
directories, overlays, patches, commits without hooks or identity, stale locks."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from ratchet.core.errors import GitError
from ratchet.workspace.git import Git


def _evil_repo(root: Path, marker: Path, git, make_bench_repo) -> Path:
    """A repo whose local config and attributes try to run commands on checkout, diff, commit."""
    make_bench_repo(
        root,
        files={
            "run.sh": "#!/bin/sh\necho run\n",
            "notes.txt": "raw text\r\n",
            "secret.dat": "exported? no: export-ignore\n",
            ".gitattributes": "*.txt filter=evil diff=evil\nsecret.dat export-ignore\n",
        },
    )
    os.chmod(root / "run.sh", 0o755)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "exec bit")
    hook = f"#!/bin/sh\necho ran >> {marker}\n"
    for name in ("smudge", "clean"):
        git(root, "config", f"filter.evil.{name}", f"sh -c 'echo {name} >> {marker}; cat'")
    git(root, "config", "diff.evil.textconv", f"sh -c 'echo textconv >> {marker}; cat \"$0\"'")
    git(root, "config", "core.fsmonitor", str(root / "fsmonitor.sh"))
    (root / "fsmonitor.sh").write_text(hook)
    os.chmod(root / "fsmonitor.sh", 0o755)
    for name in ("pre-commit", "post-commit", "reference-transaction", "post-checkout"):
        path = root / ".git" / "hooks" / name
        path.write_text(hook)
        os.chmod(path, 0o755)
    return root


def test_materialize_ignores_filters_and_export_ignore_and_keeps_exec_bits(tmp_path, git_cli, make_repo):
    marker = tmp_path / "marker"
    repo = Git(_evil_repo(tmp_path / "repo", marker, git_cli, make_repo))
    dest = tmp_path / "checkout"
    repo.materialize_tree(repo.tree_of("HEAD"), dest)
    assert (dest / "notes.txt").read_bytes() == b"raw text\r\n"
    assert (dest / "secret.dat").exists()
    assert os.stat(dest / "run.sh").st_mode & 0o777 == 0o755
    assert os.stat(dest / "bench.py").st_mode & 0o777 == 0o644
    assert not marker.exists(), marker.read_text()


def test_materialize_excludes_paths_writes_symlinks_and_refuses_a_full_destination(
    tmp_path, git_cli, make_repo
):
    root = make_repo(tmp_path / "repo", files={"data/examples.jsonl": "{}\n", "data2/keep": "k"})
    os.symlink("/etc/passwd", root / "link")
    git_cli(root, "add", "-A")
    git_cli(root, "commit", "-q", "-m", "link")
    repo = Git(root)
    dest = tmp_path / "out"
    repo.materialize_tree("HEAD", dest, exclude=["data/", "ratchet.toml"])
    assert not (dest / "data").exists() and not (dest / "ratchet.toml").exists()
    assert (dest / "data2" / "keep").read_text() == "k"
    assert os.readlink(dest / "link") == "/etc/passwd"
    with pytest.raises(GitError) as err:
        repo.materialize_tree("HEAD", dest)
    assert err.value.code == "git.dest_not_empty"


def test_tree_from_dir_round_trips_a_checkout(bench_repo, tmp_path):
    repo = Git(bench_repo)
    tree = repo.tree_of("HEAD")
    work = tmp_path / "work"
    repo.materialize_tree(tree, work)
    (work / ".ratchet-sys").mkdir()
    (work / ".ratchet-sys" / "request.json").write_text("{}")
    assert repo.tree_from_dir(work) == tree
    assert repo.tree_from_dir(bench_repo) == tree  # the repo's own .git is ignored


def test_tree_from_dir_reads_files_as_on_disk_without_following_symlinks(tmp_path, git_cli, make_repo):
    marker = tmp_path / "marker"
    repo = Git(_evil_repo(tmp_path / "repo", marker, git_cli, make_repo))
    work = tmp_path / "work"
    repo.materialize_tree("HEAD", work)
    (work / "notes.txt").write_bytes(b"changed\r\n")
    os.symlink("/etc/hostname", work / "escape")
    os.mkfifo(work / "fifo")
    os.chmod(work / "bench.py", 0o755)
    tree = repo.tree_from_dir(work)
    assert repo.read_blob(tree, "notes.txt") == b"changed\r\n"
    assert repo.read_blob(tree, "escape") == b"/etc/hostname"
    modes = {e.path: e.mode for e in repo.ls_tree(tree)}
    assert modes["escape"] == "120000" and modes["bench.py"] == "100755" and "fifo" not in modes
    assert not marker.exists(), marker.read_text()


def test_tree_from_dir_keeps_hidden_paths_of_the_base_tree(tmp_path, make_repo):
    root = make_repo(tmp_path / "repo", files={"hidden/answers.txt": "42\n"})
    repo = Git(root)
    base = repo.tree_of("HEAD")
    work = tmp_path / "work"
    repo.materialize_tree(base, work, exclude=["hidden/"])
    (work / "params.toml").write_text("x = 3.0\n")
    (work / "hidden").mkdir()
    (work / "hidden" / "answers.txt").write_text("forged\n")
    tree = repo.tree_from_dir(work, base_tree=base, keep=["hidden/"])
    assert repo.read_blob(tree, "hidden/answers.txt") == b"42\n"
    assert [(e.status, e.path) for e in repo.diff_entries(base, tree)] == [("M", "params.toml")]


def test_overlay_replaces_adds_and_deletes_without_touching_the_work_tree(bench_repo, git_cli):
    os.chmod(bench_repo / "bench.py", 0o755)
    git_cli(bench_repo, "commit", "-q", "-am", "exec")
    repo = Git(bench_repo)
    base = repo.tree_of("HEAD")
    tree = repo.overlay_tree(
        base,
        {
            "params.toml": b"x = 2.5\n",
            "model/w.txt": b"1 2 3\n",
            ".gitignore": None,
            "bench.py": b"print('new')\n",
        },
    )
    changes = {(e.status, e.path, e.new_mode) for e in repo.diff_entries(base, tree)}
    assert changes == {
        ("M", "params.toml", "100644"),
        ("A", "model/w.txt", "100644"),
        ("D", ".gitignore", "000000"),
        ("M", "bench.py", "100755"),
    }
    assert (bench_repo / "params.toml").read_text() == "x = 0.0\n"
    assert git_cli(bench_repo, "status", "--porcelain") == ""
    replaced = repo.overlay_tree(tree, {"model": b"now a file\n"})
    assert repo.read_blob(replaced, "model") == b"now a file\n"
    assert repo.read_blob(replaced, "model/w.txt") is None
    with pytest.raises(GitError) as err:
        repo.overlay_tree(base, {"../escape": b""})
    assert err.value.code == "git.unsafe_path"


def test_apply_patch_round_trips_diff_text_and_fails_with_a_code(bench_repo):
    repo = Git(bench_repo)
    base = repo.tree_of("HEAD")
    target = repo.overlay_tree(base, {"params.toml": b"x = 1.5\n", "model/new.txt": b"hello\n"})
    patch = repo.diff_text(base, target).encode()
    assert repo.apply_patch(base, patch) == target
    with pytest.raises(GitError) as err:
        repo.apply_patch(target, patch)
    assert err.value.code == "git.patch_failed"
    assert "params.toml" in err.value.message


def test_diff_text_uses_no_textconv_and_no_external_diff(tmp_path, monkeypatch, git_cli, make_repo):
    marker = tmp_path / "marker"
    root = _evil_repo(tmp_path / "repo", marker, git_cli, make_repo)
    script = tmp_path / "extdiff.sh"
    script.write_text(f"#!/bin/sh\necho extdiff >> {marker}\n")
    os.chmod(script, 0o755)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(script))
    repo = Git(root)
    base = repo.tree_of("HEAD")
    tree = repo.overlay_tree(base, {"notes.txt": b"new text\n"})
    text = repo.diff_text(base, tree)
    assert "-raw text" in text and "+new text" in text
    assert not marker.exists(), marker.read_text()


def test_hooks_and_fsmonitor_never_run_on_commit_and_branch_update(tmp_path, git_cli, make_repo):
    marker = tmp_path / "marker"
    root = _evil_repo(tmp_path / "repo", marker, git_cli, make_repo)
    git_cli(root, "config", "core.hooksPath", str(root / ".git" / "hooks"))
    repo = Git(root)
    head = repo.head_commit()
    tree = repo.overlay_tree(repo.tree_of(head), {"params.toml": b"x = 1.0\n"})
    commit = repo.commit_tree(tree, [head], "ratchet: promote attempt 1")
    repo.update_branch("ratchet/run1/champion", commit, None)
    assert repo.branch_commit("ratchet/run1/champion") == commit
    assert not marker.exists(), marker.read_text()
    assert repo.head_commit() == head  # the user's HEAD did not move


def test_commits_work_without_any_identity_and_prefer_the_repos_own(
    bench_repo, tmp_path, monkeypatch, git_cli
):
    home = tmp_path / "emptyhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    repo = Git(bench_repo)
    commit = repo.commit_tree(repo.tree_of("HEAD"), [repo.head_commit()], "no identity")
    assert (
        git_cli(bench_repo, "log", "-1", "--format=%an <%ae>|%cn", commit)
        == "Ratchet <ratchet@localhost>|Ratchet"
    )
    git_cli(bench_repo, "config", "user.name", "Ada")
    git_cli(bench_repo, "config", "user.email", "ada@example.org")
    commit = repo.commit_tree(repo.tree_of("HEAD"), [], "local identity")
    assert git_cli(bench_repo, "log", "-1", "--format=%an <%ae>", commit) == "Ada <ada@example.org>"
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Name")
    assert repo.identity()[0] == "Env Name"


def test_update_branch_checks_the_old_value(bench_repo):
    repo = Git(bench_repo)
    head = repo.head_commit()
    first = repo.commit_tree(repo.tree_of(head), [head], "one")
    second = repo.commit_tree(repo.tree_of(head), [first], "two")
    repo.update_branch("ratchet/r/champion", first, None)
    with pytest.raises(GitError) as err:
        repo.update_branch("ratchet/r/champion", second, None)
    assert err.value.code == "git.branch_moved"
    repo.update_branch("ratchet/r/champion", second, first)
    assert repo.branch_commit("ratchet/r/champion") == second
    with pytest.raises(GitError) as err:
        repo.update_branch("main", second, head)
    assert err.value.code == "git.branch_checked_out"


def test_stale_locks_are_cleaned_and_fresh_ones_kept(bench_repo):
    stale = [bench_repo / ".git" / "index.lock", bench_repo / ".git" / "refs" / "heads" / "main.lock"]
    for path in stale:
        path.write_text("")
        old = time.time() - 3600
        os.utime(path, (old, old))
    fresh = bench_repo / ".git" / "HEAD.lock"
    fresh.write_text("")
    repo = Git(bench_repo)
    assert not any(p.exists() for p in stale)
    assert fresh.exists()
    fresh.unlink()
    commit = repo.commit_tree(repo.tree_of("HEAD"), [repo.head_commit()], "after locks")
    repo.update_branch("ratchet/x/champion", commit, None)


def test_revision_errors_name_the_revision(bench_repo, tmp_path, git_cli):
    repo = Git(bench_repo)
    with pytest.raises(GitError) as err:
        repo.rev_parse_commit("no-such-branch")
    assert err.value.code == "git.bad_revision" and "no-such-branch" in err.value.message
    with pytest.raises(GitError) as err:
        repo.rev_parse_commit("--output=/tmp/x")
    assert err.value.code == "git.bad_revision"
    assert repo.rev_parse_commit("main") == repo.head_commit()
    empty = tmp_path / "empty"
    empty.mkdir()
    git_cli(empty, "init", "-q")
    with pytest.raises(GitError) as err:
        Git(empty).head_commit()
    assert err.value.code == "git.no_commits" and err.value.hint
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not Git.is_repo(plain) and Git.is_repo(bench_repo)
    with pytest.raises(GitError) as err:
        Git(plain)
    assert err.value.code == "git.not_a_repo"


def test_read_blob_and_diff_entries(bench_repo):
    repo = Git(bench_repo)
    base = repo.tree_of("HEAD")
    assert repo.read_blob(base, "params.toml") == b"x = 0.0\n"
    assert repo.read_blob(base, "missing.txt") is None
    link_tree = repo.tree_from_entries([*repo.ls_tree(base)])
    assert link_tree == base
    tree = repo.overlay_tree(base, {"sub/dir/file": b"x"})
    assert repo.read_blob(tree, "sub") is None
    entries = repo.diff_entries(base, tree)
    assert [(e.status, e.path, e.old_mode, e.new_mode) for e in entries] == [
        ("A", "sub/dir/file", "000000", "100644")
    ]
    with pytest.raises(GitError):
        repo.read_blob(base, "../etc/passwd")


def test_materialized_files_are_regular_and_owned_by_the_checkout(bench_repo, tmp_path):
    repo = Git(bench_repo)
    dest = tmp_path / "d"
    repo.materialize_tree("HEAD", dest)
    for path in dest.rglob("*"):
        assert stat.S_ISREG(path.lstat().st_mode) or path.is_dir()


def test_tree_from_dir_handles_more_files_than_one_hashing_batch(bench_repo, tmp_path):
    repo = Git(bench_repo)
    files = {f"data/f{i:03d}.txt": f"{i}\n".encode() for i in range(300)}
    tree = repo.overlay_tree(repo.tree_of("HEAD"), files)
    work = tmp_path / "many"
    repo.materialize_tree(tree, work)
    assert repo.tree_from_dir(work) == tree


def test_merge_trees_rebases_a_change_onto_a_moved_tree_or_names_the_conflict(bench_repo):
    g = Git(bench_repo)
    base = g.tree_of("HEAD")
    ours = g.overlay_tree(base, {"params.toml": b"x = 3.0\n"})
    other_file = g.overlay_tree(base, {"notes.txt": b"a note\n"})
    merged, conflicts = g.merge_trees(base, ours, other_file)
    assert conflicts == [] and merged is not None
    assert g.read_blob(merged, "params.toml") == b"x = 3.0\n" and g.read_blob(merged, "notes.txt") == b"a note\n"
    same_line = g.overlay_tree(base, {"params.toml": b"x = 2.9\n"})
    assert g.merge_trees(base, ours, same_line) == (None, ["params.toml"])
    assert g.merge_trees(base, ours, merged) == (merged, [])  # re-basing a re-based tree changes nothing
