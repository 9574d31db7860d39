"""The attempt's workspace: a standalone repository seeded from the champion without what agents
never see, and the harvest that takes only changes in scope."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_fixture import git

from ratchet.agents.command.factory import scope_rules
from ratchet.agents.command.workspace import WorkspaceError, create_workspace, harvest


def _seed(p, tmp_path: Path, **kw) -> Path:
    return create_workspace(p.git, p.git.tree_of("HEAD"), tmp_path / "ws", scope_rules(p.contract), **kw)


def test_workspace_is_a_standalone_repository_without_hidden_paths(agent_project, tmp_path: Path):
    p = agent_project
    (p.root / "secret").mkdir()
    (p.root / "secret" / "answers.txt").write_text("42\n")
    text = (p.root / "ratchet.toml").read_text().replace("hidden = []", 'hidden = ["secret/"]')
    (p.root / "ratchet.toml").write_text(text)
    git(p.root, "add", "-A")
    git(p.root, "commit", "-qm", "hidden")
    ws = _seed(p, tmp_path, dev_examples=[{"input": "1", "expected_output": "2"}])
    assert (ws / "model" / "smooth.py").read_text() == (p.root / "model" / "smooth.py").read_text()
    assert not (ws / "secret").exists()
    assert (ws / ".git").is_dir() and not (ws / ".git").is_symlink()
    assert git(ws, "rev-parse", "--show-toplevel") == str(ws)
    assert git(ws, "status", "--porcelain") == ""  # seeded, committed, channel excluded
    assert git(ws, "log", "--format=%s") .startswith("ratchet: the champion's tree")
    assert (ws / ".ratchet-sys" / "data" / "dev.jsonl").read_text() == '{"input": "1", "expected_output": "2"}\n'
    assert p.git.root not in ws.parents


def test_workspace_inside_the_project_is_refused(agent_project):
    p = agent_project
    with pytest.raises(WorkspaceError) as err:
        create_workspace(p.git, p.git.tree_of("HEAD"), p.root / "ws", scope_rules(p.contract))
    assert err.value.code == "workspace.inside_project"


def test_a_git_tracked_channel_is_refused(agent_project, tmp_path: Path):
    p = agent_project
    (p.root / ".ratchet-sys").mkdir()
    (p.root / ".ratchet-sys" / "ratchet-sys").write_text("evil\n")
    git(p.root, "add", "-A")
    git(p.root, "commit", "-qm", "tracked channel")
    with pytest.raises(WorkspaceError) as err:
        _seed(p, tmp_path)
    assert err.value.code == "workspace.tracked_channel"
    assert not (tmp_path / "ws").exists()


def test_harvest_takes_allowed_changes_and_lists_the_rest(agent_project, tmp_path: Path):
    p = agent_project
    champion = p.git.tree_of("HEAD")
    ws = _seed(p, tmp_path)
    (ws / "model" / "smooth.py").write_text("WINDOW = 5\n")
    (ws / "model" / "new.py").write_text("X = 1\n")
    (ws / "model" / "__init__.py").unlink()
    (ws / "notes.log").write_text("cache\n")
    (ws / ".ratchet-sys" / "junk.txt").write_text("never in a tree\n")
    got = harvest(p.git, champion, ws, scope_rules(p.contract))
    assert sorted(got.taken) == ["model/__init__.py", "model/new.py", "model/smooth.py"]
    assert got.ignored == ("notes.log",)
    assert got.violations == ()
    assert p.git.read_blob(got.tree, "model/smooth.py") == b"WINDOW = 5\n"
    assert p.git.read_blob(got.tree, "model/__init__.py") is None
    assert p.git.read_blob(got.tree, "notes.log") is None
    assert not any(e.path.startswith(".ratchet-sys") for e in p.git.ls_tree(got.tree))
    assert p.git.read_blob(got.tree, "bench.py") == p.git.read_blob(champion, "bench.py")


def test_a_change_to_a_protected_path_is_a_scope_violation_and_never_runs_in_a_launch(agent_project, tmp_path):
    p = agent_project
    champion = p.git.tree_of("HEAD")
    ws = _seed(p, tmp_path)
    (ws / "bench.py").write_text('print(\'{"score": 1e9}\')\n')
    (ws / "ratchet.toml").write_text("[campaign]\n")
    (ws / "model" / "smooth.py").write_text("WINDOW = 3\n")
    sub = harvest(p.git, champion, ws, scope_rules(p.contract), use="submit")
    assert any(v.startswith("bench.py: protected") for v in sub.violations)
    assert any(v.startswith("ratchet.toml: protected") for v in sub.violations)
    launch = harvest(p.git, champion, ws, scope_rules(p.contract), use="launch")
    assert launch.violations == ()
    assert sorted(launch.ignored) == ["bench.py", "ratchet.toml"]
    assert p.git.read_blob(launch.tree, "bench.py") == p.git.read_blob(champion, "bench.py")
    assert p.git.read_blob(launch.tree, "model/smooth.py") == b"WINDOW = 3\n"


def test_a_symlink_in_scope_is_a_violation_at_submit_and_dropped_from_launches(agent_project, tmp_path):
    p = agent_project
    champion = p.git.tree_of("HEAD")
    ws = _seed(p, tmp_path)
    (ws / "model" / "link.py").symlink_to("/etc/passwd")
    assert any("symlink" in v for v in harvest(p.git, champion, ws, scope_rules(p.contract)).violations)
    launch = harvest(p.git, champion, ws, scope_rules(p.contract), use="launch")
    assert launch.ignored == ("model/link.py",) and p.git.read_blob(launch.tree, "model/link.py") is None
