"""Model budgets (pure arithmetic): reserve a call's worst case, settle it from reported usage.

Four budgets of `[budget]` (0: unlimited): `max_model_calls`, `max_input_tokens`,
`max_output_tokens`, `max_usd` (priced from `[agent.llm.price]`). Before each call the worst case
is reserved: one call, the request's size as an upper bound on its input tokens, the call's
`max_output_tokens`, and those priced. A call whose worst case does not fit in what is left (after
what is spent and what other open reservations hold) is never made. After the call the reservation
is settled from the usage the server reports; without a report (a timeout, a dropped connection,
a server that omits `usage`) the worst case stays charged. So the spend never exceeds a limit
unless a server reports more tokens than the request could hold, which is charged as reported.

No effects: the caller records reservations and settlements in its ledger and rebuilds a
`ModelBudget` from them on resume (`ModelBudget.replay`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from ratchet.core.contract import Contract
from ratchet.core.contract_llm import LlmPrice

ModelBudgetName = Literal["max_model_calls", "max_input_tokens", "max_output_tokens", "max_usd"]
"""The `[budget]` keys limiting model use (names as in `run.stopped.data.budget`)."""

MODEL_BUDGET_NAMES: tuple[ModelBudgetName, ...] = ("max_model_calls", "max_input_tokens", "max_output_tokens",
                                                   "max_usd")

TOKENS_PER_MTOK = 1_000_000
"""Prices are quoted in USD per million tokens."""

MESSAGE_OVERHEAD_TOKENS = 8
"""Tokens a chat template may add per message (role markers, separators), on top of its bytes."""

REQUEST_OVERHEAD_TOKENS = 16
"""Tokens a chat template may add once per request (start of the assistant's turn, BOS)."""

USD_TOLERANCE = 1e-12
"""Float slack when comparing dollar sums with a limit (sums of products of decimal prices)."""


@dataclass(frozen=True)
class ModelCharge:
    """Model use: calls, input (prompt) tokens, output (completion) tokens, and their price in USD."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0

    def __add__(self, other: ModelCharge) -> ModelCharge:
        return ModelCharge(self.calls + other.calls, self.input_tokens + other.input_tokens,
                           self.output_tokens + other.output_tokens, self.usd + other.usd)

    def __sub__(self, other: ModelCharge) -> ModelCharge:
        return ModelCharge(self.calls - other.calls, self.input_tokens - other.input_tokens,
                           self.output_tokens - other.output_tokens, self.usd - other.usd)

    def to_json(self) -> dict[str, int | float]:
        """{"calls", "input_tokens", "output_tokens", "usd"} for a ledger event."""
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "usd": self.usd}

    @classmethod
    def from_json(cls, data: dict[str, int | float]) -> ModelCharge:
        """The inverse of `to_json`."""
        return cls(int(data["calls"]), int(data["input_tokens"]), int(data["output_tokens"]), float(data["usd"]))


@dataclass(frozen=True)
class ModelLimits:
    """The four limits of `[budget]` (0: unlimited) and the price table of `[agent.llm.price]`."""

    max_model_calls: int = 0
    max_input_tokens: int = 0
    max_output_tokens: int = 0
    max_usd: float = 0.0
    price: LlmPrice = LlmPrice()

    @classmethod
    def from_contract(cls, contract: Contract) -> ModelLimits:
        """The limits of `contract` (the price table is empty unless `agent.kind = "llm"`)."""
        b = contract.budget
        price = contract.agent.llm.price if contract.agent.llm is not None else LlmPrice()
        return cls(b.max_model_calls, b.max_input_tokens, b.max_output_tokens, b.max_usd, price)


def priced(limits: ModelLimits, input_tokens: int, output_tokens: int, calls: int = 1) -> ModelCharge:
    """A charge of `calls` calls using these tokens, priced in USD from `limits.price`."""
    usd = (input_tokens * limits.price.input_usd_per_mtok + output_tokens * limits.price.output_usd_per_mtok)
    return ModelCharge(calls, input_tokens, output_tokens, usd / TOKENS_PER_MTOK)


def input_token_bound(request_bytes: int, messages: int) -> int:
    """An upper bound on the input tokens of a request: its UTF-8 size in bytes (every token of a
    byte-level or byte-fallback tokenizer covers at least one byte) plus the template's overhead."""
    return request_bytes + messages * MESSAGE_OVERHEAD_TOKENS + REQUEST_OVERHEAD_TOKENS


def worst_case(limits: ModelLimits, request_bytes: int, messages: int, max_output_tokens: int) -> ModelCharge:
    """The most one call can cost: one call, `input_token_bound` input tokens, `max_output_tokens`."""
    return priced(limits, input_token_bound(request_bytes, messages), max_output_tokens)


def overrun(limits: ModelLimits, committed: ModelCharge, ask: ModelCharge) -> ModelBudgetName | None:
    """The first budget that `committed` (spent plus open reservations) plus `ask` would exceed, or
    None when it fits. A limit of 0 is unlimited."""
    total = committed + ask
    checks: tuple[tuple[ModelBudgetName, float, float, float], ...] = (
        ("max_model_calls", limits.max_model_calls, total.calls, 0.0),
        ("max_input_tokens", limits.max_input_tokens, total.input_tokens, 0.0),
        ("max_output_tokens", limits.max_output_tokens, total.output_tokens, 0.0),
        ("max_usd", limits.max_usd, total.usd, USD_TOLERANCE),
    )
    for name, limit, value, slack in checks:
        if limit and value > limit + slack:
            return name
    return None


@dataclass(frozen=True)
class Reservation:
    """An open reservation: its `key` (the call's slot key) and the worst case it holds."""

    key: str
    charge: ModelCharge


@dataclass(frozen=True)
class Settlement:
    """A closed reservation: its `key` and what was charged (zero when released unsent)."""

    key: str
    charge: ModelCharge


@dataclass
class ModelBudget:
    """What has been spent and what open reservations hold, against `limits`.

    `reserve` before a call, `settle` after it (or `release` when it was never sent). Mutable, but
    without effects: the caller writes each reservation and settlement to its ledger.
    """

    limits: ModelLimits
    spent: ModelCharge = ModelCharge()
    open: dict[str, Reservation] = field(default_factory=dict)

    @property
    def committed(self) -> ModelCharge:
        """Spent plus every open reservation's worst case."""
        total = self.spent
        for r in self.open.values():
            total = total + r.charge
        return total

    def refusal(self, ask: ModelCharge) -> ModelBudgetName | None:
        """The budget that forbids reserving `ask` now, or None."""
        return overrun(self.limits, self.committed, ask)

    def exhausted(self, max_output_tokens: int) -> ModelBudgetName | None:
        """The budget that forbids even the smallest call (no input, `max_output_tokens` output), or
        None: the loop's check before starting an attempt."""
        return self.refusal(priced(self.limits, REQUEST_OVERHEAD_TOKENS, max_output_tokens))

    def reserve(self, key: str, ask: ModelCharge) -> Reservation | ModelBudgetName:
        """Hold `ask` under `key` and return the reservation, or the name of the budget it would
        exceed (nothing held). Raises ValueError when `key` already holds a reservation."""
        if key in self.open:
            raise ValueError(f"a reservation for {key} is already open")
        name = self.refusal(ask)
        if name is not None:
            return name
        reservation = Reservation(key, ask)
        self.open[key] = reservation
        return reservation

    def settle(self, key: str, actual: ModelCharge | None) -> Settlement:
        """Close the reservation `key`, charging `actual` (None: the worst case it held, for a call
        whose usage is unknown). Returns the settlement to record. Raises KeyError when `key` is not
        open."""
        reservation = self.open.pop(key)
        charged = reservation.charge if actual is None else actual
        self.spent = self.spent + charged
        return Settlement(key, charged)

    @classmethod
    def replay(cls, limits: ModelLimits, records: Iterable[Reservation | Settlement]) -> ModelBudget:
        """Rebuild from a ledger: its reservations and settlements in ledger order. A reservation
        never settled (the kernel was killed during the call) stays open, so its worst case stays
        charged: a resume never spends beyond a limit."""
        budget = cls(limits)
        for record in records:
            if isinstance(record, Reservation):
                budget.open[record.key] = record
            else:
                budget.open.pop(record.key, None)
                budget.spent = budget.spent + record.charge
        return budget
