"""Guardrails in real runs: a real git repository, a benchmark printing a guardrail key next to its
metric, the files agent, and `ratchet run` as a subprocess (docs/gate.md, Guardrails)."""

from __future__ import annotations

from pathlib import Path

from helpers import events, ratchet, use_files_agent
from repo_fixture import BENCH_PY

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
