"""`ratchet calibrate` records the skewness of its A/A differences, and `ratchet check` warns from the
stored calibration when they are far from symmetric."""

from __future__ import annotations

import json
import math
from pathlib import Path

from helpers import events, ratchet
from repo_fixture import BENCH_PY
from scipy import stats as sps

SEEDS = 20

# The second repeat of unit u loses an exponential quantile fixed by u: over 20 seeds the A/A
# differences (second - first) are exactly -q_u, u = 0..19, left-skewed whatever the seeds drawn.
REPEAT_LOSS_BENCH = BENCH_PY.replace(
    'print(json.dumps({"score": -(x - 3.0) ** 2 + noise, "x": x, "seed": seed}))',
    """unit = int(os.environ["RATCHET_UNIT"])
second = os.environ["RATCHET_JOB_ID"].endswith("-2")
loss = -math.log(1.0 - ((unit % 20) + 0.5) / 20) if second else 0.0
print(json.dumps({"score": -(x - 3.0) ** 2 + noise - loss, "x": x, "seed": seed}))""",
).replace("import json, os", "import json, math, os")


def _expected_g1() -> float:
    return float(sps.skew([math.log(1.0 - (u + 0.5) / 20) for u in range(20)], bias=False))


def test_check_warns_from_a_stored_calibration_whose_aa_differences_are_skewed(make_repo, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", files={"bench.py": REPEAT_LOSS_BENCH})
    code, out, err = ratchet("calibrate", str(repo), "--seeds", str(SEEDS))
    assert code == 0, err
    cal = out["result"]
    pairs = [row["values"] for row in cal["values"]]
    d = [b - a for a, b in pairs]
    assert math.isclose(cal["skewness"], float(sps.skew(d, bias=False)), rel_tol=1e-9)
    assert math.isclose(cal["skewness"], _expected_g1(), rel_tol=1e-6) and cal["skewness"] < -1.0
    assert any("A/A differences" in w and "left-skewed" in w for w in cal["warnings"]), cal["warnings"]
    stored = json.loads((repo / ".ratchet" / "calibration.json").read_text())
    assert stored["skewness"] == cal["skewness"]
    assert events(repo, cal["run_id"])[-1]["data"]["calibration"]["skewness"] == cal["skewness"]

    code, out, err = ratchet("check", str(repo))
    assert code == 0, err
    shown = out["result"]["detectable"]["calibration"]
    assert math.isclose(shown["skewness"], cal["skewness"], rel_tol=1e-12)
    said = [w for w in out["result"]["warnings"] if "A/A differences" in w]
    assert said == [shown["skew_warning"]], out["result"]["warnings"]
    assert f"left-skewed (G1 = {cal['skewness']:+.2f} over {SEEDS} units" in said[0]
    assert "1 - Exp(1)" in said[0] and "of 20-attempt runs (benchmarks/results/skewed_nulls.md)" in said[0]
    assert 'gate.test = "betting"' in said[0]


def test_check_says_nothing_of_skew_for_a_deterministic_calibration(bench_repo: Path):
    code, out, err = ratchet("calibrate", str(bench_repo), "--seeds", "3")
    assert code == 0, err
    assert out["result"]["skewness"] is None
    code, out, err = ratchet("check", str(bench_repo))
    assert code == 0, err
    assert out["result"]["detectable"]["calibration"]["skew_warning"] is None
    assert not any("skewed" in w for w in out["result"]["warnings"])
