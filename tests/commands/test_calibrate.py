"""`ratchet calibrate` end to end through the CLI on real benchmark repositories, and `ratchet check`
showing what it stored."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, interrupted_at, ratchet, set_contract
from repo_fixture import BENCH_PY, git
from scipy import stats as sps

from ratchet.core.stats.calibration import look_effects

TAIL = 1e-4
"""Each tail of the chi-square range an estimated SD is checked against: a correct estimator fails
one bound with probability 2e-4 (the unit seeds come from a random salt)."""


def _sd_range(sd: float, df: int) -> tuple[float, float]:
    """The (TAIL, 1 - TAIL) range of a sample SD with `df` degrees of freedom around the true `sd`."""
    return (sd * math.sqrt(sps.chi2.ppf(TAIL, df) / df), sd * math.sqrt(sps.chi2.ppf(1 - TAIL, df) / df))


def _calibrate(repo: Path, *args: str) -> dict:
    code, out, err = ratchet("calibrate", str(repo), *args)
    assert code == 0, (out, err)
    return out["result"]


def test_a_deterministic_benchmark_reports_its_seed_spread_and_no_repeat_noise(bench_repo: Path):
    r = _calibrate(bench_repo, "--seeds", "12", "--effect", "0.05")
    n = r["noise"]
    assert n["repeat_sd"] == 0.0 and n["deterministic"] and not n["constant"]
    noise = [random.Random(row["seed"]).gauss(0.0, 0.1) for row in r["values"]]  # bench.py's own noise
    assert n["seed_sd"] == pytest.approx(statistics.stdev(noise), rel=1e-9)
    low, high = _sd_range(0.1, 11)
    assert low <= n["seed_sd"] <= high, f"seed SD {n['seed_sd']} outside {low:.3f}..{high:.3f} around 0.1"
    assert n["paired_sd"] == pytest.approx(n["seed_sd"]), "a deterministic benchmark must plan with its seed SD"
    trial_1 = r["levels"][0]["looks"]
    assert all(look["detectable"] > 0 for look in trial_1)
    suggested = r["suggested_units"]["trial_1"]
    assert look_effects(n["paired_sd"], suggested, r["levels"][0]["level"])[-1].detectable <= 0.05
    assert json.loads((bench_repo / ".ratchet" / "calibration.json").read_text())["run_id"] == r["run_id"]

    log = events(bench_repo, r["run_id"])
    assert log[0]["data"]["mode"] == "calibrate" and log[-1]["kind"] == "run.stopped"
    assert log[-1]["data"]["stop_reason"] == "calibrated" and log[-1]["data"]["calibration"]["noise"] == n
    finished = [e["data"] for e in log if e["kind"] == "job.finished"]
    started = [e for e in log if e["kind"] == "job.started"]
    assert len(started) == len(finished) == 24, "every job runs: nothing may come from the cache"
    assert {d["stage"] for d in finished} == {"calibrate"} and not any(d["cached"] for d in finished)
    by_unit: dict[int, list[dict]] = {}
    for d in finished:
        by_unit.setdefault(d["unit"], []).append(d)
    assert all(len(pair) == 2 and pair[0]["seed"] == pair[1]["seed"] for pair in by_unit.values())
    assert len({pair[0]["seed"] for pair in by_unit.values()}) == 12


NOISY_BENCH = BENCH_PY.replace(
    "noise = random.Random(seed).gauss(0.0, 0.1)",
    "noise = random.Random(seed).gauss(0.0, 0.1) + random.SystemRandom().gauss(0.0, 0.2)")


def test_a_benchmark_noisy_per_run_reports_its_repeat_noise(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "noisy", files={"bench.py": NOISY_BENCH})
    r = _calibrate(repo, "--seeds", "16")
    n = r["noise"]
    assert not n["deterministic"]
    low, high = _sd_range(0.2, 16)  # the repeat variance has one degree of freedom per seed
    assert low <= n["repeat_sd"] <= high, f"repeat SD {n['repeat_sd']} outside {low:.3f}..{high:.3f} around 0.2"
    assert n["paired_sd_low"] <= n["paired_sd"] <= n["paired_sd_high"]
    assert n["paired_sd"] >= math.sqrt(2) * n["repeat_sd"] - 1e-12


def test_check_shows_the_stored_calibration_instead_of_a_guess(bench_repo: Path):
    code, before, _ = ratchet("check", str(bench_repo))
    assert code == 0 and before["result"]["detectable"]["calibration"] is None
    assert "not calibrated" in _human_check(bench_repo)

    r = _calibrate(bench_repo, "--seeds", "4")
    code, after, _ = ratchet("check", str(bench_repo))
    shown = after["result"]["detectable"]["calibration"]
    assert code == 0 and shown["run_id"] == r["run_id"] and shown["levels"] == r["levels"]
    assert shown["head_changed"] is False
    text = _human_check(bench_repo)
    assert f"calibrated by run {r['run_id']}" in text and "not calibrated" not in text

    (bench_repo / "params.toml").write_text("x = 1.0\n")
    git(bench_repo, "commit", "-q", "-am", "another champion")
    code, moved, _ = ratchet("check", str(bench_repo))
    assert code == 0 and moved["result"]["detectable"]["calibration"]["head_changed"] is True
    assert "HEAD has changed since" in _human_check(bench_repo)

    set_contract(bench_repo, replace={'command = "python3 bench.py"': 'command = "python3 ./bench.py"'})
    code, changed, _ = ratchet("check", str(bench_repo))
    assert code == 0 and "ignored" in changed["result"]["detectable"]["calibration"]
    assert any("other target settings (command changed" in w for w in changed["result"]["warnings"])


def _human_check(repo: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "ratchet", "check", str(repo)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_rev_measures_that_revision(bench_repo: Path):
    git(bench_repo, "checkout", "-q", "-b", "better")
    (bench_repo / "params.toml").write_text("x = 2.5\n")
    git(bench_repo, "commit", "-q", "-am", "better")
    git(bench_repo, "checkout", "-q", "main")
    r = _calibrate(bench_repo, "--seeds", "2", "--rev", "better")
    assert r["commit"] == git(bench_repo, "rev-parse", "better") and r["rev"] == "better"
    assert r["noise"]["mean"] > -1.0, "the score of x = 2.5 is -0.25 + noise; HEAD's would be -9"


def test_a_killed_calibration_never_blocks_a_run_and_is_not_resumable(bench_repo: Path):
    from ratchet.loop.kernel import CRASH_AT_ENV
    from ratchet.loop.life import interrupted_runs

    killed = subprocess.run([sys.executable, "-m", "ratchet", "calibrate", str(bench_repo), "--json"],
                            capture_output=True, timeout=120, env={**os.environ, CRASH_AT_ENV: "after:job.finished:1"})
    assert killed.returncode == -signal.SIGKILL
    (run_id,) = [p.name for p in (bench_repo / ".ratchet" / "runs").iterdir()]
    assert interrupted_runs(bench_repo) == []
    code, out, _ = ratchet("run", str(bench_repo), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "run.is_calibrate"


def test_a_benchmark_without_a_metric_stops_the_calibration_with_its_reason(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "silent", files={"bench.py": "print('hello')\n"})
    code, out, _ = ratchet("calibrate", str(repo), "--seeds", "2")
    assert code == 2 and out["error"]["code"] == "calibrate.too_few_seeds"
    assert "no_metric" in out["error"]["message"]
    (run_id,) = [p.name for p in (repo / ".ratchet" / "runs").iterdir()]
    stop = events(repo, run_id)[-1]["data"]
    assert (stop["stop_reason"], stop["detail"]) == ("calibrated", "calibrate.too_few_seeds")
    assert not (repo / ".ratchet" / "calibration.json").exists()


FLAKY_BENCH = ("import os, sys\nif os.environ['RATCHET_JOB_ID'].endswith('-u001-champion-2'):\n    sys.exit(1)\n"
               + BENCH_PY)
"""The fixture's benchmark, failing on the second measurement of the second seed only."""


def test_a_seed_with_a_failed_measurement_is_left_out_with_a_warning(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "flaky", files={"bench.py": FLAKY_BENCH})
    r = _calibrate(repo, "--seeds", "4")
    assert r["failed"] == 1 and r["noise"]["seeds"] == 3
    assert r["values"][1]["values"] is None and all(row["values"] for i, row in enumerate(r["values"]) if i != 1)
    assert any("1 of 4 seeds had a failed measurement" in w for w in r["warnings"])


@pytest.mark.parametrize(("args", "code"), [(["--seeds", "1"], "calibrate.bad_seeds"),
                                            (["--effect", "-0.1"], "calibrate.bad_effect"),
                                            (["--rev", "no-such-branch"], "git.bad_revision")])
def test_bad_arguments_are_refused_before_anything_runs(bench_repo: Path, args: list[str], code: str):
    exit_code, out, _ = ratchet("calibrate", str(bench_repo), *args)
    assert exit_code == 2 and out["error"]["code"] == code
    runs = bench_repo / ".ratchet" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_a_calibration_waits_for_no_run_it_would_skew(bench_repo: Path):
    from ratchet.ledger.project_lock import sole_run
    from ratchet.ledger.rundir import ensure_ratchet_dir

    ensure_ratchet_dir(bench_repo)
    with sole_run(bench_repo):
        code, out, _ = ratchet("calibrate", str(bench_repo), "--seeds", "2")
    assert code == 2 and out["error"]["code"] == "run.concurrent"


def test_an_examples_target_reports_its_val_size_and_runs_nothing(tmp_path: Path):
    root = tmp_path / "ex"
    assert ratchet("init", str(root), "--kind", "examples")[0] == 0
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    r = _calibrate(root, "--effect", "0.2")
    assert r["kind"] == "examples" and r["val"] > 0 and r["looks"][-1] <= r["val"]
    first = r["levels"][0]["looks"]
    assert all(look["detectable"] is None or 0 < look["detectable"] <= 1 for look in first)
    assert first[-1]["detectable"] is not None
    assert r["suggested_units"]["trial_1"] is not None
    assert not (root / ".ratchet" / "runs").exists() or not any((root / ".ratchet" / "runs").iterdir())


def test_help_lists_calibrate_as_built():
    proc = subprocess.run([sys.executable, "-m", "ratchet", "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    line = next(line for line in proc.stdout.splitlines() if " calibrate " in line)
    assert "not built" not in line


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"format": "ratchet.calibration.v1", "target": "x"}'])
def test_check_ignores_a_damaged_calibration_file_with_a_warning(bench_repo: Path, text: str):
    from ratchet.ledger.rundir import ensure_ratchet_dir

    (ensure_ratchet_dir(bench_repo) / "calibration.json").write_text(text)
    code, out, _ = ratchet("check", str(bench_repo))
    assert code == 0 and "ignored" in out["result"]["detectable"]["calibration"]
    assert any("calibration.json" in w and "ratchet calibrate" in w for w in out["result"]["warnings"])


def test_ctrl_c_stops_a_calibration_interrupted_with_its_jobs_killed(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "slow", files={"bench.py": "import time\ntime.sleep(120)\n" + BENCH_PY})
    code, out, _ = interrupted_at(repo, ["calibrate", str(repo), "--seeds", "2"], lambda job: True)
    assert code == 130 and out["error"]["code"] == "interrupted"
    (run_id,) = [p.name for p in (repo / ".ratchet" / "runs").iterdir()]
    last = events(repo, run_id)[-1]
    assert last["kind"] == "run.stopped" and last["data"]["stop_reason"] == "interrupted"
    assert last["data"]["detail"] == "calibrate" and not (repo / ".ratchet" / "calibration.json").exists()
