"""`ratchet verify` re-derives a run's verdicts with the gate rules the run recorded: a verdict that
rules 2 reaches and rules 1 would not is found wrong once run.started claims rules 1, and a run whose
verdicts agree under both rules still verifies when it claims rules 1 (a run recorded before the
rules changed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import events, ratchet, rechain, use_files_agent
from repo_fixture import BENCH_PY

from ratchet.core.errors import EXIT_CHECK_FAILED

# x = 1: every 8 consecutive units gain about 1, one of them a little less (0.95). Under rules 1 the
# guard fires (the 0.95 lies far more than 6 MAD-based SDs below the tight others); under rules 2 it
# cannot (no unit is a loss), so the candidate is accepted and promoted.
TIGHT_GAINS_BENCH = BENCH_PY.replace(
    'print(json.dumps({"score": -(x - 3.0) ** 2 + noise, "x": x, "seed": seed}))',
    """unit = int(os.environ["RATCHET_UNIT"])
offsets = [0.0, 0.001, -0.001, 0.002, -0.002, 0.0005, -0.0005, -0.05]
print(json.dumps({"score": x * (1.0 + offsets[unit % 8]) + noise, "x": x, "seed": seed}))""",
)

GATE = """
[gate]
units = [8]
holdout_units = 8

[budget]
max_attempts = 1
"""


def _claim_rules(root: Path, run_id: str, rules: int) -> None:
    def edit(event: dict[str, Any]) -> bool:
        if event["kind"] != "run.started":
            return False
        event["data"]["gate"]["rules"] = rules
        return True

    rechain(root / ".ratchet" / "runs" / run_id / "events.jsonl", edit)


def _verdict_findings(root: Path, run_id: str) -> list[dict[str, Any]]:
    code, out, err = ratchet("verify", run_id, "--dir", str(root))
    assert code in (0, EXIT_CHECK_FAILED), err
    return [f for f in out["result"]["findings"] if f["code"] == "verify.verdict"]


def _run(make_repo, root: Path, bench: str) -> str:
    repo = make_repo(root, files={"bench.py": bench})
    use_files_agent(repo, {"1-gain": "x = 1.0\n"}, GATE)
    code, out, err = ratchet("run", str(repo))
    assert code == 0, err
    return str(out["result"]["run_id"])


def test_verify_rederives_with_the_recorded_rules(make_repo, tmp_path: Path):
    root = tmp_path / "tight"
    run_id = _run(make_repo, root, TIGHT_GAINS_BENCH)
    judged = [e["data"] for e in events(root, run_id) if e["kind"] == "trial.judged"]
    assert [(j["stage"], j["verdict"]) for j in judged][:2] == [("trial", "accepted"), ("confirm", "accepted")]
    assert _verdict_findings(root, run_id) == []

    _claim_rules(root, run_id, 1)
    findings = _verdict_findings(root, run_id)
    assert findings and any("harmful_tail" in f["message"] for f in findings), findings


def test_a_run_claiming_rules_1_whose_verdicts_agree_still_verifies(make_repo, tmp_path: Path):
    root = tmp_path / "plain"
    run_id = _run(make_repo, root, BENCH_PY)  # x = 1 scores -4 + noise against -9: a clear gain
    _claim_rules(root, run_id, 1)
    assert _verdict_findings(root, run_id) == []
