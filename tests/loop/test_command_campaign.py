"""The command agent in real campaigns: `ratchet run` on the bundled agent example (a scripted
coding agent driving the channel), killed mid-launch and resumed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import events, ratchet, set_contract, venv_agent_cli
from repo_fixture import git

from ratchet.compute.sandbox import probe_bwrap
from ratchet.ledger.blobs import BlobStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not probe_bwrap().available, reason="the command agent needs a working bwrap")]


def agent_project(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


def test_a_scripted_coding_agent_launches_sleeps_submits_and_is_promoted(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    assert out["result"]["promotions"] == 1 and out["result"]["holdout"]["verdict"] == "accepted"
    evs = events(root, out["result"]["run_id"])
    legs = [(e["data"]["attempt"], e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]
    assert legs[:2] == [(1, "start", "launch"), (1, "wake", "submit")]
    launched = next(e["data"] for e in evs if e["kind"] == "agent.launched")
    finished = {e["data"]["job_id"]: e["data"] for e in evs if e["kind"] == "job.finished"}
    assert all(finished[j]["stage"] == "launch" and finished[j]["units_charged"] == 1 for j in launched["jobs"])
    wake = next(e["data"] for e in evs if e["kind"] == "agent.leg" and e["data"]["kind"] == "wake")
    blobs = BlobStore(root / ".ratchet" / "runs" / out["result"]["run_id"] / "blobs")
    message = blobs.get_bytes(wake["message_blob"]).decode("utf-8")
    # The example's budget: max_attempts = 2 (attempt 1 started), max_wall = "5m".
    assert "max_attempts: 1 of 2 attempts used, 1 left" in message
    assert re.search(r"max_wall: [\d.]+ of 300 s used, [\d.]+ left", message), message


def test_a_kernel_killed_mid_launch_resumes_without_running_a_launch_twice(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:job.finished:2"}  # preflight, then one launched job
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    code, out, _ = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, out
    evs = events(root, run_id)
    starts = Counter(e["data"]["job_id"] for e in evs if e["kind"] == "job.started")
    finishes = Counter(e["data"]["job_id"] for e in evs if e["kind"] == "job.finished")
    assert all(n == 1 for n in finishes.values()), finishes
    launch_jobs = [j for j in finishes if "-launch" in j]
    assert launch_jobs and all(starts[j] <= 2 for j in launch_jobs)
    wakes = [e for e in evs if e["kind"] == "agent.leg" and e["data"]["attempt"] == 1 and e["data"]["kind"] == "wake"]
    assert len(wakes) == 1, "the agent is woken once for its launch"
    assert out["result"]["promotions"] == 1


def test_a_cli_on_the_path_in_a_venv_outside_usr_is_seen_and_its_candidate_promoted(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    bin_dir = venv_agent_cli(tmp_path / "tools" / "venv")
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "venvbot {prompt}"'})
    code, out, _ = ratchet("run", str(root), env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert code == 0, out
    assert out["result"]["promotions"] == 1
    evs = events(root, out["result"]["run_id"])
    legs = [(e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]
    assert legs[:2] == [("start", "launch"), ("wake", "submit")]


def test_a_cli_that_does_not_exist_fails_to_start_and_the_run_stops_agent_unresponsive(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "no-such-agent-cli {prompt}"',
                                'kind = "command"\n': 'kind = "command"\nmax_idle_attempts = 2\n',
                                "max_attempts = 2": "max_attempts = 6"})
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    assert out["result"]["stop_reason"] == "agent_unresponsive"
    evs = events(root, out["result"]["run_id"])
    legs = [e["data"] for e in evs if e["kind"] == "agent.leg"]
    assert [(leg["attempt"], leg["kind"], leg["outcome"]) for leg in legs] == [(1, "start", "start_failed"),
                                                                               (2, "start", "start_failed")]
    assert all("bwrap: execvp no-such-agent-cli: No such file or directory" in leg["problem"] for leg in legs)
    gave_up = [e["data"] for e in evs if e["kind"] == "attempt.gave_up"]
    assert [g["unresponsive"] for g in gave_up] == [True, True] and "execvp" in gave_up[-1]["reason"]
    (stopped,) = [e["data"] for e in evs if e["kind"] == "run.stopped"]
    assert stopped["detail"].startswith("2 attempts in a row ended without a working agent")
    assert "execvp no-such-agent-cli" in stopped["detail"]


def test_check_names_the_clis_resolved_executable_and_preflight_runs_its_version_in_the_sandbox(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    venv = tmp_path / "tools" / "venv"
    bin_dir = venv_agent_cli(venv)
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "venvbot {prompt}"'})
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    code, out, _ = ratchet("check", str(root), "--preflight", env=env)
    assert code == 0, out
    agent = out["result"]["agent"]
    assert agent["program"]["resolved"] == str(bin_dir / "venvbot") and agent["will_run"] is True
    assert str(venv) in agent["bound"]
    assert agent["version"]["ok"] and agent["version"]["output"] == f"venvbot 1.0 {venv}"
    code, out, _ = ratchet("check", str(root))  # venvbot not on the PATH: it will not run, and check says so
    assert code == 0 and out["result"]["agent"]["will_run"] is False
    assert any("venvbot is not found on the PATH" in w for w in out["result"]["warnings"])
