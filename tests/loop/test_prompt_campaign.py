"""Prompt solutions end to end: `ratchet run` on the prompt_countries example against a chat server on
127.0.0.1 whose replies follow the system prompt (examples/prompt_countries/fake_model.py, with
seeded noise): the better prompt is promoted and the worse rejected, no reply is asked twice (the
champion's come from the cache, a resume after kill -9 re-asks nothing cached), a budget stop shows
its arithmetic, a server that fails is data, and pass fractions over samples go to the floor test."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import events, ratchet
from repo_fixture import git

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "prompt_countries"
sys.path.insert(0, str(REPO / "tests" / "agents" / "llm"))
sys.path.insert(0, str(EXAMPLE))
import fake_model  # noqa: E402
from llm_server import ChatServer, answer, reply, status  # noqa: E402

pytestmark = pytest.mark.slow

ROWS = 200  # dev 100, val 50, test 50


@pytest.fixture
def server():
    table = fake_model.load_table()
    s = ChatServer(default=answer(lambda request: fake_model.answer(table, request))).start()
    yield s
    s.close()


def project(root: Path, url: str, *, budget: str = "", samples: int = 1, gate: str = "units = [25, 50]") -> Path:
    """The example in a new git repo at `root`, on its first ROWS examples, pointed at `url`."""
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    rows = (root / "data" / "examples.jsonl").read_text().splitlines()[:ROWS]
    (root / "data" / "examples.jsonl").write_text("\n".join(rows) + "\n")
    text = (root / "ratchet.toml").read_text()
    text = text.replace("http://127.0.0.1:8808/v1", url).replace("split = [0.6, 0.2, 0.2]", "split = [0.5, 0.25, 0.25]")
    text = text.replace("units = [50, 100, 180]", gate)
    text = re.sub(r"max_eval_\w+ = .*\n", "", text).replace("max_attempts = 2\n", "max_attempts = 2\n" + budget)
    text = text.replace("samples = 1\n", f"samples = {samples}\nmax_retries = 0\n")
    (root / "ratchet.toml").write_text(text)
    (root / ".gitignore").write_text(".ratchet/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


def asked(server: ChatServer) -> list[str]:
    """Each request answered, as the canonical JSON of what shapes its reply."""
    return [json.dumps([r["messages"], r.get("seed"), r.get("temperature"), r["model"]], sort_keys=True)
            for r in server.requests]


def finished(root: Path, run_id: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events(root, run_id) if e["kind"] == "job.finished"]


def test_the_better_prompt_is_promoted_the_worse_rejected_and_no_reply_is_asked_twice(tmp_path: Path, server):
    root = project(tmp_path / "p", server.url)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    r = out["result"]
    assert r["promotions"] == 1, err
    code, st, _ = ratchet("status", "--dir", str(root))
    verdicts = {a["attempt"]: a["verdict"] for a in st["result"]["attempts"]}
    assert verdicts == {1: "rejected", 2: "accepted"}
    assert r["holdout"]["estimate"] > 0.3  # ~0.9 - ~0.3 on test examples no decision used
    keys = asked(server)
    assert len(keys) == len(set(keys)), "a reply was asked twice"
    jobs = finished(root, r["run_id"])
    second = [j for j in jobs if j["stage"] == "trial" and j["variant"] == "champion" and j["attempt"] == 2]
    assert second and sum(j["eval_calls"] for j in second) < sum(j["units_charged"] for j in second), \
        "the baseline's val replies attempt 1 asked should come from the cache in attempt 2"
    assert sum(j["eval_calls"] for j in jobs) == len(keys)
    report = Path(r["report"]).read_text()
    assert "| exact_match |" in report
    code, verified, err = ratchet("verify", r["run_id"], "--dir", str(root))
    assert code == 0 and verified["ok"], err  # plans re-compiled, verdicts re-derived from the records
    # a second run of the same project asks nothing for its baseline: every reply is cached
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    preflight = [j for j in finished(root, out["result"]["run_id"]) if j["stage"] == "preflight"]
    assert preflight and sum(j["eval_calls"] for j in preflight) == 0
    assert len(asked(server)) == len(set(asked(server)))


def test_a_budget_stop_states_its_arithmetic(tmp_path: Path, server):
    # worst case per job-unit: 1 call; a trial is 3 x 50 job-units, the holdout reserve 2 x 50 + 100 + 50
    root = project(tmp_path / "p", server.url, budget="max_eval_calls = 500\n")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    r = out["result"]
    assert r["stop_reason"] == "budget_exhausted" and r["budget"] == "max_eval_calls"
    stopped = [e["data"] for e in events(root, r["run_id"]) if e["kind"] == "run.stopped"][-1]
    assert "150 for the next attempt" in stopped["detail"] and "250 reserved for the holdout" in stopped["detail"]
    assert "max_eval_calls = 500 eval calls" in stopped["detail"]


def test_a_failing_server_is_data_never_a_crash(tmp_path: Path):
    s = ChatServer(default=status(400, "bad request")).start()
    try:
        root = project(tmp_path / "p", s.url, gate="units = [25, 50]")
        code, out, err = ratchet("run", str(root))
    finally:
        s.close()
    assert code == 0, err
    assert out["result"]["promotions"] == 0
    jobs = finished(root, out["result"]["run_id"])
    statuses = {entry[1] for j in jobs for entry in (j.get("examples") or {}).values()}
    assert statuses == {"model_error"}
    code, st, _ = ratchet("status", "--dir", str(root))
    assert all(a["verdict"] != "accepted" for a in st["result"]["attempts"])


def test_a_resume_after_kill_9_re_asks_nothing_cached(tmp_path: Path, server):
    root = project(tmp_path / "p", server.url)
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env={**os.environ, "RATCHET_TEST_CRASH_AT": "after:job.finished:3"}, timeout=300)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    before = len(server.requests)
    assert before > 0
    code, out, err = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, err
    keys = asked(server)
    assert len(keys) == len(set(keys)), "the resume asked again a reply the killed kernel had cached"
    assert out["result"]["promotions"] == 1


def test_samples_give_pass_fractions_judged_by_the_floor_test(tmp_path: Path, server):
    root = project(tmp_path / "p", server.url, samples=3)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    r = out["result"]
    assert r["promotions"] == 1
    jobs = finished(root, r["run_id"])
    fractions = {entry[2] for j in jobs for entry in (j.get("examples") or {}).values()}
    assert fractions <= {0, 1, 2, 3} and len(fractions) > 2  # passes out of 3 samples, noisy
    assert all(entry[3] == 3 for j in jobs for entry in (j.get("examples") or {}).values())
    judged = [e["data"] for e in events(root, r["run_id"])
              if e["kind"] == "trial.judged" and e["data"]["stage"] == "trial"]
    assert [j["verdict"] for j in judged] == ["rejected", "accepted"]
    code, verified, err = ratchet("verify", r["run_id"], "--dir", str(root))
    assert code == 0 and verified["ok"], err
    keys = asked(server)
    assert len(keys) == len(set(keys))


def test_the_llm_agent_rewrites_the_prompt_reading_the_champions_dev_replies(tmp_path: Path, server):
    agent = ChatServer(default=reply(
        "SUMMARY: ask for the bare code\nThe model wraps right codes in sentences.\n"
        "```\nYou are given a country's name. Reply with only the two-letter code, in capitals.\n```\n")).start()
    try:
        root = project(tmp_path / "p", server.url)
        text = (root / "ratchet.toml").read_text().replace("max_attempts = 2", "max_attempts = 1")
        text = text.replace('kind = "files"\n[agent.files]\npath = "candidates/"\n',
                            f'kind = "llm"\n[agent.llm]\nbase_url = "{agent.url}"\nmodel = "agent-model"\n'
                            'api_key_env = ""\nmax_output_tokens = 400\n')
        (root / "ratchet.toml").write_text(text)
        git(root, "commit", "-qam", "llm agent")
        code, out, err = ratchet("run", str(root))
    finally:
        agent.close()
    assert code == 0, err
    assert out["result"]["promotions"] == 1
    asked_agent = agent.requests[0]["messages"][1]["content"]
    assert "system message of the eval model `fake-model`" in asked_agent
    assert "It is the system message the eval model reads" in asked_agent
    assert "The ISO 3166-1 alpha-2 code of" in asked_agent  # a champion's dev reply, as data
    assert "exact_match: output" in asked_agent  # the failing check's reason
    assert (root / "prompt.md").read_text() != ""  # the project is untouched; the champion is on its branch
