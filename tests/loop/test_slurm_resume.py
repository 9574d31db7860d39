"""Stops and resumes of a campaign on the real one-node Slurm cluster: Ctrl-C with tasks in flight
resumes to the same verdicts as an uninterrupted run; a kernel killed with tasks queued resumes at
once without losing their checkouts; a recorded id the scheduler gave to another job is refused,
never cancelled. Each benchmark job sleeps a second, so a stop always finds tasks in flight."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import events, interrupted_at, ratchet, rechain, set_contract
from test_slurm_campaign import PROBLEM

from ratchet.compute.slurm_calls import run_token
from ratchet.loop.kernel import CRASH_AT_ENV

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")]

BENCH = """\
import json, os, random, time, tomllib

time.sleep(1.0)
with open("params.toml", "rb") as f:
    x = float(tomllib.load(f).get("x", 0.0))
noise = random.Random(int(os.environ.get("RATCHET_SEED", "0"))).gauss(0.0, 0.1)
print(json.dumps({"score": -(x - 3.0) ** 2 + noise}))
"""

# Campaign seed 10: the search agent's first proposal (x = 0.59) beats the baseline (x = 0).
SETTINGS = ("[gate]\nunits = [6]\nholdout_units = 6\nconfirm = false\n\n[budget]\nmax_attempts = 1\n\n"
            "[compute]\nbackend = \"slurm\"\nmax_parallel = 4\n\n"
            "[compute.slurm]\npoll_min_s = 0.2\npoll_max_s = 1.0\n\n[sandbox]\nmode = \"none\"\n")
SALT = "0123456789abcdef0123456789abcdef"
ENV = {"RATCHET_TEST_SALT": SALT}


def _project(make_repo, where: Path) -> Path:
    root = make_repo(where, files={"bench.py": BENCH})
    set_contract(root, replace={"seed = 0": "seed = 10", "timeout_s = 60": "timeout_s = 60\ncache = false"},
                 append=SETTINGS)
    return root


def _run_id(root: Path) -> str:
    (run,) = [p.name for p in (root / ".ratchet" / "runs").iterdir() if (p / "events.jsonl").exists()]
    return run


def _verdicts(evs: list[dict[str, Any]]) -> list[tuple]:
    return [(d["attempt"], d["stage"], d["verdict"], d["reason"], d["units"], round(d["estimate"] or 0.0, 9))
            for d in (e["data"] for e in evs if e["kind"] == "trial.judged")]


def _queued(name: str) -> list[str]:
    """Ids of the cluster's jobs named `name` (pending or running)."""
    out = subprocess.run(["squeue", "-h", "-r", "-n", name, "-o", "%i"], capture_output=True, text=True,
                         check=True).stdout
    return out.split()


def _scancel_run(root: Path) -> None:
    """Never leave a test's tasks on the shared cluster."""
    for runs in (root / ".ratchet" / "runs").glob("*/jobs"):
        subprocess.run(["scancel", "-n", run_token(runs)], capture_output=True, check=False)


def _finished_states(evs: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["state"] for e in evs if e["kind"] == "job.finished"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[tuple]:
    """The verdicts of an uninterrupted run."""
    from repo_fixture import make_bench_repo

    root = _project(make_bench_repo, tmp_path_factory.mktemp("reference") / "repo")
    code, out, err = ratchet("run", str(root), env=ENV, timeout=300)
    assert code == 0, err
    verdicts = _verdicts(events(root, out["result"]["run_id"]))
    assert [v[2] for v in verdicts] == ["accepted", "accepted"], (verdicts, err)  # the trial, the holdout
    return verdicts


def test_ctrl_c_with_tasks_in_flight_resumes_to_the_same_verdicts(make_repo, tmp_path: Path, reference):
    root = _project(make_repo, tmp_path / "repo")
    os.environ.update(ENV)
    try:
        code, _, err = interrupted_at(root, ["run", str(root)], lambda d: d["stage"] == "trial")
    finally:
        for key in ENV:
            os.environ.pop(key)
    try:
        assert code == 130, err
        run_id = _run_id(root)
        evs = events(root, run_id)
        assert not _verdicts(evs), "nothing may be judged on cancelled tasks"
        states = _finished_states(evs)
        assert "cancelled" in states and "unknown" not in states, states
        started = {e["data"]["job_id"] for e in evs if e["kind"] == "job.started"}
        finished = {e["data"]["job_id"] for e in evs if e["kind"] == "job.finished"}
        assert started <= finished, "every task the stop cancelled is recorded as such"
        assert not _queued(run_token(root / ".ratchet" / "runs" / run_id / "jobs")), "the stop scancelled them"

        code, out, err = ratchet("run", str(root), "--resume", run_id, env=ENV, timeout=300)
        assert code == 0, err
        evs = events(root, run_id)
        assert _verdicts(evs) == reference
        cancelled = [e["data"]["job_id"] for e in evs if e["kind"] == "job.finished"
                     and e["data"]["state"] == "cancelled"]
        rerun = [e["data"] for e in evs if e["kind"] == "job.finished" and e["data"]["job_id"] in cancelled
                 and e["data"]["state"] != "cancelled"]
        assert {d["job_id"] for d in rerun} == set(cancelled) and all(d["state"] == "ok" for d in rerun)
        code, out, err = ratchet("verify", run_id, "--dir", str(root))
        assert code == 0, (out, err)
    finally:
        _scancel_run(root)


CRASH_POINT = "before:job.finished:2"
"""Kill the kernel just before the first trial job's `job.finished` (the preflight measures the
baseline on one unit first): the other trial tasks are then running or queued, four at a time."""


def test_a_kernel_killed_with_tasks_queued_resumes_at_once_and_keeps_their_checkouts(make_repo, tmp_path: Path,
                                                                                      reference):
    root = _project(make_repo, tmp_path / "repo")
    try:
        crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                                 text=True, timeout=300, env={**os.environ, **ENV, CRASH_AT_ENV: CRASH_POINT})
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        run_id = _run_id(root)
        token = run_token(root / ".ratchet" / "runs" / run_id / "jobs")
        assert _queued(token), "tasks must still be queued or running for this test to mean anything"
        started = next(e["data"] for e in events(root, run_id) if e["kind"] == "run.started")
        assert started["job_token"] == token, "the run's token is recorded, for a resume from anywhere"

        code, out, err = ratchet("run", str(root), "--resume", run_id, env=ENV, timeout=300)
        assert code == 0, err
        evs = events(root, run_id)
        assert _verdicts(evs) == reference
        reasons = [e["data"]["reason"] for e in evs if e["kind"] == "job.finished"]
        assert not [r for r in reasons if "could not start" in r], reasons
        assert set(_finished_states(evs)) == {"ok"}
    finally:
        _scancel_run(root)


def test_a_foreign_job_with_a_recorded_id_is_refused_and_never_cancelled(make_repo, tmp_path: Path):
    root = _project(make_repo, tmp_path / "repo")
    foreign = ""
    try:
        crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                                 text=True, timeout=300, env={**os.environ, **ENV, CRASH_AT_ENV: CRASH_POINT})
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        run_id = _run_id(root)
        foreign = subprocess.run(["sbatch", "--parsable", "--array=0-0", "--job-name=someone-else",
                                  f"--output={tmp_path}/foreign-%a.log", "--wrap", "sleep 120"],
                                 capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
        ledger = root / ".ratchet" / "runs" / run_id / "events.jsonl"
        finished = {e["data"]["job_id"] for e in events(root, run_id) if e["kind"] == "job.finished"}
        victim = next(e["data"]["job_id"] for e in events(root, run_id)
                      if e["kind"] == "job.started" and e["data"]["job_id"] not in finished)

        def edit(event: dict[str, Any]) -> bool:
            if event["kind"] == "job.started" and event["data"]["job_id"] == victim:
                event["data"]["external_id"] = f"{foreign}_0"
                return True
            return False

        rechain(ledger, edit)
        code, out, err = ratchet("run", str(root), "--resume", run_id, env=ENV, timeout=120)
        assert code != 0 and out["error"]["code"] == "slurm.foreign_job", (out, err)
        assert re.search(rf"\b{foreign}_0\b", out["error"]["message"]), out["error"]["message"]
        time.sleep(1.0)
        assert _queued("someone-else") == [f"{foreign}_0"], "the foreign job must be left alone"
    finally:
        _scancel_run(root)
        if foreign:
            subprocess.run(["scancel", foreign], capture_output=True, check=False)
