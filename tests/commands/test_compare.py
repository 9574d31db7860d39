"""`ratchet compare BASE CANDIDATE` end to end on a real temporary git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import events, interrupted_at, ratchet, set_contract
from repo_fixture import BENCH_PY, git


def _branch(root: Path, name: str, files: dict[str, str]) -> None:
    git(root, "checkout", "-q", "-b", name)
    for rel, text in files.items():
        (root / rel).write_text(text)
    git(root, "commit", "-q", "-am", name)
    git(root, "checkout", "-q", "main")


@pytest.fixture
def repo(bench_repo: Path) -> Path:
    set_contract(bench_repo, append="[gate]\nunits = [6, 12]\n")
    _branch(bench_repo, "better", {"params.toml": "x = 2.5\n"})
    _branch(bench_repo, "crash", {"params.toml": "x = 'not a number'\n"})
    _branch(bench_repo, "silent", {"bench.py": "print('hello')\n"})
    loud = "import sys\nsys.stdout.write('log line ' * 1_000_000 + '\\n')\n"  # ~9 MB, past the 8 MiB cap
    _branch(bench_repo, "loud", {"params.toml": "x = 2.5\n", "bench.py": loud + BENCH_PY})
    return bench_repo


def test_a_real_gain_is_accepted_and_a_second_compare_runs_no_job(repo: Path):
    code, out, err = ratchet("compare", "main", "better", "--dir", str(repo))
    assert code == 0, err
    r = out["result"]
    assert r["verdict"] == "accepted" and r["estimate"] > 0 and r["interval"][0] > 0
    assert len(r["units_table"]) == r["units"]
    code, out2, err = ratchet("compare", "main", "better", "--dir", str(repo))
    assert code == 0, err
    r2 = out2["result"]
    assert (r2["verdict"], r2["estimate"], r2["p_value"]) == (r["verdict"], r["estimate"], r["p_value"])
    started = [e for e in events(repo, r2["run_id"]) if e["kind"] == "job.started"]
    assert started == [], "the second compare of the same pair re-ran jobs instead of using the cache"
    (judged,) = [e["data"] for e in events(repo, r["run_id"]) if e["kind"] == "trial.judged"]
    assert judged["candidate_mean"] > judged["champion_mean"], "judged as a campaign's trial is, with both means"
    code, out, _ = ratchet("verify", r["run_id"], "--dir", str(repo))
    assert code == 0 and out["result"]["verified"], out


def test_identical_trees_are_never_accepted_and_run_no_job(repo: Path):
    code, out, err = ratchet("compare", "main", "main", "--dir", str(repo))
    assert code == 0, err
    assert out["result"]["verdict"] == "rejected" and out["result"]["reason"] == "no_change"
    assert not [e for e in events(repo, out["result"]["run_id"]) if e["kind"] == "job.started"]


@pytest.mark.parametrize("branch", ["crash", "silent"])
def test_a_candidate_that_fails_or_prints_no_metric_is_never_accepted(repo: Path, branch: str):
    code, out, err = ratchet("compare", "main", branch, "--dir", str(repo))
    assert code == 0, err
    assert out["result"]["verdict"] == "rejected" and out["result"]["reason"] == "candidate_failed"
    detail = {"crash": "exit code 1", "silent": "no_metric"}[branch]
    assert "First failure" in out["result"]["reason_text"] and detail in out["result"]["reason_text"]


def test_unknown_revision_is_bad_input(repo: Path):
    code, out, _ = ratchet("compare", "main", "no-such-branch", "--dir", str(repo))
    assert code == 2 and out["error"]["code"] == "git.bad_revision"
    assert "no-such-branch" in out["error"]["message"]


def test_a_metric_printed_after_more_than_the_output_cap_is_still_read(repo: Path):
    code, out, err = ratchet("compare", "main", "loud", "--dir", str(repo))
    assert code == 0, err
    assert out["result"]["verdict"] == "accepted", out["result"]["reason_text"]


def test_a_killed_compare_never_blocks_a_run_and_is_not_resumable(repo: Path):
    import os
    import signal
    import subprocess
    import sys

    from ratchet.loop.kernel import CRASH_AT_ENV
    from ratchet.loop.life import interrupted_runs

    killed = subprocess.run([sys.executable, "-m", "ratchet", "compare", "main", "better", "--dir", str(repo),
                             "--json"], capture_output=True, timeout=120,
                            env={**os.environ, CRASH_AT_ENV: "after:trial.planned:1"})
    assert killed.returncode == -signal.SIGKILL
    (run_id,) = [p.name for p in (repo / ".ratchet" / "runs").iterdir()]
    assert interrupted_runs(repo) == []
    code, out, _ = ratchet("run", str(repo), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "run.is_compare"


def test_ctrl_c_stops_a_compare_interrupted_with_its_jobs_killed(repo: Path):
    _branch(repo, "slow", {"bench.py": "import time\ntime.sleep(120)\n" + BENCH_PY})
    code, out, _ = interrupted_at(repo, ["compare", "main", "slow", "--dir", str(repo)],
                                  lambda job: job["variant"] == "candidate")
    assert code == 130 and out["error"]["code"] == "interrupted"
    (run_id,) = [p.name for p in (repo / ".ratchet" / "runs").iterdir()]
    evs = events(repo, run_id)
    assert evs[-1]["kind"] == "run.stopped" and evs[-1]["data"]["stop_reason"] == "interrupted"
    assert evs[-1]["data"]["detail"] == "compare" and not [e for e in evs if e["kind"] == "trial.judged"]
