"""`ratchet init`: scaffolds that can promote under the real gate, a benchmark built the safe way
(candidate code in a subprocess), per-pair noise that does not cancel, the commit step said, and
the README's commands followed on a new project to a promotion."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ratchet
from repo_fixture import FIXTURE_IDENTITY, git

from ratchet.commands.check import check_report
from ratchet.commands.init import scaffold

REPO = Path(__file__).resolve().parents[2]


def _bench(root: Path, seed: int) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "RATCHET_SEED": str(seed)}
    return subprocess.run([sys.executable, "bench.py"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)


def _error(root: Path, seed: int) -> float:
    run = _bench(root, seed)
    assert run.returncode == 0, run.stderr
    return float(re.findall(r'"error": ([-0-9.e]+)', run.stdout)[-1])


def test_examples_scaffold_can_accept_at_trial_1_under_the_default_gate(tmp_path: Path):
    scaffold(tmp_path / "e", "examples")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "start")):  # check refuses what run refuses
        git(tmp_path / "e", *args)
    report = check_report(tmp_path / "e")
    sizes = report["examples"]
    assert sizes["val"] >= 40 and sizes["test"] >= 30, sizes
    first = report["gate"]["levels"][0]
    # the exact McNemar test's smallest p at the first look (all discordant pairs won) is 0.5**10
    assert first["min_p_first"] == pytest.approx(0.5 ** sizes["looks"][0])
    assert first["min_p_first"] <= first["increments"][0] and first["reachable_first"]
    assert sizes["mde_first_trial"] is not None and sizes["mde_first_trial"] < 0.5
    assert not [w for w in report["warnings"] if "too wide" in w or "check_error" in w], report["warnings"]


def test_benchmark_scaffold_noise_does_not_cancel_within_a_pair(tmp_path: Path):
    root = tmp_path / "b"
    scaffold(root, "benchmark")
    baseline = [_error(root, seed) for seed in range(1, 7)]
    (root / "params.toml").write_text("trim = 0.3\n")
    candidate = [_error(root, seed) for seed in range(1, 7)]
    gains = [b - c for b, c in zip(baseline, candidate, strict=True)]
    assert min(gains) > 0, gains  # trimming the outliers really helps
    assert statistics.stdev(gains) > 0.01, gains  # paired differences vary: intervals have a width


def test_benchmark_scaffold_keeps_candidate_code_out_of_the_metric(tmp_path: Path):
    root = tmp_path / "b"
    scaffold(root, "benchmark")
    honest = _error(root, 3)
    (root / "solve.py").write_text(
        "import atexit, json\n"
        "atexit.register(lambda: print(json.dumps({'error': 0.0})))\n"
        "print(1.0)\n"
    )
    run = _bench(root, 3)
    assert run.returncode != 0 and "could not convert" in run.stderr  # a failed measurement, never a score
    (root / "solve.py").write_text("import os\nprint(os.environ.get('RATCHET_SEED', 'none'))\n")
    run = _bench(root, 3)
    assert run.returncode != 0 and "none" in run.stderr  # the child never sees the seed
    assert honest > 0


def test_init_says_that_run_needs_a_commit(tmp_path: Path):
    code, out, _ = ratchet("init", str(tmp_path / "p"))
    assert code == 0
    assert "commit" in out["result"]["note"] and "committed tree" in out["result"]["note"]
    assert out["result"]["next"][0].startswith("git ") and "commit" in out["result"]["next"][0]
    human = subprocess.run([sys.executable, "-m", "ratchet", "init", str(tmp_path / "q")], capture_output=True,
                           text=True, timeout=60)
    assert "commit" in human.stdout and f"ratchet run {tmp_path / 'q'}" in human.stdout


def _readme_project_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using it on your project", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readme_commands_take_a_new_project_to_a_promotion(tmp_path: Path):
    commands = _readme_project_commands()
    assert commands[0].startswith("ratchet init my-project")
    bin_dir = tmp_path / "bin"  # `ratchet` on PATH, as the README says to put it
    bin_dir.mkdir()
    (bin_dir / "ratchet").write_text(f"#!/bin/sh\nexec {sys.executable} -m ratchet \"$@\"\n")
    (bin_dir / "ratchet").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(FIXTURE_IDENTITY, PATH=f"{bin_dir}:{env['PATH']}", GIT_CONFIG_GLOBAL="/dev/null",
               GIT_CONFIG_NOSYSTEM="1")
    for command in commands:
        if command.startswith("ratchet "):
            command += " --json"
        proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"{command}: {proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        if command.startswith("ratchet run "):
            result = json.loads(proc.stdout)["result"]
            assert result["promotions"] >= 1, result
            assert result["holdout"]["verdict"] == "accepted", result
