"""A prompt solution's pieces: its contract keys and their refusals, the prompt file read from a
checkout (never through a symlink), the eval budgets' worst case, the in-kernel executor, and the
llm_judge check against a chat server on 127.0.0.1 (a malformed judge reply is a check error)."""

from __future__ import annotations

import json
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from ratchet.compute.base import JobSpec, SandboxSpec
from ratchet.compute.in_kernel import InKernelExecutor, WorkDone
from ratchet.core.budget.eval_calls import eval_worst_case
from ratchet.core.contract import Contract
from ratchet.loop.prompt_eval import make_judge, parse_verdict, reply_key
from ratchet.targets.examples import Example, Split, example_id
from ratchet.targets.prompt_solution import PromptTarget, read_solution_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents" / "llm"))
from llm_server import ChatServer, reply  # noqa: E402

BASE = """
[campaign]
name = "p"
[target]
kind = "examples"
examples = "data/examples.jsonl"
solution = "prompt.md"
solution_kind = "prompt"
[target.model]
base_url = "http://127.0.0.1:9/v1"
model = "m"
api_key_env = ""
context_window = 2048
max_tokens = 48
[target.model.price]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 4.0
[[target.checks]]
type = "exact_match"
[scope]
allowed = ["prompt.md"]
[agent]
kind = "files"
[agent.files]
path = "candidates/"
"""

JUDGED = BASE.replace('[[target.checks]]\ntype = "exact_match"\n', '''[[target.checks]]
type = "exact_match"
[[target.checks]]
type = "llm_judge"
rubric = "same country"
[target.judge]
base_url = "JUDGE_URL"
model = "judge"
api_key_env = ""
''')


def contract(text: str) -> Contract:
    return Contract.model_validate(tomllib.loads(text))


@pytest.mark.parametrize(("edit", "words"), [
    (('solution_kind = "prompt"\n', 'solution_kind = "prompt"\nprompt_template = "Q: {question}"\n'), "{question}"),
    (('solution_kind = "prompt"\n', 'solution_kind = "prompt"\nprompt_template = "none"\n'), "must contain {input}"),
    (('solution_kind = "prompt"\n', ""), "only used with target.solution_kind = 'prompt'"),
    (("max_tokens = 48", "max_tokens = 4096"), "leaves no room"),
    (('api_key_env = ""', 'api_key_env = "sk-live-123"'), "NAME of the variable"),
    (('type = "exact_match"', 'type = "llm_judge"\nrubric = "x"'), "requires [target.judge]"),
    (("[scope]", "[budget]\nmax_eval_usd = 0.5\n[scope]"), None),  # priced: accepted
])
def test_the_prompt_keys_are_checked_naming_the_key(edit, words):
    text = BASE.replace(*edit)
    if words is None:
        assert contract(text).budget.max_eval_usd == 0.5
        return
    with pytest.raises(ValidationError) as err:
        contract(text)
    assert words in str(err.value)


def test_a_model_section_is_required_and_eval_budgets_need_a_prompt_and_prices():
    no_model = BASE.split("[target.model]")[0] + "[[target.checks]]" + BASE.split("[[target.checks]]")[1]
    with pytest.raises(ValidationError, match=r"requires \[target.model\]"):
        contract(no_model)
    unpriced = BASE.replace("input_usd_per_mtok = 1.0\noutput_usd_per_mtok = 4.0\n", "")
    with pytest.raises(ValidationError, match=r"max_eval_usd needs prices: set \[target.model.price\]"):
        contract(unpriced.replace("[scope]", "[budget]\nmax_eval_usd = 1.0\n[scope]"))
    script = BASE.replace('solution_kind = "prompt"\n', "").split("[target.model]")[0] + \
        "[[target.checks]]" + BASE.split("[[target.checks]]")[1]
    with pytest.raises(ValidationError, match="budget.max_eval_calls limits a prompt solution"):
        contract(script.replace("[scope]", "[budget]\nmax_eval_calls = 10\n[scope]"))


def test_the_eval_worst_case_is_context_windows_priced():
    text = JUDGED.replace("JUDGE_URL", "http://127.0.0.1:9/v1")
    c = contract(text.replace('model = "m"', 'model = "m"\nsamples = 2'))
    w = eval_worst_case(c, 10)
    # per job-unit: 2 samples x (1 eval + 1 judge call); each call at most context_window tokens
    assert w["eval_calls"] == 40
    assert w["eval_tokens"] == 10 * 2 * (2048 + 8192)  # the judge's context_window is the default 8192
    eval_usd = ((2048 - 48) * 1.0 + 48 * 4.0) / 1e6
    assert w["eval_usd"] == pytest.approx(20 * eval_usd)  # the judge is unpriced
    assert eval_worst_case(contract(BASE), 0)["eval_calls"] == 0


def test_the_prompt_is_never_read_through_a_symlink(tmp_path: Path):
    (tmp_path / "secret").write_text("the operator's secret")
    (tmp_path / "prompt.md").symlink_to(tmp_path / "secret")
    text, why = read_solution_text(tmp_path, "prompt.md")
    assert text is None and "symlink" in why
    (tmp_path / "real.md").write_text("Answer with the code.")
    assert read_solution_text(tmp_path, "real.md") == ("Answer with the code.", "")
    (tmp_path / "big.md").write_bytes(b"x" * 11)
    assert read_solution_text(tmp_path, "big.md", cap=10)[0] is None


def test_reply_keys_cover_what_shapes_a_reply():
    m = contract(BASE).target.model
    assert m is not None
    key = reply_key("eval", m, 0, "sys", "user")
    other_seed = m.model_copy(update={"seed": 3})
    assert len({key, reply_key("eval", m, 1, "sys", "user"), reply_key("eval", m, 0, "sys2", "user"),
                reply_key("eval", m, 0, "sys", "user2"), reply_key("judge", m, 0, "sys", "user"),
                reply_key("eval", other_seed, 0, "sys", "user")}) == 6
    # the key's variable, the timeout and the price shape no reply
    assert reply_key("eval", m.model_copy(update={"timeout_s": 1.0, "api_key_env": "K"}), 0, "sys", "user") == key


def test_the_in_kernel_executor_records_work_as_jobs_and_a_raising_work_fails_its_job(tmp_path: Path):
    started: list[tuple[str, str]] = []

    def work(spec: JobSpec, cancelled) -> WorkDone:
        if spec.job_id == "boom":
            raise RuntimeError("bug")
        return WorkDone(spec.stdin_bytes or b"")

    ex = InKernelExecutor(tmp_path, 2, work)
    specs = [JobSpec(job_id=j, argv=("x",), workdir=tmp_path, env={}, timeout_s=5, stdin_bytes=b"out-" + j.encode())
             for j in ("a", "boom")]
    results = ex.wait(ex.submit(specs, on_submit=lambda j, e: started.append((j, e))))
    assert sorted(started) == [("a", "kernel:a"), ("boom", "kernel:boom")]
    assert [r.state for r in results] == ["ok", "failed"]
    assert (tmp_path / "a" / "stdout").read_bytes() == b"out-a" and "bug" in results[1].reason


def test_a_cancelled_in_kernel_job_ends_cancelled(tmp_path: Path):
    go = threading.Event()

    def work(spec: JobSpec, cancelled) -> WorkDone:
        go.set()
        while not cancelled():
            time.sleep(0.01)
        return WorkDone(b"")

    ex = InKernelExecutor(tmp_path, 1, work)
    batch = ex.submit([JobSpec(job_id="a", argv=("x",), workdir=tmp_path, env={}, timeout_s=5)])
    go.wait(5)
    ex.cancel()
    assert [r.state for r in ex.wait(batch)] == ["cancelled"]


@pytest.mark.parametrize(("content", "passed"), [
    ('{"pass": true, "reason": "same"}', True),
    ('```json\n{"pass": false, "reason": "differs"}\n```', False),
    ("yes", None),
    ('{"pass": "yes", "reason": "x"}', None),
    ('{"pass": true}', None),
    ('{"pass": true, "reason": "x", "score": 3}', None),
])
def test_a_judge_reply_is_held_to_its_schema(content, passed):
    assert parse_verdict(content)[0] is passed


def _target(c: Contract, root: Path, judge) -> tuple[PromptTarget, Example]:
    ex = Example(example_id("France", "FR"), "France", "FR", 1)
    return PromptTarget(c, SandboxSpec(), "salt", Split((), (ex,), (ex,)), root, judge=judge), ex


def test_a_malformed_judge_reply_is_a_check_error_counted_apart(tmp_path: Path):
    server = ChatServer(script=[reply('{"pass": true, "reason": "same code"}'), reply("I think it passes!"),
                                reply('{"pass": false, "reason": "wrong"}')]).start()
    try:
        text = JUDGED.replace("JUDGE_URL", server.url).replace('model = "m"', 'model = "m"\nsamples = 3')
        c = contract(text.replace('[[target.checks]]\ntype = "exact_match"\n', "", 1))
        target, ex = _target(c, tmp_path, make_judge(c, tmp_path))
        outputs = ["FR", "It is FR", "fr"]  # three replies, three judge calls (one identical reply: one call)
        record = {"id": ex.id, "samples": [{"status": "ok", "output": o} for o in outputs], "charge": {}}
        result, charge = target._judge_example(ex, record)
    finally:
        server.close()
    assert (result.passes, result.samples, result.status) == (1, 3, "check_error")
    assert "not JSON" in result.reason
    assert [c.passed for c in result.per_check if c.type == "llm_judge"] == [True, False, False]
    assert charge["eval_calls"] == 3 and charge["eval_tokens"] == 3 * 150
    # the judge's rubric and model are in its requests, fenced with the reply as data
    body = server.requests[0]
    assert body["model"] == "judge" and "same country" in body["messages"][1]["content"]
    assert "<answer>\nFR\n</answer>" in body["messages"][1]["content"]


def test_judge_replies_are_cached(tmp_path: Path):
    server = ChatServer(default=reply('{"pass": true, "reason": "ok"}')).start()
    try:
        c = contract(JUDGED.replace("JUDGE_URL", server.url))
        target, ex = _target(c, tmp_path, make_judge(c, tmp_path))
        record = {"id": ex.id, "samples": [{"status": "ok", "output": "FR"}], "charge": {}}
        first, _ = target._judge_example(ex, record)
        again, charge = target._judge_example(ex, record)
    finally:
        server.close()
    assert first.passed and again.passed and len(server.requests) == 1 and charge["eval_calls"] == 0
    assert json.loads(json.dumps(first.per_check))  # plain data
