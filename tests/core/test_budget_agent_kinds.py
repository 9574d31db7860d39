"""Which budgets each agent kind enforces, and what a command agent's leg is charged
(core.budget.agent_kinds): plain values in, plain values out."""

from __future__ import annotations

import pytest

from ratchet.core.budget import Charge
from ratchet.core.budget.agent_kinds import command_budget_stop, leg_charge, unenforceable_budgets
from ratchet.core.contract import Contract
from ratchet.core.contract_llm import LlmPrice

BASE = {
    "campaign": {"name": "c"},
    "target": {"kind": "benchmark", "command": "python3 bench.py", "metric": "score", "direction": "max"},
    "scope": {"allowed": ["src/"]},
}

AGENTS = {
    "search": {"kind": "search", "search": {"file": "p.toml", "space": {"x": {"type": "float", "low": 0, "high": 1}}}},
    "files": {"kind": "files", "files": {"path": "candidates"}},
    "command": {"kind": "command", "command": {"command": "python3 agent/bot.py {prompt}"}},
    "claude": {"kind": "command", "command": {"command": "claude -p {prompt_text} --output-format json"}},
    "priced": {"kind": "command", "command": {"command": "python3 agent/bot.py {prompt}",
                                              "price": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}}},
}


def contract(agent: str, **budget: float) -> Contract:
    return Contract.model_validate({**BASE, "agent": AGENTS[agent], "budget": budget})


@pytest.mark.parametrize("agent", ["search", "files"])
@pytest.mark.parametrize("key", ["max_model_calls", "max_input_tokens", "max_output_tokens", "max_usd"])
def test_agents_without_a_model_refuse_every_model_budget(agent: str, key: str):
    refused = unenforceable_budgets(contract(agent, **{key: 5}))
    assert [r.budget for r in refused] == [key]
    assert agent in refused[0].why and key in refused[0].hint


def test_a_command_agent_refuses_model_calls_and_unpriced_dollars_but_holds_tokens():
    refused = unenforceable_budgets(contract("command", max_model_calls=3, max_input_tokens=10, max_output_tokens=10,
                                             max_usd=1.0))
    assert [r.budget for r in refused] == ["max_model_calls", "max_usd"]


def test_a_command_agent_holds_dollars_with_a_price_or_a_cli_known_to_report_its_cost():
    assert unenforceable_budgets(contract("priced", max_usd=1.0)) == []
    assert unenforceable_budgets(contract("claude", max_usd=1.0)) == []


def test_unlimited_budgets_are_never_refused():
    assert unenforceable_budgets(contract("search")) == []
    assert unenforceable_budgets(contract("command")) == []


PRICE = LlmPrice(input_usd_per_mtok=3.0, output_usd_per_mtok=15.0)


def test_claude_codes_cache_tokens_count_as_input_and_its_reported_cost_wins_over_the_price():
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 20000,
             "output_tokens": 500}
    charge = leg_charge(usage, 0.42, PRICE)
    assert charge == Charge.of(input_tokens=21010, output_tokens=500, usd=0.42)


def test_codex_cached_input_is_part_of_its_input_and_tokens_are_priced_without_a_reported_cost():
    charge = leg_charge({"input_tokens": 2_000_000, "cached_input_tokens": 1_500_000, "output_tokens": 100_000},
                        None, PRICE)
    assert charge is not None
    assert charge["input_tokens"] == 2_000_000 and charge["output_tokens"] == 100_000
    assert charge["usd"] == pytest.approx(2 * 3.0 + 0.1 * 15.0)


def test_openai_style_usage_is_read_and_a_leg_reporting_nothing_is_unknown():
    assert leg_charge({"prompt_tokens": 7, "completion_tokens": 3}, None, LlmPrice()) == Charge.of(
        input_tokens=7, output_tokens=3)
    assert leg_charge({}, None, PRICE) is None
    assert leg_charge({"total_tokens": 9}, None, PRICE) is None
    assert leg_charge({}, 0.0, PRICE) == Charge()  # a reported zero cost is a count, not unknown


def test_a_reached_limit_stops_with_its_arithmetic_and_a_limit_with_room_does_not():
    limits = {"input_tokens": 1_000_000.0, "usd": 2.0}
    stop = command_budget_stop(limits, Charge.of(input_tokens=4_200_000))
    assert stop is not None and stop.name == "max_input_tokens" and not stop.forecast
    assert stop.detail.startswith("max_input_tokens: 4,200,000 of 1,000,000 input tokens used")
    assert command_budget_stop(limits, Charge.of(input_tokens=999_999, usd=1.99)) is None
    reached = command_budget_stop(limits, Charge.of(usd=2.0))  # nothing left: no further leg
    assert reached is not None and reached.detail.startswith("max_usd: 2.0000 of 2.0000 USD used")
    assert command_budget_stop({}, Charge.of(input_tokens=10**9)) is None
