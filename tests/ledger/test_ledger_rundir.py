"""The run directory layout, run ids, .git/info/exclude and exclusive writes (real git repos)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess

import pytest

from ratchet.core.errors import DataError, LedgerError
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.rundir import (
    RunDir,
    ensure_ratchet_dir,
    latest_run,
    list_runs,
    new_run_id,
    open_run,
)

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def git_init(path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [GIT, "init", "-q", str(path)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    )
    return path


def test_run_ids_are_utc_and_sort_by_start_time():
    when = dt.datetime(2026, 11, 30, 7, 36, 50, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert new_run_id(when, "ab12") == "20261130-063650-ab12"
    later = new_run_id(when + dt.timedelta(seconds=1), "0000")
    assert sorted([later, "20261130-063650-ab12"]) == ["20261130-063650-ab12", later]


@pytest.mark.parametrize("rand", ["", "AB12", "ab/1", "x" * 17, "ab-1"])
def test_run_ids_refuse_a_bad_random_part(rand):
    with pytest.raises(ValueError):
        new_run_id(dt.datetime(2026, 1, 1, tzinfo=dt.UTC), rand)


def test_run_ids_refuse_a_naive_time():
    with pytest.raises(ValueError):
        new_run_id(dt.datetime(2026, 1, 1), "ab12")


def test_the_layout_follows_the_design(tmp_path):
    run = RunDir(tmp_path, "20261130-063650-ab12")
    root = tmp_path / ".ratchet" / "runs" / "20261130-063650-ab12"
    assert run.root == root
    assert (run.contract, run.events, run.index, run.report) == (
        root / "contract.toml",
        root / "events.jsonl",
        root / "index.sqlite",
        root / "report.md",
    )
    assert (run.blobs, run.jobs, run.plots, run.pids) == (
        root / "blobs",
        root / "jobs",
        root / "plots",
        root / "pids",
    )
    assert (run.lock, run.lock_pid) == (root / "lock", root / "lock.pid")
    assert run.job_dir("t1-candidate-u3") == root / "jobs" / "t1-candidate-u3"
    assert not run.exists()
    run.create()
    assert all(p.is_dir() for p in (run.root, run.blobs, run.jobs, run.plots, run.pids))


@pytest.mark.parametrize("job_id", ["", "..", "../x", "a/b", ".hidden", "x" * 200])
def test_job_ids_that_are_not_one_directory_name_are_refused(tmp_path, job_id):
    with pytest.raises(LedgerError) as caught:
        RunDir(tmp_path, "20261130-063650-ab12").job_dir(job_id)
    assert caught.value.code == "ledger.bad_job_id"


@pytest.mark.parametrize("run_id", ["", "latest", "../20261130-063650-ab12", "20261130-063650-AB12"])
def test_malformed_run_ids_are_refused(tmp_path, run_id):
    with pytest.raises(DataError) as caught:
        RunDir(tmp_path, run_id)
    assert caught.value.code == "run.bad_id"


def test_creating_an_existing_run_is_refused(run_dir):
    with pytest.raises(LedgerError) as caught:
        RunDir(run_dir.project_root, run_dir.run_id).create()
    assert caught.value.code == "ledger.run_exists"


def test_runs_are_listed_oldest_first_ignoring_other_entries(tmp_path):
    assert list_runs(tmp_path) == [] and latest_run(tmp_path) is None
    for run_id in ("20261130-063650-zz99", "20250101-000000-ab12", "20261130-063650-aa00"):
        RunDir(tmp_path, run_id).create()
    runs = tmp_path / ".ratchet" / "runs"
    (runs / "notes.txt").write_text("x")
    (runs / "tmp-dir").mkdir()
    (runs / "20991231-000000-link").symlink_to(runs / "tmp-dir")
    assert list_runs(tmp_path) == ["20250101-000000-ab12", "20261130-063650-aa00", "20261130-063650-zz99"]
    assert latest_run(tmp_path) == "20261130-063650-zz99"
    assert open_run(tmp_path).run_id == "20261130-063650-zz99"
    assert open_run(tmp_path, "20250101-000000-ab12").run_id == "20250101-000000-ab12"


def test_opening_an_unknown_run_is_refused(tmp_path):
    with pytest.raises(DataError) as none:
        open_run(tmp_path)
    assert none.value.code == "run.not_found"
    with pytest.raises(DataError) as unknown:
        open_run(tmp_path, "20261130-063650-ab12")
    assert unknown.value.code == "run.not_found"


@needs_git
def test_ratchet_dir_is_excluded_from_git_exactly_once(tmp_path):
    repo = git_init(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    ensure_ratchet_dir(repo)
    ensure_ratchet_dir(repo)
    RunDir(repo, "20261130-063650-ab12").create()
    assert (repo / ".ratchet").is_dir()
    assert exclude.read_text().splitlines().count(".ratchet/") == 1
    (repo / ".ratchet" / "scratch").write_text("x")
    status = subprocess.run([GIT, "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert ".ratchet" not in status.stdout


@needs_git
def test_exclude_is_created_when_git_info_is_missing(tmp_path):
    repo = git_init(tmp_path / "repo")
    shutil.rmtree(repo / ".git" / "info")
    ensure_ratchet_dir(repo)
    assert (repo / ".git" / "info" / "exclude").read_text() == ".ratchet/\n"


def test_existing_exclude_lines_are_kept(tmp_path):
    info = tmp_path / ".git" / "info"
    info.mkdir(parents=True)
    (info / "exclude").write_text("# mine\n*.log")
    ensure_ratchet_dir(tmp_path)
    assert (info / "exclude").read_text() == "# mine\n*.log\n.ratchet/\n"
    (info / "exclude").write_text("/.ratchet\n")
    ensure_ratchet_dir(tmp_path)
    assert (info / "exclude").read_text() == "/.ratchet\n"


@needs_git
def test_a_worktree_excludes_in_the_common_git_dir(tmp_path):
    repo = git_init(tmp_path / "repo")
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run([GIT, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
    subprocess.run([GIT, "-C", str(repo), "worktree", "add", "-q", str(tmp_path / "wt")], check=True, env=env)
    ensure_ratchet_dir(tmp_path / "wt")
    assert ".ratchet/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()


def test_outside_git_only_the_ratchet_dir_is_made(tmp_path):
    assert ensure_ratchet_dir(tmp_path) == tmp_path / ".ratchet"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ratchet"]


def test_write_exclusive_replaces_a_planted_symlink_without_following_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    target = tmp_path / "result.json"
    target.symlink_to(victim)
    write_exclusive(target, b"{}")
    assert victim.read_bytes() == b"keep"
    assert not target.is_symlink() and target.read_bytes() == b"{}"
    write_exclusive(target, b"[]")
    assert target.read_bytes() == b"[]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json", "victim"]
