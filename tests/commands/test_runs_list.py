"""`ratchet runs`: a project's runs in one table (id, mode, state, stop reason, promotions, start),
and the CLI's one shape: `--dir` on every command, a project directory given where a run id goes
named as such, a missing directory said as one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ratchet, set_contract

from ratchet.loop.kernel import CRASH_AT_ENV


def _killed_run(root: Path) -> str:
    """Start `ratchet run` and SIGKILL it right after attempt 1 starts; returns the run id."""
    env = {**os.environ, CRASH_AT_ENV: "after:attempt.started:1"}
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return sorted(os.listdir(root / ".ratchet" / "runs"))[-1]


@pytest.mark.slow
def test_runs_lists_every_run_with_its_state_and_names_one_it_cannot_read(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, append='\n[sandbox]\nmode = "none"\n')
    code, out, _ = ratchet("runs", "--dir", str(root))
    assert code == 0 and out["result"] == {"project": str(root), "runs": []}

    abandoned = _killed_run(root)
    assert ratchet("abandon", abandoned, "--dir", str(root))[0] == 0
    killed = _killed_run(root)
    bare = root / ".ratchet" / "runs" / "20990101-000000-zzzz"  # created, killed before run.started
    bare.mkdir()
    (bare / "events.jsonl").write_bytes(b"")

    code, out, err = ratchet("runs", "--dir", str(root))
    assert code == 0, err
    rows = {r["run_id"]: r for r in out["result"]["runs"]}
    assert list(rows) == sorted(rows)  # oldest first
    assert rows[abandoned] | {"started": None} == {
        "run_id": abandoned, "mode": "campaign", "state": "stopped", "stop_reason": "abandoned", "promotions": 0,
        "attempts": 1, "started": None}
    assert rows[abandoned]["started"].startswith(abandoned[:4])
    assert rows[killed]["state"] == "interrupted" and rows[killed]["stop_reason"] is None
    assert rows[bare.name]["state"] == "not_started" and rows[bare.name]["mode"] is None

    ledger = root / ".ratchet" / "runs" / killed / "events.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join([lines[0], b"{not a ledger line}\n", *lines[2:]]))
    (ledger.parent / "index.sqlite").unlink()
    code, out, _ = ratchet("runs", "--dir", str(root))
    rows = {r["run_id"]: r for r in out["result"]["runs"]}
    assert code == 0 and rows[killed]["state"] == "unreadable" and rows[killed]["error"]["code"].startswith("ledger.")
    assert rows[abandoned]["state"] == "stopped"

    human = subprocess.run([sys.executable, "-m", "ratchet", "runs", "--dir", str(root)], capture_output=True,
                           text=True, timeout=60, env={**os.environ, "COLUMNS": "120"})
    assert human.returncode == 0, human.stderr
    assert all(run_id in human.stdout for run_id in rows) and "abandoned" in human.stdout
    assert "unreadable" in human.stdout


def test_a_project_directory_where_the_run_id_goes_is_named_and_pointed_to_dir(tmp_path: Path):
    (tmp_path / "myproj").mkdir()
    for command in ("status", "report", "watch", "verify", "abandon"):
        code, out, _ = ratchet(command, "myproj", cwd=tmp_path)
        assert code == 2 and out["error"]["code"] == "run.bad_id", (command, out)
        assert "'myproj' is a directory, not a run id" in out["error"]["message"]
        assert "ratchet runs --dir myproj" in out["error"]["hint"]
        assert f"ratchet {command} --dir myproj" in out["error"]["hint"]
    code, out, _ = ratchet("status", "no-such-thing", cwd=tmp_path)
    assert code == 2 and out["error"]["code"] == "run.bad_id" and "`ratchet runs`" in out["error"]["hint"]


def test_a_missing_project_directory_is_said_by_every_command_not_no_runs(tmp_path: Path):
    missing = str(tmp_path / "nonexistent")
    for args in (["status"], ["runs"], ["report"], ["watch"], ["verify"], ["abandon", "20260101-000000-abcd"],
                 ["check"], ["run"], ["calibrate"], ["compare", "HEAD", "HEAD~1"]):
        code, out, _ = ratchet(*args, "--dir", missing)
        assert code == 2 and out["error"]["code"] == "project.no_dir", (args, out)
        assert "no such directory" in out["error"]["message"] and missing in out["error"]["message"]


def test_dir_positional_and_dir_option_agree_or_are_refused(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for command in ("check", "run", "calibrate", "init"):
        code, out, _ = ratchet(command, str(tmp_path / "a"), "--dir", str(tmp_path / "b"))
        assert code == 2 and out["error"]["code"] == "usage", (command, out)
        assert "name different directories" in out["error"]["message"]
    for args in ([str(tmp_path / "a")], ["--dir", str(tmp_path / "a")],
                 [str(tmp_path / "a"), "--dir", str(tmp_path / "a") + "/"]):
        code, out, _ = ratchet("check", *args)
        assert code == 2 and out["error"]["code"] == "contract.missing", (args, out)
        assert str(tmp_path / "a" / "ratchet.toml") in out["error"]["message"]
    code, out, _ = ratchet("init", "--dir", str(tmp_path / "c"))
    assert code == 0 and (tmp_path / "c" / "ratchet.toml").is_file()
