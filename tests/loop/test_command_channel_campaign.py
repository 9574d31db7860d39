"""The command agent's channel in real campaigns: a checkpoint sleep woken at once (also after a
kernel restart), and `ratchet-sys queue` / `ratchet-sys launches` showing this attempt's jobs and
the run's launches, earlier attempts' included, from the state files the kernel writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, ratchet, set_contract
from repo_fixture import git

from ratchet.compute.sandbox import probe_bwrap
from ratchet.ledger.blobs import BlobStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not probe_bwrap().available, reason="the command agent needs a working bwrap")]

CHECKPOINT_BOT = '''"""Leg 1: launch an array of two and sleep; leg 2: a checkpoint; leg 3: submit. Every leg prints
what `ratchet-sys queue` and `ratchet-sys launches` show."""
import os, pathlib, subprocess, sys
ws = pathlib.Path(os.environ["RATCHET_WORKSPACE"])
tool = os.path.join(os.environ["RATCHET_CHANNEL"], "ratchet-sys")
step = ws / "step.txt"
n = int(step.read_text()) if step.exists() else 0
step.write_text(str(n + 1))
for what in ("queue", "launches"):
    out = subprocess.run([sys.executable, tool, what], capture_output=True, text=True).stdout
    print(f"{what}: " + " ".join(out.split()))
def run(*args):
    subprocess.run([sys.executable, tool, *args], check=True)
if n == 0:
    run("launch", "--name", "probe" + ws.parent.name[-1], "--array", "2", "--minutes", "1",
        "--why", "see\\nthe baseline", "--", "python3", "bench.py")
    run("sleep", "--note", "first")
elif n == 1:
    run("sleep", "--note", "checkpoint: nothing to run")
else:
    run("submit", "--report", "the baseline stays; nothing changed")
'''


def checkpoint_project(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root)
    (root / "agent" / "checkpoint_bot.py").write_text(CHECKPOINT_BOT)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    # max_submits = 1: each attempt is a fresh session (its bot counts its legs from step.txt)
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"':
                                'command = "python3 agent/checkpoint_bot.py"\nmax_submits = 1'})
    return root


def _legs(evs: list[dict]) -> list[tuple[int, str, str]]:
    return [(e["data"]["attempt"], e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]


def _printed(root: Path, run_id: str, leg: dict) -> str:
    return BlobStore(root / ".ratchet" / "runs" / run_id / "blobs").get_bytes(leg["stdout_blob"]).decode()


def test_a_checkpoint_is_woken_at_once_and_launches_lists_earlier_attempts(tmp_path: Path):
    root = checkpoint_project(tmp_path / "p")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    run_id = out["result"]["run_id"]
    evs = events(root, run_id)
    assert _legs(evs) == [(a, k, o) for a in (1, 2) for k, o in
                          (("start", "launch"), ("wake", "checkpoint"), ("wake", "submit"))]
    launched = [e["data"] for e in evs if e["kind"] == "agent.launched"]
    assert [(d["attempt"], len(d["jobs"])) for d in launched] == [(1, 2), (2, 2)], "a checkpoint launches nothing"
    legs = [e["data"] for e in evs if e["kind"] == "agent.leg"]
    blobs = BlobStore(root / ".ratchet" / "runs" / run_id / "blobs")
    woken = blobs.get_bytes(legs[2]["message_blob"]).decode()
    assert "a checkpoint" in woken and "checkpoint: nothing to run" in woken
    # Leg 2 of attempt 1: the queue shows both jobs of probe1, their why folded and their state.
    queue = _printed(root, run_id, legs[1]).split("queue: ", 1)[1].split("\n", 1)[0]
    assert queue.count('"launch": "probe1"') == 2 and '"why": "see the baseline"' in queue, queue
    assert queue.count('"state": "succeeded"') == 2, queue
    # Leg 2 of attempt 2: the run's launches, attempt 1's included.
    launches = _printed(root, run_id, legs[4]).split("\nlaunches: ", 1)[1].split("\n", 1)[0]
    rows = json.loads(launches)
    assert [(r["attempt"], r["launch"], r["name"], r["jobs"], r["states"]) for r in rows] == [
        (1, 1, "probe1", 2, {"succeeded": 2}), (2, 1, "probe2", 2, {"succeeded": 2})], rows


def test_a_kernel_killed_after_a_checkpoint_resumes_by_waking_the_agent_once(tmp_path: Path):
    root = checkpoint_project(tmp_path / "p")
    set_contract(root, replace={"max_attempts = 2": "max_attempts = 1"})
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:agent.leg:2"}  # the checkpoint leg is recorded
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    code, out, err = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, (out, err)
    evs = events(root, run_id)
    assert _legs(evs) == [(1, "start", "launch"), (1, "wake", "checkpoint"), (1, "wake", "submit")]
    assert len([e for e in evs if e["kind"] == "agent.launched"]) == 1
    last = [e["data"] for e in evs if e["kind"] == "agent.leg"][-1]
    assert re.search(r"queue: .*probe1", _printed(root, run_id, last)), "the resumed attempt kept its workspace"
