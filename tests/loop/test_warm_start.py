"""The search agent warm-starts from earlier runs of the same search: real runs of the real CLI on a
real temporary git repository, read back from their ledgers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from helpers import events, interrupted_at, ratchet, set_contract
from repo_fixture import EXAMPLES_CONTRACT, git, make_examples_repo

from ratchet.agents.base import AgentContext
from ratchet.agents.search import SearchAgent
from ratchet.core.contract_load import parse_contract
from ratchet.loop.warm_start import history_of

GATE = """
[gate]
units = [5]
confirm = false
holdout_units = 5
"""


def _submitted(root: Path, run_id: str) -> dict[int, dict[str, Any]]:
    return {e["data"]["attempt"]: e["data"] for e in events(root, run_id) if e["kind"] == "attempt.submitted"}


def _judged(root: Path, run_id: str) -> dict[int, dict[str, Any]]:
    return {e["data"]["attempt"]: e["data"] for e in events(root, run_id)
            if e["kind"] == "trial.judged" and e["data"]["stage"] == "trial"}


def _blob(root: Path, run_id: str, digest: str) -> Any:
    return json.loads((root / ".ratchet" / "runs" / run_id / "blobs" / digest.split(":")[1]).read_bytes())


def _report(root: Path, run_id: str, attempt: int) -> str:
    digest = _submitted(root, run_id)[attempt]["report_blob"]
    return (root / ".ratchet" / "runs" / run_id / "blobs" / digest.split(":")[1]).read_text()


def test_second_run_holds_the_first_runs_trials_and_proposes_new_points(bench_repo: Path):
    set_contract(bench_repo, append=GATE + "[budget]\nmax_attempts = 3\n")
    code, first, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    run1 = first["result"]["run_id"]
    started1 = events(bench_repo, run1)[0]["data"]
    assert started1["warm_start"]["runs"] == [] and started1["warm_start"]["trials"] == 0
    tried = _submitted(bench_repo, run1)
    judged = _judged(bench_repo, run1)
    rejected = [tried[a]["params"] for a, j in judged.items() if j["verdict"] == "rejected"]

    code, second, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    run2 = second["result"]["run_id"]
    warm = events(bench_repo, run2)[0]["data"]["warm_start"]
    assert warm["runs"] == [run1] and warm["trials"] == len(judged) == 3
    history = _blob(bench_repo, run2, warm["blob"])["trials"]
    assert [(t["run_id"], t["attempt"], t["params"]) for t in history] == \
        [(run1, a, tried[a]["params"]) for a in sorted(judged)]
    assert [t["value"] for t in history] == [judged[a]["candidate_mean"] for a in sorted(judged)]
    assert all("verdict" not in t for t in history), "verdicts are never carried over"

    first_proposal = _submitted(bench_repo, run2)[1]["params"]
    assert first_proposal not in rejected and first_proposal != tried[1]["params"]
    assert "and 3 trials of earlier runs" in _report(bench_repo, run2, 1)
    assert _judged(bench_repo, run2)[1]["units"] > 0, "the second run judges its candidate again, with jobs"
    # Without the history the same seed asks exactly what the first run asked first: the test can fail.
    config = parse_contract((bench_repo / "ratchet.toml").read_text()).agent.search
    assert config is not None
    cold = SearchAgent(config, "max", trees=None)  # type: ignore[arg-type]  # ask() builds no tree
    ctx = AgentContext(1, "", 0, ())
    assert cold.ask(ctx) == tried[1]["params"]
    cold.warm = history_of(history)
    assert cold.ask(ctx) == first_proposal

    code, out, err = ratchet("verify", run2, "--dir", str(bench_repo))
    assert code == 0 and out["ok"], out["result"]


def test_a_resume_reads_the_history_recorded_at_the_start(bench_repo: Path):
    set_contract(bench_repo, append=GATE + "[budget]\nmax_attempts = 1\n")
    code, first, err = ratchet("run", str(bench_repo))
    assert code == 0, err
    run1 = first["result"]["run_id"]
    # A budget raised in ratchet.toml (a new commit) is the same search on the same code.
    set_contract(bench_repo, replace={"max_attempts = 1": "max_attempts = 3"})
    code, out, err = interrupted_at(bench_repo, ["run", str(bench_repo)],
                                    lambda d: d["stage"] == "trial" and d["attempt"] == 2)
    assert code == 130, err
    run2 = out["result"]["run_id"]
    assert events(bench_repo, run2)[0]["data"]["warm_start"]["trials"] == 1
    shutil.rmtree(bench_repo / ".ratchet" / "runs" / run1)  # gathering again now would find nothing
    code, out, err = ratchet("run", str(bench_repo), "--resume", run2)
    assert code == 0, err
    assert "and 1 trial of earlier runs" in _report(bench_repo, run2, 3)


def test_an_examples_target_is_never_warm_started(tmp_path: Path):
    root = make_examples_repo(tmp_path / "ex", EXAMPLES_CONTRACT.replace(
        'kind = "files"\n[agent.files]\npath = "candidates/"',
        'kind = "search"\n[agent.search]\nfile = "params.toml"\n[agent.search.space]\n'
        'x = { type = "float", low = 0.0, high = 1.0 }').replace(
        'allowed = ["solution.py"]', 'allowed = ["solution.py", "params.toml"]').replace(
        "max_attempts = 3", "max_attempts = 2"))
    (root / "params.toml").write_text("x = 0.5\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "params")
    runs = []
    for _ in range(2):
        code, out, err = ratchet("run", str(root))
        assert code == 0, err
        runs.append(out["result"]["run_id"])
    assert any(e["kind"] == "trial.judged" for e in events(root, runs[0])), "the first run measured trials"
    for run_id in runs:
        assert "warm_start" not in events(root, run_id)[0]["data"]
    assert "earlier runs" not in _report(root, runs[1], 1)
