"""Which budgets each agent kind can enforce, and what a command agent's leg is charged (pure).

The model budgets (`max_model_calls`, `max_input_tokens`, `max_output_tokens`, `max_usd`) are held
by the agent that uses a model: the llm agent reserves each call's worst case (`budget.model`); a
command agent's CLI is charged after each leg from the usage it reported (`leg_charge`), and no
further leg starts once a budget is spent (`command_budget_stop`). The search and files agents call
no model. `unenforceable_budgets` is the one rule `ratchet check` and `ratchet run` refuse by.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from ratchet.core.budget.account import RESOURCES, BudgetName, BudgetStop, Charge, ResourceName
from ratchet.core.budget.model import TOKENS_PER_MTOK
from ratchet.core.contract import Contract
from ratchet.core.contract_llm import LlmPrice

MODEL_BUDGETS: tuple[BudgetName, ...] = ("max_model_calls", "max_input_tokens", "max_output_tokens", "max_usd")
"""The `[budget]` keys that limit a model's use."""

COMMAND_RESOURCES: tuple[ResourceName, ...] = ("input_tokens", "output_tokens", "usd")
"""What a command agent's legs are charged: the tokens and dollars its CLI reports."""

COST_REPORTING_CLIS = frozenset({"claude"})
"""Programs (the first word of `agent.command.command`, its base name) whose documented JSON output
carries the cost in USD (Claude Code's `total_cost_usd`), so `max_usd` needs no price for them."""

INPUT_KEYS = ("input_tokens", "prompt_tokens")
"""Keys of a CLI's `usage` read as input tokens (the first present): Claude Code and Codex write
`input_tokens`, OpenAI-style chat usage `prompt_tokens`."""

CACHE_INPUT_KEYS = ("cache_creation_input_tokens", "cache_read_input_tokens")
"""Anthropic-style input tokens counted apart from `input_tokens` (Claude Code), added to it.
Codex's `cached_input_tokens` is a part of its `input_tokens` and is not added."""

OUTPUT_KEYS = ("output_tokens", "completion_tokens")
"""Keys of a CLI's `usage` read as output tokens (the first present)."""


@dataclass(frozen=True)
class Unenforceable:
    """A budget the configured agent kind cannot hold: the `[budget]` key (`budget`), why (one
    sentence naming the agent kind) and what to do (`hint`)."""

    budget: BudgetName
    why: str
    hint: str


def reports_cost(command: str) -> bool:
    """Whether the program of the command template `command` is one whose documented JSON output
    carries a cost in USD (COST_REPORTING_CLIS). A template that does not split reports none."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return bool(words) and words[0].rsplit("/", 1)[-1] in COST_REPORTING_CLIS


def priced_by(price: LlmPrice) -> bool:
    """Whether `price` gives any price (a table of zeros prices nothing)."""
    return price.input_usd_per_mtok > 0 or price.output_usd_per_mtok > 0


def unenforceable_budgets(contract: Contract) -> list[Unenforceable]:
    """Every limited model budget (MODEL_BUDGETS, > 0) the contract's agent kind cannot hold, in
    BUDGET_NAMES order (empty: all can be held).

    search, files: no model is called, so none of the model budgets. command: `max_model_calls`
    (a CLI reports no count of its calls), and `max_usd` unless the CLI reports a cost
    (`reports_cost`) or `[agent.command.price]` gives a price. llm: all (a max_usd without prices is
    refused by the contract itself)."""
    b = contract.budget
    limited = [name for name in MODEL_BUDGETS if getattr(b, name) > 0]
    kind = contract.agent.kind
    if kind in ("search", "files"):
        return [Unenforceable(name, f"agent.kind = {kind!r} calls no model, so budget.{name} would limit nothing",
                              f"remove budget.{name} (or set it to 0)") for name in limited]
    command = contract.agent.command
    if kind != "command" or command is None:
        return []
    out = []
    if "max_model_calls" in limited:
        out.append(Unenforceable("max_model_calls", "a command agent's CLI does not report how many model calls it "
                                 "made, so budget.max_model_calls cannot be counted",
                                 "limit budget.max_input_tokens, max_output_tokens or max_usd instead"))
    if "max_usd" in limited and not (reports_cost(command.command) or priced_by(command.price)):
        out.append(Unenforceable("max_usd", "this command agent's CLI is not one known to report a cost in USD and "
                                 "[agent.command.price] gives no price, so budget.max_usd cannot be counted",
                                 "set [agent.command.price] input_usd_per_mtok and output_usd_per_mtok"))
    return out


def _first(usage: Mapping[str, int], keys: tuple[str, ...]) -> int | None:
    return next((usage[k] for k in keys if k in usage), None)


def leg_charge(usage: Mapping[str, int], cost_usd: float | None, price: LlmPrice) -> Charge | None:
    """What one leg of a command agent is charged from what its CLI reported: `usage` (integer
    counts of its `usage` object) and `cost_usd` (its reported cost, None when absent).

    Input tokens: INPUT_KEYS plus CACHE_INPUT_KEYS; output tokens: OUTPUT_KEYS; dollars: the reported
    cost, else the tokens priced from `price` (USD per million tokens). None when the CLI reported
    neither input nor output tokens nor a cost (the leg's use is unknown)."""
    given_in, given_out = _first(usage, INPUT_KEYS), _first(usage, OUTPUT_KEYS)
    if given_in is None and given_out is None and cost_usd is None:
        return None
    tokens_in = (given_in or 0) + sum(usage.get(k, 0) for k in CACHE_INPUT_KEYS)
    tokens_out = given_out or 0
    if cost_usd is None:
        cost_usd = (tokens_in * price.input_usd_per_mtok + tokens_out * price.output_usd_per_mtok) / TOKENS_PER_MTOK
    return Charge.of(input_tokens=tokens_in, output_tokens=tokens_out, usd=cost_usd)


def command_budget_stop(limits: Mapping[ResourceName, float], spent: Charge) -> BudgetStop | None:
    """The first command-agent budget (COMMAND_RESOURCES, RESOURCES order) that `spent` has reached
    or passed, or None while every one has something left (a limit of 0 is unlimited).

    A leg's use is known only after it ran, so no leg starts once a limit is reached, and a run
    passes a limit by at most its last leg's use. The detail says so with the sum, e.g.
    "max_input_tokens: 4,200,000 of 1,000,000 input tokens used"."""
    for r in RESOURCES:
        limit = limits.get(r.name, 0)
        if r.name in COMMAND_RESOURCES and limit and spent[r.name] >= limit - r.slack:
            used, cap = (f"{x:,.{r.digits}f}" for x in (spent[r.name], limit))
            return BudgetStop(r.budget, f"{r.budget}: {used} of {cap} {r.unit} used (counted from the usage the "
                                        "agent's CLI reported after each leg)")
    return None
