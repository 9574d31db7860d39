"""What a user reads when a run stops or a candidate fails: a budget stop's arithmetic, a failed
job's last stderr lines, how many examples crashed, trials that can never accept. End to end on
real repositories with the real CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from helpers import events, ratchet, set_contract
from repo_fixture import git

from ratchet.commands.init import scaffold

FAST_GATE = """
[gate]
units = [6, 12]
holdout_units = 12
"""


def _plain(*args: str) -> str:
    """`ratchet ARGS` without --json: what a person sees on stdout."""
    proc = subprocess.run([sys.executable, "-m", "ratchet", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _files_agent(root: Path, candidates: dict[str, dict[str, str]], append: str = FAST_GATE) -> None:
    for name, files in candidates.items():
        for rel, text in files.items():
            path = root / "candidates" / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    set_contract(root, replace={'kind = "search"': 'kind = "files"\n[agent.files]\npath = "candidates/"'},
                 append=append)


def test_a_budget_stop_made_on_a_forecast_says_so_with_its_arithmetic(bench_repo: Path):
    # Trial worst case 3 x 12 x 2 = 72 job-units, holdout reserve 3 x 12 = 36: with 110 the first attempt
    # fits (1 preflight unit + 72 + 36 = 109), the second cannot once attempt 1 spent its 12 or more.
    set_contract(bench_repo, append=FAST_GATE + "[budget]\nmax_attempts = 5\nmax_evaluations = 110\n")
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    run_id = out["result"]["run_id"]
    assert out["result"]["stop_reason"] == "budget_exhausted" and out["result"]["budget"] == "max_evaluations"
    stopped = [e for e in events(bench_repo, run_id) if e["kind"] == "run.stopped"][-1]["data"]
    detail = stopped["detail"]
    m = re.fullmatch(r"forecast, not spent: (\d+) job-units used \+ 72 for the next attempt \(its trial's worst "
                     r"case\) \+ 36 reserved for the holdout = (\d+), which would exceed max_evaluations = 110 "
                     r"job-units; (\d+) left unused", detail)
    assert m and int(m.group(1)) + 108 == int(m.group(2)) > 110 and int(m.group(3)) == 110 - int(m.group(1)), detail
    assert f"stopped: budget_exhausted (max_evaluations)\n    {detail}" in err
    report = Path(out["result"]["report"]).read_text()
    assert f"Why it stopped: {detail}." in report
    status = _plain("status", run_id, "--dir", str(bench_repo))
    assert "stopped (budget_exhausted: max_evaluations)" in status and detail in status
    if out["result"]["promotions"]:
        assert "holdout (final champion vs baseline, 12 units never used for selection): accepted" in status


def test_a_failing_candidate_shows_its_last_stderr_lines_on_the_console_and_in_the_report(bench_repo: Path):
    _files_agent(bench_repo, {"1-broken": {"params.toml": 'x = "three"\n'}})
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    error = "ValueError: could not convert string to float: 'three'"
    source = 'x = float(params.get("x", 0.0))'
    verdict = err.index("attempt 1 trial: rejected (candidate_failed)")
    why = err[verdict:]
    assert source in why and error in why, err  # the traceback's last lines, under the verdict line
    assert why.index(source) < why.index(error)
    report = Path(out["result"]["report"]).read_text()
    in_full = report[report.index("### Reasons in full"):]
    assert "Attempt 1:" in in_full and source in in_full and error in in_full
    assert "(in full below, attempt 1)" in report


def test_an_examples_verdict_says_how_many_examples_crashed(tmp_path: Path):
    root = tmp_path / "e"
    scaffold(root, "examples")
    # Crashes on inputs ending in an even digit, prints the rest unchanged (as wrong as the baseline).
    crash = ("import sys\ntext = sys.stdin.read()\nif text.strip()[-1] in '02468':\n    raise RuntimeError('even')\n"
             "print(text)\n")
    (root / "candidates" / "1-crashes").mkdir(parents=True)
    (root / "candidates" / "1-crashes" / "solution.py").write_text(crash)
    contract = root / "ratchet.toml"
    text = contract.read_text().replace('kind = "search"', 'kind = "files"\n[agent.files]\npath = "candidates/"', 1)
    contract.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    judged = [e["data"] for e in events(root, out["result"]["run_id"])
              if e["kind"] == "trial.judged" and e["data"]["stage"] == "trial"]
    text = judged[0]["reason_text"]
    m = re.search(r"Examples that crashed or timed out \(scored as failures\): candidate (\d+) crashed of (\d+)\.",
                  text)
    assert m and 0 < int(m.group(1)) < int(m.group(2)) == judged[0]["units"], text
    assert judged[0]["verdict"] == "rejected" and "champion" not in text[m.start():], text  # the baseline never crashes
    assert m.group(0) in err  # under the verdict line on the console
    assert "this run made 1 val trial (candidates measured on val)" in Path(out["result"]["report"]).read_text()


def test_a_run_whose_trials_can_never_accept_warns_at_start_records_it_and_the_report_repeats_it(
        bench_repo: Path):
    set_contract(bench_repo, append="[gate]\nunits = [4]\nconfirm = false\n[budget]\nmax_attempts = 2\n")
    code, out, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    started = next(e for e in events(bench_repo, out["result"]["run_id"]) if e["kind"] == "run.started")
    warnings = started["data"]["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("no trial can accept a candidate: with 4 units")
    assert "smallest p-value is 0.0625" in warnings[0] and "Fix: a last look of at least" in warnings[0]
    assert err.count(f"warning: {warnings[0]}") == 1
    assert out["result"]["promotions"] == 0
    report = Path(out["result"]["report"]).read_text()
    assert "## Warnings" in report and f"- {warnings[0]}" in report
