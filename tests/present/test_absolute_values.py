"""Absolute values next to every gain: the baseline's, the champion's and each candidate's raw means
in `status` (text and `--json`), the reports and the end of `ratchet run`, and the champion's
parameters for a search run. Checked against the ledger's own records and the champion commit."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import events, ratchet
from repo_fixture import git


def _judged(root: Path, run_id: str, stage: str) -> dict[int, dict]:
    return {e["data"]["attempt"]: e["data"] for e in events(root, run_id)
            if e["kind"] == "trial.judged" and e["data"]["stage"] == stage}


def test_status_shows_each_sides_mean_next_to_each_gain(finished_run):
    root, run_id = finished_run
    code, out, err = ratchet("status", run_id, "--dir", str(root))
    assert code == 0, err
    r = out["result"]
    trials, confirms = _judged(root, run_id, "trial"), _judged(root, run_id, "confirm")
    measured = [a for a in r["attempts"] if a["estimate"] is not None]
    assert measured, "the fixture run measured no attempt"
    for a in measured:
        d = trials[a["attempt"]]
        assert (a["champion_mean"], a["candidate_mean"]) == (d["champion_mean"], d["candidate_mean"])
        # the bench maximizes: a paired gain over the same units is the difference of the two means
        assert a["candidate_mean"] - a["champion_mean"] == pytest.approx(a["estimate"], abs=1e-9)
        if a["confirm"]:
            c = confirms[a["attempt"]]
            assert (a["confirm"]["champion_mean"], a["confirm"]["candidate_mean"]) == (
                c["champion_mean"], c["candidate_mean"])
    preflight = [e["data"]["value"] for e in events(root, run_id)
                 if e["kind"] == "job.finished" and e["data"]["stage"] == "preflight"]
    assert r["baseline"]["mean"] == pytest.approx(sum(preflight) / len(preflight))
    holdout = _judged(root, run_id, "holdout")
    assert len(holdout) == 1, "the fixture run promoted and measured its holdout"
    h = next(iter(holdout.values()))
    assert (r["holdout"]["baseline_mean"], r["holdout"]["champion_mean"]) == (h["champion_mean"], h["candidate_mean"])


def test_the_champions_parameters_are_those_of_its_commit(finished_run):
    root, run_id = finished_run
    code, out, err = ratchet("status", run_id, "--dir", str(root))
    assert code == 0, err
    champion = out["result"]["champion"]
    assert champion["attempt"] is not None, "the fixture run promoted nothing"
    in_tree = tomllib.loads(git(root, "show", f"{champion['commit']}:params.toml"))
    assert champion["params"] == pytest.approx({"x": in_tree["x"]})
    text = subprocess.run([sys.executable, "-m", "ratchet", "status", run_id, "--dir", str(root)],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "250"}, check=True).stdout
    assert f"best parameters: x={in_tree['x']:.4g}" in text
    assert "champion mean" in text and "candidate mean" in text


def test_report_md_shows_the_means_and_the_best_parameters(finished_run):
    root, run_id = finished_run
    code, out, err = ratchet("report", run_id, "--dir", str(root))
    assert code == 0, err
    report = (root / ".ratchet" / "runs" / run_id / "report.md").read_text()
    h = next(iter(_judged(root, run_id, "holdout").values()))
    assert f"from baseline {h['champion_mean']:.4g} to champion {h['candidate_mean']:.4g}" in report
    assert "| champion mean | candidate mean |" in report
    assert "Best parameters (the champion's, attempt" in report
    first = _judged(root, run_id, "trial")[1]
    assert f"| {first['champion_mean']:.4g} | {first['candidate_mean']:.4g} |" in report


def test_check_and_verdicts_name_the_share_of_alpha_and_the_level_the_same_way(finished_run):
    root, run_id = finished_run
    alpha, attempts = 0.05, 6  # the fixture's gate.alpha and budget.max_attempts (conftest SMALL_RUN)
    share_1 = alpha / sum(1.0 / t for t in range(1, attempts + 1))  # harmonic weight of attempt 1
    code, out, err = ratchet("check", str(root))
    assert code == 0, err
    row = out["result"]["gate"]["levels"][0]
    assert row["level"] == pytest.approx(share_1 ** 0.5) and row["confirm_level"] == pytest.approx(share_1 ** 0.5)
    recorded = _judged(root, run_id, "trial")[1]["level"]
    assert recorded == pytest.approx(row["level"]), "a verdict's level is the level check prints"
    text = subprocess.run([sys.executable, "-m", "ratchet", "check", str(root)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "250"}, check=True).stdout
    header = next(line for line in text.splitlines() if "share of alpha" in line and "level" in line and "┃" in line)
    first = next(line for line in text.splitlines() if line.startswith("│ 1 "))
    cells = [c.strip() for c in first.strip("│ ").split("│")]
    names = [c.strip() for c in header.strip("┃ ").split("┃")]
    assert float(cells[names.index("share of alpha")]) == pytest.approx(share_1, rel=1e-2)
    assert float(cells[names.index("level")]) == pytest.approx(share_1 ** 0.5, rel=1e-2)
    assert f"one test at its share of alpha, {share_1:.3g}" in text


def test_the_end_of_a_run_says_both_means_and_the_best_parameters(tmp_path: Path, small_run: str):
    from helpers import set_contract
    from repo_fixture import make_bench_repo

    root = make_bench_repo(tmp_path / "repo")
    set_contract(root, append=small_run.replace("max_attempts = 6", "max_attempts = 4"))
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "250"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    code, out, err = ratchet("status", "--dir", str(root))
    assert code == 0, err
    r = out["result"]
    b, c = r["baseline"]["mean"], r["champion"]["mean"]
    who = f"attempt {r['champion']['attempt']}" if r["champion"]["attempt"] else "baseline"
    assert f"champion: {who}, mean {c:.4g} as last measured (baseline mean {b:.4g})" in proc.stdout, proc.stdout
    if r["champion"]["params"]:
        assert f"best parameters: x={r['champion']['params']['x']:.4g}" in proc.stdout
    first = _judged(root, r["run_id"], "trial")[1]
    assert (f"attempt 1 trial: {first['verdict']} ({first['reason']}) estimate {first['estimate']:.4g} "
            f"(champion {first['champion_mean']:.4g} -> candidate {first['candidate_mean']:.4g})") in proc.stderr
