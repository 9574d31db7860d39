"""The llm agent in a real campaign: `ratchet run` against a chat-completions server on 127.0.0.1
(the real openai SDK, real HTTP), every call recorded, the key never written, budgets stopping the
run exactly at their limit, a resume re-requesting nothing already answered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sys as _sys
from pathlib import Path

import pytest
from helpers import events, ratchet, rechain, set_contract

_sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents" / "llm"))
from llm_server import ChatServer, reply, status  # noqa: E402

KEY = "sk-test-CAMPAIGN-0123456789abcdef"

GOOD = """SUMMARY: move x to the optimum
Hypothesis: the score peaks at x = 3.

params.toml
<<<<<<< SEARCH
x = 0.0
=======
x = 3.0
>>>>>>> REPLACE
"""

pytestmark = pytest.mark.slow


@pytest.fixture
def server():
    s = ChatServer().start()
    yield s
    s.close()


def llm_project(root: Path, url: str, budget: str = "max_attempts = 2") -> None:
    text = (root / "ratchet.toml").read_text()
    text = text[: text.index("[agent]")] + (
        f'[agent]\nkind = "llm"\n[agent.llm]\nbase_url = "{url}"\nmodel = "test-model"\n'
        'api_key_env = "TEST_LLM_KEY"\nrequest_timeout_s = 5\nmax_output_tokens = 200\n\n'
        f"[gate]\nunits = [6, 12]\nholdout_units = 6\n\n[budget]\n{budget}\n")
    set_contract(root, replace={(root / "ratchet.toml").read_text(): text})


def run_env() -> dict[str, str]:
    return {"TEST_LLM_KEY": KEY}


def test_a_model_proposes_an_edit_that_is_measured_and_promoted(bench_repo: Path, server):
    server.default = reply(GOOD)
    llm_project(bench_repo, server.url)
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    assert out["result"]["promotions"] == 1
    evs = events(bench_repo, out["result"]["run_id"])
    kinds = [e["kind"] for e in evs]
    assert kinds.index("model.reserved") < kinds.index("model.called") < kinds.index("attempt.submitted")
    called = [e["data"] for e in evs if e["kind"] == "model.called"]
    assert called and all(c["outcome"] == "ok" for c in called)
    assert all(h.get("authorization", "").endswith(KEY) for h in server.headers), "the key reached the server"
    for path in (bench_repo / ".ratchet").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the API key was written to {path}"


def test_the_call_budget_stops_the_run_at_its_limit(bench_repo: Path, server):
    server.default = reply("I have no idea.")  # unusable: one reformat retry per attempt, then invalid
    llm_project(bench_repo, server.url, budget="max_attempts = 20\nmax_model_calls = 3")
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    assert out["result"]["stop_reason"] == "budget_exhausted" and out["result"]["budget"] == "max_model_calls"
    evs = events(bench_repo, out["result"]["run_id"])
    calls = [e["data"]["outcome"] for e in evs if e["kind"] == "model.called"]
    sent = [c for c in calls if c != "budget_refused"]
    assert len(sent) == 3 == len(server.requests), calls  # the 4th was refused before it was sent


def test_a_resume_re_requests_nothing_already_answered(bench_repo: Path, server):
    server.default = reply(GOOD)
    llm_project(bench_repo, server.url, budget="max_attempts = 1")
    env = {**os.environ, **run_env(), "RATCHET_TEST_CRASH_AT": "after:model.called:1"}
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(bench_repo), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    assert len(server.requests) == 1
    run_id = next((bench_repo / ".ratchet" / "runs").iterdir()).name
    code, out, _ = ratchet("run", str(bench_repo), "--resume", run_id, env=run_env())
    assert code == 0, out
    assert len(server.requests) == 1, "the recorded reply was reused, not requested again"
    assert out["result"]["promotions"] == 1


def test_a_spent_model_budget_stops_the_run_before_the_next_attempt_with_its_arithmetic(bench_repo: Path, server):
    server.default = reply(GOOD)
    llm_project(bench_repo, server.url, budget="max_attempts = 20\nmax_model_calls = 1")
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    assert out["result"]["stop_reason"] == "budget_exhausted" and out["result"]["budget"] == "max_model_calls"
    evs = events(bench_repo, out["result"]["run_id"])
    assert [e["data"]["outcome"] for e in evs if e["kind"] == "model.called"] == ["ok"]  # none refused
    assert [e["data"]["attempt"] for e in evs if e["kind"] == "attempt.started"] == [1]
    stopped = [e["data"] for e in evs if e["kind"] == "run.stopped"][-1]
    assert stopped["detail"] == "max_model_calls = 1 model calls is spent (1 model calls used)"
    assert len(server.requests) == 1


def test_verify_passes_an_llm_run_and_catches_a_reservation_past_its_limit(bench_repo: Path, server):
    # The server reports 1,000,000 input tokens, far more than the request's bound that was reserved:
    # charged as reported, past max_input_tokens, which is not the kernel's fault and not a finding.
    server.default = reply(GOOD, prompt_tokens=1_000_000)
    llm_project(bench_repo, server.url, budget="max_attempts = 1\nmax_input_tokens = 100000")
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    run_id = out["result"]["run_id"]
    code, verified, _ = ratchet("verify", run_id, "--dir", str(bench_repo))
    assert code == 0 and verified["result"]["findings"] == [], verified

    def tight(event: dict) -> bool:
        if event["kind"] != "run.started":
            return False
        event["data"]["limits"]["max_output_tokens"] = 100  # each call reserved max_output_tokens = 200
        return True

    rechain(bench_repo / ".ratchet" / "runs" / run_id / "events.jsonl", tight)
    code, verified, _ = ratchet("verify", run_id, "--dir", str(bench_repo))
    budget = [f for f in verified["result"]["findings"] if f["code"] == "verify.budget"]
    assert code == 3 and budget, verified
    assert budget[0]["message"].startswith("model call attempt-1/executor was reserved past max_output_tokens")


def test_on_an_examples_target_the_model_sees_dev_failures_and_of_val_only_the_verdict(tmp_path: Path, server):
    from repo_fixture import EXAMPLES_CONTRACT, make_examples_repo

    from ratchet.commands.run import load_examples_data, open_project

    agent = (f'kind = "llm"\n[agent.llm]\nbase_url = "{server.url}"\nmodel = "test-model"\n'
             'api_key_env = "TEST_LLM_KEY"\nrequest_timeout_s = 5\nmax_output_tokens = 400\n')
    contract = EXAMPLES_CONTRACT.replace('kind = "files"\n[agent.files]\npath = "candidates/"\n', agent)
    root = make_examples_repo(tmp_path / "r", contract.replace("max_attempts = 3", "max_attempts = 2"))
    server.script = [reply("SUMMARY: exit\nNothing works.\n```python\nraise SystemExit(3)\n```\n"),
                     reply("SUMMARY: upper-case\nUpper case.\n```python\nprint(input().upper())\n```\n")]
    code, out, _ = ratchet("run", str(root), env=run_env())
    assert code == 0, out
    assert out["result"]["promotions"] == 1
    prompt = "\n".join(str(m.get("content")) for m in server.requests[-1]["messages"])
    assert "rejected (not_promoted)" in prompt and "futility" not in prompt  # the gate said futility
    assert "dev pass rate 0;" in prompt  # the crash measured on dev
    data = load_examples_data(open_project(root)[0])
    assert any(ex.input in prompt for ex in data.split.dev), "the baseline's dev failures are shown"
    for ex in data.split.val + data.split.test:
        assert ex.input not in prompt, f"val/test input {ex.input!r} reached the model"


def dead_url() -> str:
    """A chat-completions URL on a port of 127.0.0.1 nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_dead_server_stops_the_run_agent_unresponsive_after_max_idle_attempts(bench_repo: Path):
    llm_project(bench_repo, dead_url(), budget="max_attempts = 8")
    set_contract(bench_repo, replace={"request_timeout_s = 5\n": "request_timeout_s = 5\nmax_retries = 0\n"})
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    assert out["result"]["stop_reason"] == "agent_unresponsive"
    evs = events(bench_repo, out["result"]["run_id"])
    submitted = [e["data"] for e in evs if e["kind"] == "attempt.submitted"]
    assert len(submitted) == 3, "agent.max_idle_attempts defaults to 3"
    assert all(s["unresponsive"] and "connection_error" in s["invalid"] for s in submitted)
    (stopped,) = [e["data"] for e in evs if e["kind"] == "run.stopped"]
    assert "3 attempts in a row" in stopped["detail"] and "cannot reach http://127.0.0.1:" in stopped["detail"]


def test_a_server_that_refuses_the_model_stops_the_run_at_once(bench_repo: Path, server):
    server.default = status(404, "The model `test-model` does not exist")
    llm_project(bench_repo, server.url, budget="max_attempts = 8")
    code, out, _ = ratchet("run", str(bench_repo), env=run_env())
    assert code == 0, out
    assert out["result"]["stop_reason"] == "agent_stopped"
    evs = events(bench_repo, out["result"]["run_id"])
    assert len([e for e in evs if e["kind"] == "attempt.started"]) == 1
