"""The llm agent end to end: a real git repository, a real chat-completions server on 127.0.0.1,
the real openai SDK, real blobs; candidates are real git trees."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from llm_journal import DirJournal
from llm_server import ChatServer, reply, status
from repo_fixture import make_bench_repo

from ratchet.agents.base import AgentContext, GiveUp, Submit
from ratchet.agents.llm.agent import BUDGET_STOP_PREFIX, LlmAgent, parse_directives
from ratchet.agents.llm.briefing import AttemptSummary, ChampionFigures, DevFailure
from ratchet.agents.view import AgentTreeView
from ratchet.core.budget import limits_of
from ratchet.core.contract_load import parse_contract
from ratchet.workspace.git import Git

KEY = "sk-test-SECRET-fedcba9876543210"

GOOD = """SUMMARY: move x to the optimum
Hypothesis: the score peaks at x = 3.

params.toml
<<<<<<< SEARCH
x = 0.0
=======
x = 3.0
>>>>>>> REPLACE
"""

CONTRACT = """
[campaign]
name = "llm"

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"

[scope]
allowed = ["params.toml", "model/"]
protected = ["bench.py"]
hidden = ["model/secret.txt"]

[agent]
kind = "llm"
[agent.llm]
base_url = "{url}"
model = "test-model"
api_key_env = "TEST_LLM_KEY"
request_timeout_s = 5
max_output_tokens = 200
{llm_extra}

[budget]
{budget}
"""


class FixedEvidence:
    """Evidence as the loop would give it: champion figures and a history with gains and bounds."""

    def __init__(self, failures=(), history=True):
        self.failures = list(failures)
        self.history = history

    def champion(self, ctx):
        return ChampionFigures(mean=-9.02, low=-9.1, high=-8.94, units=20)

    def attempts(self, ctx):
        return [AttemptSummary(a, f"tried x = {a}", "rejected", "not_significant", 0.12, -0.03)
                for a in range(1, ctx.attempt) if self.history]

    def dev_failures(self, ctx):
        return self.failures


@pytest.fixture
def server():
    s = ChatServer().start()
    yield s
    s.close()


@pytest.fixture
def repo(tmp_path):
    return make_bench_repo(tmp_path / "repo", files={"model/net.py": "LAYERS = 2\n",
                                                     "model/secret.txt": "HOLDOUT-ANSWERS\n"})


def make_agent(server, repo, tmp_path, monkeypatch, llm_extra="", budget="", evidence=None, contract_text=None):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    text = contract_text or CONTRACT
    contract = parse_contract(text.format(url=server.url, llm_extra=llm_extra, budget=budget))
    git = Git(repo)
    journal = DirJournal(tmp_path / "journal")
    view = AgentTreeView(git, contract.hidden_paths)
    agent = LlmAgent.build(contract, repo, view, journal.budget(limits_of(contract)), journal,
                           evidence if evidence is not None else FixedEvidence())
    return agent, git, journal


def ctx_for(git: Git, attempt: int = 1) -> AgentContext:
    return AgentContext(attempt, git.tree_of("HEAD"), 0)


def test_a_clean_reply_becomes_a_candidate_tree_that_measures_better(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert isinstance(action, Submit) and action.invalid is None
    assert git.read_blob(action.tree, "params.toml") == b"x = 3.0\n"
    assert action.summary == "move x to the optimum" and "peaks at x = 3" in action.report
    checkout = tmp_path / "checkout"
    git.materialize_tree(action.tree, checkout)
    out = subprocess.run([sys.executable, "bench.py"], cwd=checkout, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1])["x"] == 3.0


def test_the_prompt_shows_scope_files_figures_and_history_but_no_hidden_file(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    agent.start(ctx_for(git, attempt=3))
    prompt = server.requests[0]["messages"][1]["content"]
    assert "LAYERS = 2" in prompt and "x = 0.0" in prompt
    assert "HOLDOUT-ANSWERS" not in prompt and "secret.txt" not in prompt
    assert "bench.py`" in prompt and "import json" not in prompt  # named as the command, never shown
    assert "-9.02" in prompt and "[-9.1, -8.94]" in prompt
    assert "2 | rejected (not_significant) | 0.12 | -0.03 | tried x = 2" in prompt


def test_a_malformed_block_gets_one_reformat_retry_with_the_error(server, repo, tmp_path, monkeypatch):
    broken = "SUMMARY: oops\nparams.toml\n<<<<<<< SEARCH\nx = 0.0\n>>>>>>> REPLACE\n"
    server.script = [reply(broken), reply(GOOD)]
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert isinstance(action, Submit) and action.tree is not None
    assert len(server.requests) == 2
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": broken}
    assert "no ======= line" in retry[-1]["content"]


def test_blocks_that_never_parse_make_an_invalid_candidate_after_one_retry(server, repo, tmp_path, monkeypatch):
    server.default = reply("params.toml\n<<<<<<< SEARCH\nx = 0.0\n")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert isinstance(action, Submit) and action.tree is None
    assert "after one reformat retry" in action.invalid and "no =======" in action.invalid
    assert len(server.requests) == 2


@pytest.mark.parametrize("path, why", [("bench.py", "protected"), ("notes.txt", "out of scope"),
                                        ("model/secret.txt", "protected")])
def test_an_edit_out_of_scope_is_refused_and_the_attempt_is_invalid(server, repo, tmp_path, monkeypatch, path, why):
    server.default = reply(f"SUMMARY: x\n{path}\n<<<<<<< SEARCH\n=======\nprint('hi')\n>>>>>>> REPLACE\n")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert isinstance(action, Submit) and action.tree is None
    assert why in action.invalid and path in action.invalid


def test_a_search_text_absent_from_the_file_is_reported(server, repo, tmp_path, monkeypatch):
    server.default = reply("params.toml\n<<<<<<< SEARCH\nx = 1.0\n=======\nx = 2.0\n>>>>>>> REPLACE\n")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert "is not in the file" in action.invalid and "'x = 1.0'" in action.invalid


def test_a_reply_ignoring_the_format_is_retried_then_invalid(server, repo, tmp_path, monkeypatch):
    server.default = reply("I think you should set x to 3. Good luck!")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert action.tree is None and "no edit blocks" in action.invalid
    assert len(server.requests) == 2


def test_a_truncated_reply_is_told_it_was_cut_off(server, repo, tmp_path, monkeypatch):
    server.script = [reply(GOOD[: GOOD.index("=======")], finish_reason="length"), reply(GOOD)]
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert action.tree is not None
    assert "cut off at max_output_tokens (200)" in server.requests[1]["messages"][-1]["content"]


def test_a_500_then_success_and_a_429_with_retry_after_still_give_a_candidate(server, repo, tmp_path, monkeypatch):
    server.script = [status(500, "boom"), status(429, "slow", {"Retry-After": "1"}), reply(GOOD)]
    agent, git, journal = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert action.tree is not None
    assert [t.status for t in journal.calls()[0].tries] == [500, 429, 200]
    assert journal.calls()[0].tries[1].waited_s == 1.0


def test_a_configuration_error_gives_up_with_a_clear_message(server, repo, tmp_path, monkeypatch):
    server.default = status(401, "invalid api key")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch)
    action = agent.start(ctx_for(git))
    assert isinstance(action, GiveUp) and "TEST_LLM_KEY" in action.reason and KEY not in action.reason


def run_attempts(agent, git, n):
    return [agent.start(ctx_for(git, a)) for a in range(1, n + 1)]


def test_the_call_budget_stops_exactly_at_its_limit(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, budget="max_model_calls = 3")
    actions = run_attempts(agent, git, 5)
    assert [isinstance(a, Submit) for a in actions] == [True, True, True, False, False]
    assert actions[3].reason.startswith(BUDGET_STOP_PREFIX + "max_model_calls")
    assert len(server.requests) == 3 and agent.stopped_by_budget is not None
    assert agent.stopped_by_budget.name == "max_model_calls" and not agent.stopped_by_budget.forecast
    assert agent.stopped_by_budget.detail == "max_model_calls = 3 model calls is spent (3 model calls used)"
    stop = agent.budget_stop()
    assert stop is not None and stop.name == "max_model_calls"


def test_the_output_token_budget_stops_exactly_at_its_limit(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD, completion_tokens=150)
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, budget="max_output_tokens = 500")
    actions = run_attempts(agent, git, 5)
    # each call reserves 200 (max_output_tokens) and settles 150: 150, 300 spent; the third would
    # reach 500 at worst (fits), the fourth 650 (refused)
    assert len(server.requests) == 3 and agent.client.budget.spent["output_tokens"] == 450
    assert isinstance(actions[3], GiveUp) and "max_output_tokens" in actions[3].reason


def test_the_input_token_budget_counts_the_request_size_as_the_worst_case(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD, prompt_tokens=10)
    quiet = FixedEvidence(history=False)  # the same prompt every attempt, so the same worst case
    probe, git, journal = make_agent(server, repo, tmp_path / "probe", monkeypatch, evidence=quiet)
    probe.start(ctx_for(git))
    bound = journal.entries()[0]["charge"]["input_tokens"]
    assert bound > 10
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, evidence=quiet,
                               budget=f"max_input_tokens = {bound + 25}")
    actions = run_attempts(agent, git, 5)
    # spent 0, 10, 20 leave room for one more worst case; 30 + bound does not fit
    assert [isinstance(a, Submit) for a in actions] == [True, True, True, False, False]
    assert agent.client.budget.spent["input_tokens"] == 30 and agent.stopped_by_budget is not None
    assert agent.stopped_by_budget.name == "max_input_tokens" and agent.stopped_by_budget.forecast


def test_the_dollar_budget_stops_exactly_at_its_limit(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD, prompt_tokens=1000, completion_tokens=200)
    price = "[agent.llm.price]\ninput_usd_per_mtok = 1000.0\noutput_usd_per_mtok = 1000.0"
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, llm_extra=price, budget="max_usd = 4.0")
    run_attempts(agent, git, 6)
    spent = agent.client.budget.spent["usd"]
    assert spent <= 4.0 and len(server.requests) == 2  # $1.20 each; a third call's worst case exceeds $4
    assert agent.stopped_by_budget is not None and agent.stopped_by_budget.name == "max_usd"


def test_resume_reuses_every_recorded_reply_and_requests_nothing(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, journal = make_agent(server, repo, tmp_path, monkeypatch, llm_extra="strategy = true\ndirectives = 2",
                                     budget="max_model_calls = 20")
    server.script = [reply('```json\n[{"observation": "o1", "hypothesis": "h1", "try": "t1"},'
                           ' {"observation": "o2", "hypothesis": "h2", "try": "t2"}]\n```'),
                     reply("no blocks here"), reply(GOOD)]
    first = run_attempts(agent, git, 2)
    asked = len(server.requests)
    assert asked == 4  # strategy, executor + reformat (attempt 1), executor (attempt 2)
    again, _, _ = make_agent(server, repo, tmp_path, monkeypatch, llm_extra="strategy = true\ndirectives = 2",
                             budget="max_model_calls = 20")
    assert run_attempts(again, git, 2) == first
    assert len(server.requests) == asked
    assert again.client.budget.spent == agent.client.budget.spent
    assert "Try: t2" in first[1].report


def test_a_call_cut_by_a_kill_is_charged_its_worst_case_and_made_again(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, journal = make_agent(server, repo, tmp_path, monkeypatch)

    class Killed(Exception):
        pass

    def killed(record):
        raise Killed  # the kernel dies after the request, before the call is recorded

    journal.record_call = killed
    with pytest.raises(Killed):
        agent.start(ctx_for(git))
    again, _, journal2 = make_agent(server, repo, tmp_path, monkeypatch)
    action = again.start(ctx_for(git))
    assert action.tree is not None and len(server.requests) == 2
    outcomes = [c.outcome for c in journal2.calls()]
    assert outcomes == ["lost", "ok"]
    assert again.client.budget.spent["output_tokens"] == 200 + 50  # the lost call's worst case + the real one


def test_the_key_never_appears_in_any_file_written(server, repo, tmp_path, monkeypatch):
    server.default = reply(GOOD)
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, budget="max_model_calls = 2")
    run_attempts(agent, git, 3)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert KEY.encode() not in path.read_bytes(), f"the key leaked into {path}"


def test_strategy_directives_each_become_one_attempt(server, repo, tmp_path, monkeypatch):
    plan = ('[{"observation": "x is far from 3", "hypothesis": "the peak is at 3", "try": "set x=3"},'
            ' {"observation": "o", "hypothesis": "h", "try": "set LAYERS=3"}]')
    server.script = [reply(plan), reply(GOOD), reply(GOOD)]
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, llm_extra="strategy = true\ndirectives = 2")
    first, second = run_attempts(agent, git, 2)
    assert len(server.requests) == 3
    assert "Try: set x=3" in server.requests[1]["messages"][1]["content"]
    assert "Try: set LAYERS=3" in server.requests[2]["messages"][1]["content"]
    assert "Directive (from the round's strategy call)" in second.report


def test_parse_directives_reads_a_bare_array_and_skips_junk():
    text = 'Plan:\n[{"observation": "a", "hypothesis": "b", "try": "c"}, 3, {"nothing": 1}]'
    assert [d.try_ for d in parse_directives(text, 5)] == ["c"]
    assert parse_directives("no json", 3) == []


EXAMPLES_CONTRACT = """
[campaign]
name = "ex"

[target]
kind = "examples"
examples = "data/examples.jsonl"
solution = "solution.py"
[[target.checks]]
type = "exact_match"

[scope]
allowed = ["solution.py"]

[agent]
kind = "llm"
[agent.llm]
base_url = "{url}"
model = "test-model"
api_key_env = "TEST_LLM_KEY"
request_timeout_s = 5
{llm_extra}

[budget]
{budget}
"""


def test_examples_target_rewrites_the_whole_solution_and_sees_dev_failures(server, tmp_path, monkeypatch):
    val_only = '{"input": "VALSECRET", "expected_output": "x"}\n'
    repo = make_bench_repo(tmp_path / "ex", files={"solution.py": "print(input())\n", "data/examples.jsonl": val_only})
    server.default = reply("SUMMARY: upper-case\nThe checks want upper case.\n```python\nprint(input().upper())\n```\n")
    failures = [DevFailure("abc", "ABC", "abc", "exact_match: outputs differ")]
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, evidence=FixedEvidence(failures),
                               contract_text=EXAMPLES_CONTRACT)
    action = agent.start(ctx_for(git))
    assert git.read_blob(action.tree, "solution.py") == b"print(input().upper())\n"
    prompt = server.requests[0]["messages"][1]["content"]
    assert "print(input())" in prompt and "exact_match: outputs differ" in prompt and "ABC" in prompt
    assert "VALSECRET" not in prompt


def test_examples_reply_without_one_code_block_is_invalid_after_a_retry(server, tmp_path, monkeypatch):
    repo = make_bench_repo(tmp_path / "ex", files={"solution.py": "print(input())\n"})
    server.default = reply("Just upper-case it.")
    agent, git, _ = make_agent(server, repo, tmp_path, monkeypatch, contract_text=EXAMPLES_CONTRACT)
    action = agent.start(ctx_for(git))
    assert action.tree is None and "no fenced code block" in action.invalid and len(server.requests) == 2
