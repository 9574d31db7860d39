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
from helpers import events, ratchet
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
