"""[agent.llm] and the model budgets of [budget]: what a user can get wrong gets a clear error."""

from __future__ import annotations

import pytest

from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import ContractError

BASE = """
[campaign]
name = "c"
[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
[scope]
allowed = ["params.toml"]
[agent]
kind = "llm"
[agent.llm]
base_url = "{url}"
model = "qwen"
{llm}
[budget]
{budget}
"""


def load(llm: str = "", budget: str = "", url: str = "http://127.0.0.1:8000/v1"):
    return parse_contract(BASE.format(llm=llm, budget=budget, url=url))


def error(llm: str = "", budget: str = "", url: str = "http://127.0.0.1:8000/v1") -> ContractError:
    with pytest.raises(ContractError) as err:
        load(llm, budget, url)
    return err.value


def test_defaults_and_every_key_load():
    c = load('api_key_env = ""\ntemperature = 0.0\nseed = 7\nmax_output_tokens = 512\ncontext_window = 8192\n'
             'request_timeout_s = 30\nmax_retries = 2\nretry_max_wait_s = 5\nstrategy = true\ndirectives = 4\n'
             '[agent.llm.price]\ninput_usd_per_mtok = 0.15\noutput_usd_per_mtok = 0.6\n'
             '[agent.llm.prompts]\nsystem = "prompts/system.md"',
             "max_model_calls = 50\nmax_input_tokens = 1000000\nmax_output_tokens = 100000\nmax_usd = 2.5")
    llm = c.agent.llm
    assert (llm.api_key_env, llm.seed, llm.directives, llm.price.output_usd_per_mtok) == ("", 7, 4, 0.6)
    assert (c.budget.max_model_calls, c.budget.max_usd) == (50, 2.5)
    assert load().agent.llm.api_key_env == "OPENAI_API_KEY"


def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it():
    err = error('api_key_env = "sk-abc123-secret"')
    assert "NAME of the variable" in err.message and "sk-abc123-secret" not in str(err)
    assert err.code == "contract.invalid"


def test_the_moved_keys_say_where_they_live_now():
    assert "budget.max_model_calls" in error("max_calls = 5").message
    assert "budget.max_output_tokens" in error("max_tokens = 5").message


def test_bad_values_name_their_key():
    assert "agent.llm.base_url" in error(url="localhost:8000").message
    assert "must not carry credentials" in error(url="https://user:pw@api.example.com/v1").message
    assert "agent.llm.temperature" in error("temperature = 3.0").message
    assert "no room for a prompt" in error("max_output_tokens = 9000\ncontext_window = 8192").message
    assert "budget.max_usd" in error(budget="max_usd = -1").message


def test_a_dollar_budget_needs_a_price_table():
    assert "[agent.llm.price]" in error(budget="max_usd = 1.0").message


def test_a_prompt_override_must_be_a_relative_path():
    assert "agent.llm.prompts.system" in error('[agent.llm.prompts]\nsystem = "/etc/passwd"').message
