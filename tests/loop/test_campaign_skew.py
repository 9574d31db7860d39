"""The skewness of a trial's paired differences, recorded by a real `ratchet run` and warned about by
the report and `ratchet report --attempt`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from helpers import events, ratchet, use_files_agent
from repo_fixture import BENCH_PY
from scipy import stats as sps

from ratchet.core.stats.skew import nearest_null

SKEWED_BENCH = BENCH_PY.replace(
    'print(json.dumps({"score": -(x - 3.0) ** 2 + noise, "x": x, "seed": seed}))',
    """unit = int(os.environ["RATCHET_UNIT"])
# x = 1: a gain of 2 minus an exponential quantile fixed by the unit, so every 20 consecutive units hold
# the same left-skewed set of differences (G1 about -2) whatever their seeds; x = 0 (the champion): 0
loss = -math.log(1.0 - ((unit % 20) + 0.5) / 20)
print(json.dumps({"score": x * (2.0 - loss) + noise, "x": x, "seed": seed}))""",
).replace("import json, os", "import json, math, os")

GATE = """
[gate]
units = [20]
holdout_units = 20

[budget]
max_attempts = 1
"""


def _quantile_g1() -> float:
    d = [2.0 - -math.log(1.0 - (i + 0.5) / 20) for i in range(20)]
    return float(sps.skew(d, bias=False))


def test_a_trial_records_the_skewness_of_its_paired_differences_and_the_report_warns(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", files={"bench.py": SKEWED_BENCH})
    use_files_agent(repo, {"1-skewed": "x = 1.0\n"}, GATE)
    code, out, err = ratchet("run", str(repo))
    assert code == 0, err
    run_id = out["result"]["run_id"]
    log = events(repo, run_id)
    judged = {e["data"]["stage"]: e["data"] for e in log if e["kind"] == "trial.judged"}
    assert judged["trial"]["verdict"] == "accepted" and judged["confirm"]["verdict"] == "accepted", judged

    for stage in ("trial", "confirm"):
        values: dict[str, dict[int, float]] = {"champion": {}, "candidate": {}}
        for e in log:
            if e["kind"] == "job.finished" and e["data"]["stage"] == stage and e["data"]["attempt"] == 1:
                values[e["data"]["variant"]][e["data"]["unit"]] = e["data"]["value"]
        units = sorted(values["candidate"])[: judged[stage]["units"]]
        d = np.array([values["candidate"][u] - values["champion"][u] for u in units])
        assert len(d) == 20
        recorded = judged[stage]["skewness"]
        assert recorded == sps.skew(d, bias=False) or math.isclose(recorded, sps.skew(d, bias=False), rel_tol=1e-9)
        assert math.isclose(recorded, _quantile_g1(), rel_tol=1e-6), "the bench fixes d's set per 20 units"
        assert recorded < -1.0

    report = Path(out["result"]["report"]).read_text()
    warnings = report.split("## Warnings", 1)[1].split("\n## ", 1)[0]
    assert f"attempt 1's accepted trial are left-skewed (G1 = {_quantile_g1():+.2f} over 20 units" in warnings
    exp_left = nearest_null(_quantile_g1())
    assert exp_left.name == "1 - Exp(1) (exponential, left-skewed)" and exp_left.name in warnings
    assert f"about {100 * exp_left.run_rate:.0f}% of 20-attempt runs" in warnings
    assert 'gate.test = "betting"' in warnings

    code, shown, err = ratchet("report", run_id, "--dir", str(repo), "--attempt", "1")
    assert code == 0, err
    assert shown["result"]["stages"]["trial"]["skewness"] == judged["trial"]["skewness"]

    code, html, err = ratchet("report", run_id, "--dir", str(repo), "--html")
    assert code == 0, err
    assert 'id="warnings"' in Path(html["result"]["report"]).read_text()


def test_a_symmetric_trial_gives_the_report_no_skew_warning(bench_repo: Path):
    """The fixture's bench: the seed's noise cancels in d, so every difference is the same (no spread)."""
    use_files_agent(bench_repo, {"1-good": "x = 3.0\n"}, GATE)
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    judged = [e["data"] for e in events(bench_repo, out["result"]["run_id"]) if e["kind"] == "trial.judged"]
    assert [j["skewness"] for j in judged if j["stage"] in ("trial", "confirm")] == [None, None]
    report = Path(out["result"]["report"]).read_text()
    assert "left-skewed" not in report and "right-skewed" not in report
