"""`ratchet run` end to end on real temporary git repositories: real jobs, real ledger, real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import events, ratchet, set_contract, use_files_agent
from repo_fixture import git

FAST_GATE = """
[gate]
units = [6, 12]
holdout_units = 12
"""


def _status(root: Path, run_id: str) -> dict:
    code, out, err = ratchet("status", run_id, "--dir", str(root))
    assert code == 0, err
    return out["result"]


def test_search_agent_finds_and_promotes_a_real_gain(bench_repo: Path):
    set_contract(bench_repo, append=FAST_GATE + "[budget]\nmax_attempts = 4\n")
    head_before = git(bench_repo, "rev-parse", "HEAD")
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    result = out["result"]
    assert result["promotions"] >= 1, err
    assert result["stop_reason"] == "budget_exhausted" and result["budget"] == "max_attempts"
    assert result["holdout"]["estimate"] > 0 and result["holdout"]["units"] == 12
    # The promotion is a commit on the run's champion branch; the user's checkout is untouched.
    branch = f"ratchet/{result['run_id']}/champion"
    assert git(bench_repo, "rev-parse", branch) == result["champion"]["commit"]
    assert "Confirmed gain" in git(bench_repo, "log", "-1", "--format=%B", branch)
    assert git(bench_repo, "rev-parse", "HEAD") == head_before
    assert git(bench_repo, "status", "--porcelain") == ""
    assert (bench_repo / "params.toml").read_text() == "x = 0.0\n"
    report = Path(result["report"]).read_text()
    assert "Headline: the holdout" in report and (Path(result["report"]).parent / "plots" / "champion.png").exists()


def _candidates(root: Path) -> None:
    c = root / "candidates"
    (c / "1-good").mkdir(parents=True)
    (c / "1-good" / "params.toml").write_text("x = 3.0\n")
    (c / "1-good" / "REPORT.md").write_text("Move x to the optimum.\n")
    (c / "2-bad").mkdir()
    (c / "2-bad" / "params.toml").write_text("x = -4.0\n")
    (c / "3-broken.patch").write_text("--- a/nothere.txt\n+++ b/nothere.txt\n@@ -1 +1 @@\n-a\n+b\n")
    (c / "4-protected").mkdir()
    (c / "4-protected" / "bench.py").write_text("print('{\"score\": 1000}')\n")
    (c / "5-same").mkdir()
    (c / "5-same" / "params.toml").write_text("x = 3.0\n")


def test_files_agent_good_bad_broken_protected_identical(bench_repo: Path):
    _candidates(bench_repo)
    set_contract(bench_repo, replace={'kind = "search"': 'kind = "files"\n[agent.files]\npath = "candidates/"'},
                 append=FAST_GATE)
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    run_id = out["result"]["run_id"]
    assert out["result"]["stop_reason"] == "agent_stopped"
    rows = {a["attempt"]: a for a in _status(bench_repo, run_id)["attempts"]}
    assert rows[1]["verdict"] == "accepted"
    assert rows[2]["verdict"] == "rejected" and rows[2]["reason"] in ("futility", "not_significant")
    assert rows[3]["verdict"] == "rejected" and rows[3]["reason"] == "invalid_candidate"
    assert "does not apply" in rows[3]["reason_text"]
    assert rows[4]["verdict"] == "rejected" and rows[4]["reason"] == "scope_violation"
    assert "bench.py" in rows[4]["reason_text"]
    # After promoting 1-good, 5-same equals the champion: nothing to measure.
    assert rows[5]["verdict"] == "rejected" and rows[5]["reason"] == "no_change"
    jobs_by_attempt = {e["data"]["attempt"] for e in events(bench_repo, run_id) if e["kind"] == "job.started"}
    assert 3 not in jobs_by_attempt and 4 not in jobs_by_attempt and 5 not in jobs_by_attempt
    assert out["result"]["holdout"]["estimate"] > 5.0  # -(0-3)^2 = -9 -> 0: a gain of about 9


@pytest.mark.parametrize(
    "budget, text",
    [
        ("max_attempts", "max_attempts = 2\n"),
        ("max_evaluations", "max_evaluations = 150\n"),
        ("max_wall", 'max_wall = "1s"\n'),
        ("max_cpu_hours", "max_cpu_hours = 0.000001\n"),
    ],
)
def test_each_budget_stops_the_run_and_is_named(bench_repo: Path, budget: str, text: str):
    set_contract(bench_repo, append=FAST_GATE + "[budget]\n" + text)
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    result = out["result"]
    assert result["stop_reason"] == "budget_exhausted" and result["budget"] == budget, err
    used = _status(bench_repo, result["run_id"])["budget"]["used"]
    if budget == "max_attempts":
        assert used["attempts"] == 2
    if budget == "max_evaluations":
        assert used["evaluations"] <= 150


NO_EFFECT_BENCH = """\
import json, random
# The tunable is read but has no effect: every run draws fresh, independent noise.
print(json.dumps({"score": random.SystemRandom().gauss(0.0, 1.0)}))
"""


def test_a_tunable_with_no_effect_promotes_nothing_in_most_seeded_runs(make_repo, tmp_path: Path):
    seeds = [11, 22, 33, 44, 55]  # fixed in advance, not tuned
    promoted = 0
    for seed in seeds:
        root = make_repo(tmp_path / f"r{seed}", files={"bench.py": NO_EFFECT_BENCH})
        set_contract(root, replace={"seed = 0": f"seed = {seed}"},
                     append=FAST_GATE + "confirm = true\n[budget]\nmax_attempts = 4\n")
        code, out, err = ratchet("run", str(root))
        assert code == 0, err
        promoted += out["result"]["promotions"] > 0
    # Under the campaign rule P(any promotion) <= alpha = 0.05 per run; 2 of 5 would be p < 0.03.
    assert promoted <= 1, f"{promoted} of {len(seeds)} no-effect campaigns promoted something"


def test_a_compute_setting_this_machine_cannot_run_is_refused_with_exit_2(bench_repo: Path):
    set_contract(bench_repo, append="[compute]\ngpus_per_job = 1\n")  # no device declared in compute.gpus
    code, out, _ = ratchet("run", str(bench_repo))
    assert code == 2 and out["error"]["code"] == "compute.gpus_too_few"
    assert not (bench_repo / ".ratchet" / "runs").exists() or not any((bench_repo / ".ratchet" / "runs").iterdir())


def test_baseline_without_metric_stops_before_any_budget(make_repo, tmp_path: Path):
    silent = "import sys\nprint('oops', file=sys.stderr)\nprint('no json')\n"
    root = make_repo(tmp_path / "r", files={"bench.py": silent})
    code, out, _ = ratchet("run", str(root))
    assert code == 2 and out["error"]["code"] == "preflight.no_metric"
    assert "oops" in out["error"]["message"]
    (run_dir,) = (root / ".ratchet" / "runs").iterdir()
    kinds = [e["kind"] for e in events(root, run_dir.name)]
    assert kinds == ["run.started", "job.started", "job.finished", "run.stopped"], kinds
    stopped = events(root, run_dir.name)[-1]["data"]
    assert stopped["stop_reason"] == "preflight_failed" and stopped["detail"] == "preflight.no_metric"
    # The failed preflight is recorded evidence, not an interrupted run: nothing blocks the next run.
    code, out, _ = ratchet("run", str(root))
    assert out["error"]["code"] == "preflight.no_metric"


def test_not_a_git_repository(tmp_path: Path):
    code, out, _ = ratchet("init", str(tmp_path / "p"))
    assert code == 0
    code, out, _ = ratchet("run", str(tmp_path / "p"))
    assert code == 2 and out["error"]["code"] == "git.not_a_repo"


NOISELESS = "import tomllib\nv = tomllib.load(open('params.toml', 'rb'))['v']\nprint('{\"score\": %s}' % v)\n"


def _relative_margin_project(make_repo, root: Path, candidates: dict[str, float]) -> Path:
    root = make_repo(root, files={"bench.py": NOISELESS, "params.toml": "v = 1.0\n"})
    use_files_agent(root, {name: f"v = {value}\n" for name, value in candidates.items()},
                    "[gate]\nunits = [6, 12]\nconfirm = false\nmin_effect_rel = 0.5\nholdout_units = 6\n")
    return root


def test_min_effect_rel_uses_the_preflight_mean_on_the_first_trial(make_repo, tmp_path: Path):
    # Baseline 1.0, candidate 1.3: a sure gain of 0.3, below the margin 0.5 x 1.0. Once promoted
    # with a margin of 0, this was the bug of a silently zero relative margin.
    root = _relative_margin_project(make_repo, tmp_path / "r", {"1-small": 1.3})
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    row = _status(root, out["result"]["run_id"])["attempts"][0]
    assert row["verdict"] == "rejected" and out["result"]["promotions"] == 0, row
    planned = [e["data"] for e in events(root, out["result"]["run_id"]) if e["kind"] == "trial.planned"]
    assert planned[0]["margin"] == pytest.approx(0.5)


def test_min_effect_rel_follows_the_champion_after_a_promotion(make_repo, tmp_path: Path):
    # 1.0 -> 2.0 clears 0.5; then 2.0 -> 2.8 is a gain of 0.8 below 0.5 x 2.0 = 1.0 (the new champion's
    # mean, not the previous one's, which would have let it through).
    root = _relative_margin_project(make_repo, tmp_path / "r", {"1-big": 2.0, "2-next": 2.8})
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    rows = {a["attempt"]: a for a in _status(root, out["result"]["run_id"])["attempts"]}
    assert rows[1]["verdict"] == "accepted" and rows[2]["verdict"] == "rejected"
    planned = [e["data"] for e in events(root, out["result"]["run_id"]) if e["kind"] == "trial.planned"]
    assert [p["margin"] for p in planned if p["stage"] == "trial"] == [pytest.approx(0.5), pytest.approx(1.0)]


def test_compare_applies_min_effect_rel(make_repo, tmp_path: Path):
    root = _relative_margin_project(make_repo, tmp_path / "r", {})
    (root / "params.toml").write_text("v = 1.3\n")
    from repo_fixture import git

    git(root, "commit", "-qam", "candidate")
    code, out, err = ratchet("compare", "HEAD~1", "HEAD", "--dir", str(root))
    assert code == 0, err
    assert out["result"]["verdict"] == "rejected", out["result"]


def test_betting_rejects_a_unit_below_the_floor_and_promotes_a_gain_and_verify_rederives_both(
        make_repo, tmp_path: Path):
    # Noiseless scores: baseline 1.0; candidate 1 scores 0.8 (a loss of 0.2 per unit, below the floor
    # -0.1), candidate 2 scores 1.1 (p 0.0005 at 12 units, under attempt 2's level 0.0136).
    root = make_repo(tmp_path / "f", files={"bench.py": NOISELESS, "params.toml": "v = 1.0\n"})
    use_files_agent(root, {"1-loses": "v = 0.8\n", "2-gains": "v = 1.1\n"},
                    '[gate]\nunits = [6, 12]\nconfirm = false\nholdout_units = 6\ntest = "betting"\n'
                    "max_unit_loss = 0.1\n")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    run_id = out["result"]["run_id"]
    judged = [e["data"] for e in events(root, run_id) if e["kind"] == "trial.judged"]
    assert (judged[0]["verdict"], judged[0]["reason"], judged[0]["units"]) == ("rejected", "below_floor", 6)
    assert "below the floor -0.1" in judged[0]["reason_text"]
    assert (judged[1]["verdict"], judged[1]["test"], judged[1]["units"]) == ("accepted", "betting", 12)
    started = next(e["data"] for e in events(root, run_id) if e["kind"] == "run.started")
    assert (started["gate"]["floor"], started["gate"]["bet_cap"], started["gate"]["rules"]) == (-0.1, 0.99, 2)
    code, verified, err = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0 and verified["result"]["verified"] and verified["result"]["checked"]["verdicts"] >= 2, verified
