"""What a prompt solution's model calls may cost (pure): the worst case the kernel reserves before
each attempt's trial and for the final measurement, in eval calls, eval tokens and eval dollars
(`budget.max_eval_calls`, `max_eval_tokens`, `max_eval_usd`; docs/budgets.md).

One job-unit of a prompt solution (one example measured on one tree) makes at most `samples` eval
calls and, per llm_judge check, `samples` judge calls. A call's tokens are bounded by its model's
`context_window` (prompt and reply together), of which at most `max_tokens` are output; so its
dollars are at most (context_window - max_tokens) x input price + max_tokens x output price. A
cached reply costs nothing, so what is spent is usually far below what is reserved; the reserve is
what guarantees a limit is never crossed by starting work.
"""

from __future__ import annotations

from collections.abc import Mapping

from ratchet.core.budget.account import Charge, ResourceName
from ratchet.core.contract import Contract, ModelSection

TOKENS_PER_MTOK = 1_000_000
"""Prices are quoted in USD per million tokens."""

EVAL_BASIS: Mapping[ResourceName, str] = {
    "eval_calls": "worst case: job-units x samples x (1 + llm_judge checks)",
    "eval_tokens": "worst case: each call filling its context_window",
    "eval_usd": "worst case, priced",
}
"""How eval calls are reckoned, per resource (BudgetStop details say it)."""


def call_worst_case(model: ModelSection) -> Charge:
    """The most one call to `model` can cost: one call, context_window tokens, priced with at most
    max_tokens of them output."""
    usd = ((model.context_window - model.max_tokens) * model.price.input_usd_per_mtok
           + model.max_tokens * model.price.output_usd_per_mtok) / TOKENS_PER_MTOK
    return Charge.of(eval_calls=1, eval_tokens=model.context_window, eval_usd=usd)


def eval_worst_case(contract: Contract, job_units: int) -> Charge:
    """The most `job_units` job-units of the contract's prompt solution can cost in model calls (see
    the module docstring); nothing for a script solution."""
    t = contract.target
    if t.solution_kind != "prompt" or t.model is None or job_units <= 0:
        return Charge()
    judges = sum(1 for c in t.checks if c.type == "llm_judge")
    per_unit = _times(call_worst_case(t.model), t.model.samples)
    if judges and t.judge is not None:
        per_unit = per_unit + _times(call_worst_case(t.judge), t.model.samples * judges)
    return _times(per_unit, job_units)


def _times(charge: Charge, n: int) -> Charge:
    return Charge({name: amount * n for name, amount in charge.amounts.items()})
