"""What people read from the CLI: help without type placeholders, output piped to a file that is not
wrapped at 80 columns, and every contract error shown at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ratchet
from repo_fixture import git

from ratchet.commands.init import scaffold


def _plain(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "ratchet", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)


@pytest.mark.parametrize("command", ["compare", "status", "run", "init", "check", "verify", "calibrate", "runs",
                                     "watch", "report", "abandon"])
def test_help_shows_no_bool_placeholder_nor_braces(command: str):
    text = _plain(command, "--help").stdout
    assert "<bool>" not in text and "{" not in text, text
    assert "--json" in text


def test_compare_usage_names_its_arguments():
    text = _plain("compare", "--help").stdout
    assert "BASE CANDIDATE" in text


def test_output_piped_to_a_file_is_not_wrapped_at_80_columns(tmp_path: Path):
    scaffold(tmp_path / "p", "benchmark")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "baseline")):  # check refuses what run refuses
        git(tmp_path / "p", *args)
    proc = _plain("check", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) > 80
    gate = next(line for line in lines if line.startswith("gate "))
    assert "holdout" in gate, "the gate line was wrapped"


def test_every_contract_error_is_shown_at_once(tmp_path: Path):
    scaffold(tmp_path / "p", "benchmark")
    path = tmp_path / "p" / "ratchet.toml"
    text = path.read_text()
    for old, new in (("alpha = 0.05", "alpah = 0.05"), ("max_attempts = 20", "max_attempts = 0"),
                     ('sampler = "tpe"', 'sampler = "grid"')):
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    code, out, _ = ratchet("check", str(tmp_path / "p"))
    assert code == 2
    message = out["error"]["message"]
    assert "3 errors" in message
    assert "gate.alpah is not a known key" in message
    assert "budget.max_attempts" in message and "agent.search.sampler" in message
    assert "did you mean gate.alpha?" in out["error"]["hint"]
    assert out["error"]["code"] in ("contract.unknown_key", "contract.invalid")


def test_check_says_what_the_units_cannot_see_in_the_targets_own_terms(tmp_path: Path):
    for kind in ("examples", "benchmark"):
        root = tmp_path / kind
        assert ratchet("init", str(root), "--kind", kind)[0] == 0
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "start")
        proc = _plain("check", str(root))
        assert proc.returncode == 0, proc.stderr
        line = next(line for line in proc.stdout.splitlines() if "cannot see" in line)
        if kind == "examples":
            assert "val examples cannot see" in line and "of all inputs" in line and "seeds" not in line, line
        else:
            assert "5% of seeds" in line, line
