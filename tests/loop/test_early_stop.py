"""A candidate that fails on a unit stops its look at once, locally and on the real Slurm cluster:
the look's other jobs end `skipped`, the verdict is `candidate_failed`, `ratchet verify` re-derives
it; the run's end names the command that merges the champion, and a log shows one line per look."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, ratchet, use_files_agent
from repo_fixture import BENCH_PY, git, make_bench_repo
from test_slurm_campaign import PROBLEM

from ratchet.loop.kernel import CRASH_AT_ENV

SLOW_BENCH = BENCH_PY.replace("noise = random.Random(seed)",
                              "import time; time.sleep(0.5)\nnoise = random.Random(seed)")
"""The fixture's benchmark, half a second slower per job once its params read (a crash is at once)."""

SETTINGS = "[gate]\nunits = [6, 12]\nholdout_units = 4\nconfirm = false\n\n[compute]\nbackend = \"{backend}\"\n{slurm}"
LOOK = 12
"""Jobs of the first look: 6 units, both sides."""


def _project(root: Path, backend: str = "local", good: bool = True) -> Path:
    """A slow benchmark whose files agent proposes a crashing candidate, then (`good`) one that gains."""
    make_bench_repo(root, files={"bench.py": SLOW_BENCH})
    slurm = "[compute.slurm]\npoll_min_s = 0.2\npoll_max_s = 1.0\n" if backend == "slurm" else ""
    candidates = {"1-crash": 'x = "boom"\n', **({"2-good": "x = 3.0\n"} if good else {})}
    use_files_agent(root, candidates, append=SETTINGS.format(backend=backend, slurm=slurm))
    return root


def _assert_stopped_early(root: Path, run_id: str) -> None:
    evs = events(root, run_id)
    finished = [e["data"] for e in evs if e["kind"] == "job.finished" and e["data"]["attempt"] == 1]
    states = [d["state"] for d in finished]
    assert len(finished) == LOOK, f"every job of look 1 is recorded, none of look 2: {states}"
    assert all(d["unit"] < 6 for d in finished)
    assert states.count("ok") < LOOK and states.count("skipped") >= 1, states
    assert set(states) <= {"ok", "failed", "skipped"}, states
    assert "failed" in [d["state"] for d in finished if d["variant"] == "candidate"]
    for d in finished:
        if d["state"] == "skipped":
            assert d["value"] is None and "the candidate failed on unit" in d["reason"]
            assert d["units_charged"] == (1 if d["elapsed_s"] > 0 else 0)
    (judged,) = [e["data"] for e in evs if e["kind"] == "trial.judged" and e["data"]["attempt"] == 1]
    assert (judged["verdict"], judged["reason"]) == ("rejected", "candidate_failed")
    assert "skipped" in judged["reason_text"]
    code, out, err = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0 and out["ok"], out["result"]


def _run_and_merge(root: Path) -> str:
    head = git(root, "rev-parse", "HEAD")
    code, out, err = ratchet("run", str(root), timeout=900)
    assert code == 0, err
    r = out["result"]
    assert r["promotions"] == 1
    branch = f"ratchet/{r['run_id']}/champion"
    assert r["merge"] == f"git -C {shlex.quote(str(root))} merge --ff-only {branch}"
    assert git(root, "rev-parse", "HEAD") == head
    subprocess.run(shlex.split(r["merge"]), check=True, capture_output=True)
    assert git(root, "rev-parse", "HEAD") == r["champion"]["commit"]
    assert (root / "params.toml").read_text() == "x = 3.0\n"
    return str(r["run_id"])


def test_a_failing_candidate_stops_its_look_locally(tmp_path: Path):
    root = _project(tmp_path / "repo")
    _assert_stopped_early(root, _run_and_merge(root))


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")
def test_a_failing_candidate_stops_its_look_on_slurm(tmp_path: Path):
    root = _project(tmp_path / "repo", "slurm", good=False)  # one attempt: no promotion, no holdout to wait for
    code, out, err = ratchet("run", str(root), timeout=900)
    assert code == 0, err
    run_id = out["result"]["run_id"]
    _assert_stopped_early(root, run_id)
    started = [e["data"] for e in events(root, run_id) if e["kind"] == "job.started"]
    assert started and all(d["backend"] == "slurm" for d in started)


def test_a_log_shows_one_line_per_look_and_the_merge_command(tmp_path: Path):
    root = _project(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    looks = [line for line in proc.stderr.splitlines() if ": look " in line]
    assert looks[0].startswith("attempt 1 trial: look 1 of 2 done: ") and "skipped (the candidate failed)" in looks[0]
    assert looks[0].endswith("s elapsed")
    assert any(line.startswith("attempt 2 trial: look 1 of 2 done: 12/12 jobs, ") for line in looks), looks
    assert any(line.startswith("holdout: look 1 of 1 done: 8/8 jobs") for line in looks), looks
    assert len(looks) == len(set(looks)), "one line per look, not one per job"
    merge = [line for line in proc.stdout.splitlines() if line.startswith("merge the champion with: ")]
    assert merge and merge[0].endswith("/champion") and " merge --ff-only ratchet/" in merge[0]


def test_a_resume_after_the_failure_skips_the_rest_of_the_look_unrun(tmp_path: Path):
    root = make_bench_repo(tmp_path / "repo", files={"bench.py": SLOW_BENCH.replace("sleep(0.5)", "sleep(3)")})
    use_files_agent(root, {"1-crash": 'x = "boom"\n'}, append=SETTINGS.format(backend="local", slurm=""))
    env = {**os.environ, CRASH_AT_ENV: "after:job.finished:2"}  # the preflight's, then the first of the trial
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (run_id,) = [p.name for p in (root / ".ratchet" / "runs").iterdir()]
    before = [e["data"] for e in events(root, run_id) if e["kind"] == "job.finished"]
    assert (before[-1]["variant"], before[-1]["state"]) == ("candidate", "failed"), \
        "unit 0's candidate crashes at once while its champion sleeps: it ends first"
    code, out, err = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, err
    evs = events(root, run_id)
    resumed = next(i for i, e in enumerate(evs) if e["kind"] == "run.resumed")
    assert not [e for e in evs[resumed:] if e["kind"] == "job.started"], "nothing of the look runs again"
    after = [e["data"] for e in evs[resumed:] if e["kind"] == "job.finished"]
    assert len(after) == LOOK - 1 and {d["state"] for d in after} == {"skipped"}
    assert all(d["units_charged"] == 0 for d in after)
    _assert_stopped_early(root, run_id)
