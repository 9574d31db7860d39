"""Guardrails in real runs: a real git repository, a benchmark printing a guardrail key next to its
metric, the files agent, and `ratchet run` as a subprocess (docs/gate.md, Guardrails)."""

from __future__ import annotations

from pathlib import Path

from helpers import events, ratchet, set_contract, use_files_agent
from repo_fixture import BENCH_PY, EXAMPLES_CONTRACT, git, make_examples_repo

GUARDED_BENCH = BENCH_PY.replace(
    'print(json.dumps({"score": -(x - 3.0) ** 2 + noise, "x": x, "seed": seed}))',
    """loss = float(params.get("loss", 0.0))
rng = random.Random(seed + 1)
out = {"score": x + noise, "accuracy": 0.9 - loss + rng.gauss(0.0, 0.01), "seed": seed}
if params.get("drop_accuracy"):
    del out["accuracy"]
print(json.dumps(out))""",
)

GATE = """
[gate]
units = [10, 20]
holdout_units = 10

[[gate.guardrails]]
metric = "accuracy"
direction = "max"
max_regression = 0.02

[budget]
max_attempts = 3
"""


def _judged(log: list[dict], stage: str = "trial") -> dict[int, dict]:
    return {e["data"]["attempt"]: e["data"] for e in log if e["kind"] == "trial.judged" and e["data"]["stage"] == stage}


def test_a_fast_but_worse_candidate_is_rejected_on_its_guardrail(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", files={"bench.py": GUARDED_BENCH})
    use_files_agent(repo, {"1-fast-worse": "x = 1.0\nloss = 0.1\n", "2-fast-as-good": "x = 1.0\nloss = 0.0\n",
                           "3-no-accuracy": "x = 2.0\ndrop_accuracy = true\n"}, GATE)
    code, out, err = ratchet("run", str(repo))
    assert code == 0, err
    log = events(repo, out["result"]["run_id"])
    judged = _judged(log)

    worse = judged[1]
    assert (worse["verdict"], worse["reason"]) == ("rejected", "guardrail"), worse
    assert worse["guardrails"][0]["name"] == "accuracy" and worse["guardrails"][0]["status"] == "broken"
    assert worse["guardrails"][0]["estimate"] < -0.05 and worse["guardrails"][0]["allowance"] == 0.02
    assert "Guardrail accuracy regressed beyond its allowance" in worse["reason_text"]

    good = judged[2]
    assert (good["verdict"], good["reason"]) == ("accepted", "significant_gain"), good
    check = good["guardrails"][0]
    assert check["status"] == "passed" and check["bound"] >= -0.02
    assert _judged(log, "confirm")[2]["guardrails"][0]["status"] == "passed", "the confirmation measures it too"

    missing = judged[3]
    assert (missing["verdict"], missing["reason"]) == ("rejected", "candidate_failed"), missing
    assert "guardrail" in missing["reason_text"] and "'accuracy'" in missing["reason_text"]

    finished = [e["data"] for e in log if e["kind"] == "job.finished" and e["data"]["state"] == "ok"]
    assert finished and all(set(d["guardrails"]) == {"accuracy"} for d in finished), "every job records it"
    holdout = _judged(log, "holdout")[0]
    assert holdout["guardrails"][0]["name"] == "accuracy"

    code, status, err = ratchet("status", "--dir", str(repo))
    assert code == 0, err
    rows = {a["attempt"]: a for a in status["result"]["attempts"]}
    assert rows[1]["guardrails"][0]["status"] == "broken" and rows[2]["confirm"]["guardrails"]
    assert status["result"]["holdout"]["guardrails"][0]["name"] == "accuracy"
    report = Path(out["result"]["report"]).read_text()
    assert "guardrail accuracy: change" in report and "Guardrails of the holdout" in report
    code, html, err = ratchet("report", out["result"]["run_id"], "--dir", str(repo), "--html")
    assert code == 0, err
    assert "guardrail accuracy: change" in Path(html["result"]["report"]).read_text()
    code, verified, err = ratchet("verify", out["result"]["run_id"], "--dir", str(repo))
    assert code == 0, (verified, err)


def test_check_prints_the_regression_each_guardrail_lets_through(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", files={"bench.py": GUARDED_BENCH})
    use_files_agent(repo, {"1-fast": "x = 1.0\n"}, GATE)
    code, out, err = ratchet("check", str(repo))
    assert code == 0, err
    (g,) = out["result"]["detectable"]["guardrails"]
    assert g["name"] == "accuracy" and g["allowance"] == 0.02 and g["max_sd"] == 0.02 / g["detectable_sd"]


EXAMPLES_GUARDED = EXAMPLES_CONTRACT.replace('''[[target.checks]]
type = "exact_match"
''', '''[[target.checks]]
type = "normalized_match"
name = "content"

[[target.checks]]
type = "regex_match"
pattern = "[A-Z0-9 ]+"
name = "upper"
''').replace("[budget]", '''[[gate.guardrails]]
metric = "content"
max_regression = 0.3

[budget]''')

# Upper-cases every word, but drops the second word of every other example: those now pass `upper` and fail
# `content` (the baseline, echoing its input, passes `content` everywhere and `upper` nowhere).
HALF = """import sys
text = sys.stdin.read().strip()
number = int(text.split()[0][4:])
print(text.upper() if number % 2 == 0 else text.split()[0].upper())
"""


def test_an_examples_candidate_that_breaks_a_named_check_is_rejected_on_it(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r", EXAMPLES_GUARDED)
    (root / "candidates" / "1-same").rename(root / "candidates" / "0-unused")
    (root / "candidates" / "0-unused" / "solution.py").write_text(HALF)
    (root / "candidates" / "0-unused").rename(root / "candidates" / "1-half")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "candidates")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    judged = _judged(events(root, out["result"]["run_id"]))
    assert (judged[1]["verdict"], judged[1]["reason"]) == ("rejected", "guardrail"), judged[1]
    assert judged[1]["guardrails"][0]["name"] == "content" and judged[1]["guardrails"][0]["estimate"] < -0.3
    assert (judged[2]["verdict"], judged[2]["reason"]) == ("accepted", "significant_gain"), judged[2]
    assert judged[2]["guardrails"][0]["status"] == "passed" and judged[2]["guardrails"][0]["estimate"] == 0.0
    shards = [e["data"] for e in events(root, out["result"]["run_id"])
              if e["kind"] == "job.finished" and e["data"]["stage"] == "trial" and e["data"]["attempt"] == 1]
    assert all(set(d["guardrails"]) == {"content"} for d in shards), "each shard records the check's pass rate"


OTHER_BENCH = """import json, os, random, tomllib
with open("params.toml", "rb") as f:
    params = tomllib.load(f)
seed = int(os.environ["OTHER_SEED"])
print("warming up")
print(json.dumps({"throughput": 100.0 - 10.0 * float(params.get("y", 0.0)) + random.Random(seed).gauss(0.0, 0.5)}))
"""

SUITE = """[[target.suite]]
name = "other_bench"
command = "python3 other.py"
metric = "throughput"
direction = "max"
seed_env = "OTHER_SEED"
timeout_s = 60
max_regression = 2.0

"""

SUITE_GATE = """
[gate]
units = [10, 20]
holdout_units = 10
confirm = false

[budget]
max_attempts = 2
"""


def test_a_suite_member_that_breaks_rejects_a_candidate_that_wins_its_own_benchmark(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", files={"bench.py": GUARDED_BENCH, "other.py": OTHER_BENCH})
    use_files_agent(repo, {"1-breaks-other": "x = 1.0\ny = 1.0\n", "2-spares-other": "x = 1.0\ny = 0.0\n"},
                    SUITE_GATE)
    set_contract(repo, replace={"[scope]": SUITE + "[scope]"})
    code, out, err = ratchet("run", str(repo))
    assert code == 0, err
    log = events(repo, out["result"]["run_id"])
    judged = _judged(log)
    assert (judged[1]["verdict"], judged[1]["reason"]) == ("rejected", "guardrail"), judged[1]
    assert judged[1]["guardrails"][0]["name"] == "other_bench" and judged[1]["guardrails"][0]["status"] == "broken"
    assert "Guardrail other_bench regressed" in judged[1]["reason_text"]
    assert (judged[2]["verdict"], judged[2]["reason"]) == ("accepted", "significant_gain"), judged[2]
    jobs = [e["data"] for e in log if e["kind"] == "job.finished" and e["data"]["state"] == "ok"]
    assert jobs and all(set(d["guardrails"]) == {"other_bench"} for d in jobs), "each job runs the suite member"


def test_a_resumed_run_reuses_the_recorded_guardrail_values(make_repo, tmp_path: Path):
    import os
    import signal
    import subprocess
    import sys

    repo = make_repo(tmp_path / "repo", files={"bench.py": GUARDED_BENCH})
    use_files_agent(repo, {"1-fast-as-good": "x = 1.0\n"}, GATE.replace("max_attempts = 3", "max_attempts = 1"))
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(repo), "--json"], capture_output=True,
                             env={**os.environ, "RATCHET_TEST_CRASH_AT": "after:job.finished:12"}, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((repo / ".ratchet" / "runs").iterdir()).name
    code, out, err = ratchet("run", str(repo), "--resume", run_id)
    assert code == 0, err
    log = events(repo, run_id)
    judged = _judged(log)
    assert (judged[1]["verdict"], judged[1]["guardrails"][0]["status"]) == ("accepted", "passed"), judged[1]
    ids = [e["data"]["job_id"] for e in log if e["kind"] == "job.finished"]
    assert len(ids) == len(set(ids)), "a resume measures no finished job again"
    code, verified, err = ratchet("verify", run_id, "--dir", str(repo))
    assert code == 0, (verified, err)
