"""The llm agent's asks (pure): what one model call reserves, and what it is charged after.

Four budgets of `[budget]` (0: unlimited) limit model use: `max_model_calls`, `max_input_tokens`,
`max_output_tokens`, `max_usd` (priced from `[agent.llm.price]`). Before each call its worst case is
reserved in the run's Account (`budget.account`): one call, the request's size as an upper bound on
its input tokens, the call's `max_output_tokens`, and those priced. A call whose worst case does not
fit in what is left (after what is spent and what other open reservations hold) is never made.
After the call the reservation is settled from the usage the server reports; without a report (a
timeout, a dropped connection, a server that omits `usage`) the worst case stays charged. So the
spend never exceeds a limit unless a server reports more tokens than the request could hold, which
is charged as reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from ratchet.core.budget.account import Account, BudgetStop, Charge, Reservation, ResourceName
from ratchet.core.contract_llm import LlmPrice

TOKENS_PER_MTOK = 1_000_000
"""Prices are quoted in USD per million tokens."""

MESSAGE_OVERHEAD_TOKENS = 8
"""Tokens a chat template may add per message (role markers, separators), on top of its bytes."""

REQUEST_OVERHEAD_TOKENS = 16
"""Tokens a chat template may add once per request (start of the assistant's turn, BOS)."""

CALL_BASIS: Mapping[ResourceName, str] = {
    "input_tokens": "worst case: the request's size in bytes",
    "output_tokens": "worst case: max_output_tokens",
    "usd": "worst case, priced",
}
"""How a call's reservation is reckoned, per resource (BudgetStop details say it)."""


def priced(price: LlmPrice, input_tokens: int, output_tokens: int, calls: int = 1) -> Charge:
    """A charge of `calls` model calls using these tokens, priced in USD from `price` (per million)."""
    usd = input_tokens * price.input_usd_per_mtok + output_tokens * price.output_usd_per_mtok
    return Charge.of(model_calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
                     usd=usd / TOKENS_PER_MTOK)


def input_token_bound(request_bytes: int, messages: int) -> int:
    """An upper bound on the input tokens of a request: its UTF-8 size in bytes (every token of a
    byte-level or byte-fallback tokenizer covers at least one byte) plus the template's overhead."""
    return request_bytes + messages * MESSAGE_OVERHEAD_TOKENS + REQUEST_OVERHEAD_TOKENS


def call_worst_case(price: LlmPrice, request_bytes: int, messages: int, max_output_tokens: int) -> Charge:
    """The most one call can cost: one call, `input_token_bound` input tokens, `max_output_tokens`."""
    return priced(price, input_token_bound(request_bytes, messages), max_output_tokens)


def reserve_call(account: Account, key: str, ask: Charge) -> Reservation | BudgetStop:
    """Reserve the call in slot `key` (its worst case `ask`): the Reservation, or the BudgetStop
    when it does not fit (nothing held). Raises ValueError when `key` is already reserved."""
    return account.reserve(key, ask, f"the model call {key}", CALL_BASIS)


def smallest_call_refusal(account: Account, price: LlmPrice, max_output_tokens: int) -> BudgetStop | None:
    """The budget that forbids even the smallest call (no input, `max_output_tokens` output), or
    None: the loop's check before starting an attempt."""
    return account.refusal(priced(price, REQUEST_OVERHEAD_TOKENS, max_output_tokens), "the smallest model call",
                           CALL_BASIS)
