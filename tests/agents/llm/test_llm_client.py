"""The chat client against a real local chat-completions server (real openai SDK, real HTTP)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from llm_journal import DirJournal
from llm_server import ChatServer, hold, reply, status

from ratchet.agents.llm.client import MAX_IDENTICAL_SERVER_ERRORS, ChatClient, retry_after_s
from ratchet.agents.llm.records import Message
from ratchet.core.budget import Account, Charge, ResourceName
from ratchet.core.contract_llm import LlmAgentConfig, LlmPrice

KEY = "sk-test-SECRET-0123456789abcdef"
HELLO = [Message("system", "You are terse."), Message("user", "Say hi.")]


@pytest.fixture
def server():
    s = ChatServer().start()
    yield s
    s.close()


def make_client(server: ChatServer, tmp_path: Path, limits: dict[ResourceName, float] | None = None, waits=None,
                **config):
    cfg = LlmAgentConfig(base_url=server.url, model="test-model", api_key_env="TEST_LLM_KEY",
                         **{"request_timeout_s": 5.0, "retry_max_wait_s": 2.0, **config})
    journal = DirJournal(tmp_path / "journal")
    waited = waits if waits is not None else []
    client = ChatClient(cfg, Account(limits or {}), journal, environ={"TEST_LLM_KEY": KEY},
                        sleep=waited.append, backoff_base_s=0.01)
    return client, journal


def test_clean_reply_is_recorded_with_its_usage_and_the_key_only_in_the_header(server, tmp_path):
    server.default = reply("hi", prompt_tokens=12, completion_tokens=3)
    client, journal = make_client(server, tmp_path)
    result = client.call("attempt-1/executor-0", "executor", HELLO)
    assert result.ok and result.reply.content == "hi"
    record = result.record
    assert (record.outcome, record.input_tokens, record.output_tokens) == ("ok", 12, 3)
    assert record.charged == Charge.of(model_calls=1, input_tokens=12, output_tokens=3)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert server.requests[0]["messages"][1] == {"role": "user", "content": "Say hi."}
    assert b"Say hi." in journal.get_blob(record.request_blob)
    for path in (tmp_path / "journal").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the key leaked into {path}"


def test_a_recorded_reply_is_reused_never_requested_again(server, tmp_path):
    server.default = reply("hi")
    client, journal = make_client(server, tmp_path)
    client.call("k", "executor", HELLO)
    again = ChatClient(client.config, journal.budget({}), DirJournal(tmp_path / "journal"),
                       environ={"TEST_LLM_KEY": KEY}).call("k", "executor", HELLO)
    assert again.reused and again.reply.content == "hi"
    assert len(server.requests) == 1


def test_429_is_retried_after_the_seconds_in_retry_after(server, tmp_path):
    server.script = [status(429, "slow down", {"Retry-After": "1"}), reply("ok")]
    waits: list[float] = []
    client, _ = make_client(server, tmp_path, waits=waits)
    result = client.call("k", "executor", HELLO)
    assert result.ok and waits == [1.0]
    assert [t.status for t in result.record.tries] == [429, 200]


def test_retry_after_as_an_http_date_is_honoured_and_capped(server, tmp_path):
    later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    server.script = [status(429, "slow down", {"Retry-After": later}), reply("ok")]
    waits: list[float] = []
    client, _ = make_client(server, tmp_path, waits=waits, retry_max_wait_s=2.0)
    assert client.call("k", "executor", HELLO).ok
    assert waits == [2.0]


def test_retry_after_parses_seconds_dates_and_garbage():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_s("7", now) == 7.0
    assert retry_after_s("Thu, 01 Jan 2026 00:00:30 GMT", now) == 30.0
    assert retry_after_s("Wed, 31 Dec 2025 00:00:00 GMT", now) == 0.0
    assert retry_after_s("soon", now) is None and retry_after_s(None, now) is None


def test_500_then_success_gives_the_reply(server, tmp_path):
    server.script = [status(500, "boom"), reply("fine")]
    client, _ = make_client(server, tmp_path)
    result = client.call("k", "executor", HELLO)
    assert result.ok and result.reply.content == "fine"
    assert [t.status for t in result.record.tries] == [500, 200]


def test_identical_5xx_end_the_call_after_the_limit(server, tmp_path):
    server.default = status(503, "overloaded")
    client, _ = make_client(server, tmp_path, max_retries=10)
    result = client.call("k", "executor", HELLO)
    assert not result.ok and result.record.outcome == "server_error"
    assert len(server.requests) == MAX_IDENTICAL_SERVER_ERRORS
    assert "503" in result.record.detail and "overloaded" in result.record.detail


def test_4xx_other_than_429_is_not_retried(server, tmp_path):
    server.default = status(400, "bad field")
    client, _ = make_client(server, tmp_path)
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "client_error" and len(server.requests) == 1
    assert result.record.charged == Charge.of(model_calls=1)


def test_unknown_model_is_a_configuration_error_naming_the_keys(server, tmp_path):
    server.default = status(404, "model 'test-model' not found")
    client, _ = make_client(server, tmp_path)
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "config_error" and "agent.llm.model" in result.record.detail


def test_a_connection_held_open_without_content_hits_the_deadline(server, tmp_path):
    server.default = hold(30.0, server.stop)
    client, _ = make_client(server, tmp_path, request_timeout_s=1.0)
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "timeout" and "request_timeout_s" in result.record.detail
    assert result.record.charged == client.budget.spent  # unknown usage: the worst case stays charged
    assert result.record.charged["output_tokens"] == client.config.max_output_tokens


def test_an_empty_reply_cut_off_near_the_context_window_is_a_configuration_error(server, tmp_path):
    server.default = reply("", finish_reason="length", prompt_tokens=7900, completion_tokens=0)
    client, _ = make_client(server, tmp_path, context_window=8192, max_output_tokens=1024)
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "config_error"
    assert "context_window" in result.record.detail and "7900" in result.record.detail


def test_a_missing_key_variable_is_a_configuration_error_and_nothing_is_sent(server, tmp_path):
    server.default = reply("hi")
    client, _ = make_client(server, tmp_path)
    client.environ = {}
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "config_error" and "TEST_LLM_KEY" in result.record.detail
    assert server.requests == [] and client.budget.spent["model_calls"] == 0


def test_a_server_without_usage_is_charged_the_worst_case(server, tmp_path):
    server.default = reply("hi", prompt_tokens=None, completion_tokens=None)
    client, _ = make_client(server, tmp_path, max_output_tokens=64)
    result = client.call("k", "executor", HELLO)
    assert result.ok and result.record.charged["output_tokens"] == 64


def test_the_dollar_budget_refuses_a_call_whose_worst_case_does_not_fit(server, tmp_path):
    server.default = reply("hi", prompt_tokens=100, completion_tokens=100)
    price = LlmPrice(input_usd_per_mtok=1000.0, output_usd_per_mtok=1000.0)  # $0.001 per token
    client, _ = make_client(server, tmp_path, {"usd": 0.5}, max_output_tokens=100, price=price)
    outcomes = [client.call(f"k{i}", "executor", HELLO).record.outcome for i in range(5)]
    assert outcomes.count("ok") == len(server.requests) >= 1
    assert outcomes[-1] == "budget_refused"
    assert client.budget.spent["usd"] <= 0.5 + 1e-12


def test_an_unreachable_server_is_retried_then_a_recorded_connection_error(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the call: nothing listens there
    cfg = LlmAgentConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env="", max_retries=2)
    waits: list[float] = []
    client = ChatClient(cfg, Account({}), DirJournal(tmp_path / "j"), sleep=waits.append,
                        backoff_base_s=0.5)
    result = client.call("k", "executor", HELLO)
    assert result.record.outcome == "connection_error" and f"127.0.0.1:{port}" in result.record.detail
    assert waits == [0.5, 1.0] and len(result.record.tries) == 3
