"""Model budgets: reserve the worst case, settle from usage, replay from records."""

from __future__ import annotations

from ratchet.agents.llm.budget import (
    ModelBudget,
    ModelCharge,
    ModelLimits,
    Reservation,
    Settlement,
    input_token_bound,
    priced,
)
from ratchet.core.contract_llm import LlmPrice


def test_a_reservation_that_does_not_fit_names_the_budget_and_holds_nothing():
    budget = ModelBudget(ModelLimits(max_output_tokens=300))
    assert isinstance(budget.reserve("a", ModelCharge(1, 10, 200)), Reservation)
    assert budget.reserve("b", ModelCharge(1, 10, 200)) == "max_output_tokens"  # 200 held + 200 > 300
    budget.settle("a", ModelCharge(1, 10, 50))
    assert isinstance(budget.reserve("b", ModelCharge(1, 10, 200)), Reservation)  # 50 + 200 fits
    assert budget.committed.output_tokens == 250


def test_dollars_are_priced_per_million_tokens_and_the_limit_is_inclusive():
    limits = ModelLimits(max_usd=1.0, price=LlmPrice(input_usd_per_mtok=2.5, output_usd_per_mtok=10.0))
    charge = priced(limits, 200_000, 50_000)
    assert abs(charge.usd - 1.0) < 1e-12
    assert ModelBudget(limits).refusal(charge) is None
    assert ModelBudget(limits).refusal(priced(limits, 200_001, 50_000)) == "max_usd"


def test_unknown_usage_settles_at_the_worst_case():
    budget = ModelBudget(ModelLimits())
    budget.reserve("a", ModelCharge(1, 500, 100))
    assert budget.settle("a", None) == Settlement("a", ModelCharge(1, 500, 100))


def test_replay_keeps_an_unsettled_reservation_charged():
    limits = ModelLimits(max_model_calls=2)
    budget = ModelBudget.replay(limits, [Reservation("a", ModelCharge(1, 9, 9)), Settlement("a", ModelCharge(1, 5, 5)),
                                         Reservation("b", ModelCharge(1, 9, 9))])
    assert budget.spent == ModelCharge(1, 5, 5) and budget.committed.calls == 2
    assert budget.exhausted(1) == "max_model_calls"


def test_the_input_bound_is_at_least_the_request_bytes():
    assert input_token_bound(1000, 2) >= 1000 + 2
