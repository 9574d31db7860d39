"""The one budget mechanism: reserve before work, settle from use, replay from records, and the
refusal's arithmetic, for the kernel's resources and the llm agent's alike."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_contract import GOOD

from ratchet.core.budget import (
    BUDGET_NAMES,
    RESOURCES,
    Account,
    Charge,
    Reservation,
    Settlement,
    launch_refusal,
    limits_of,
    recorded_limits,
)
from ratchet.core.budget.model import input_token_bound, priced, smallest_call_refusal
from ratchet.core.contract_llm import LlmPrice
from ratchet.core.contract_load import parse_contract
from ratchet.core.state import BudgetUsed

FREE = LlmPrice()


def _contract(budget: str, compute: str = ""):
    return parse_contract(GOOD + compute + "[budget]\n" + budget)


def test_every_budget_key_limits_one_resource_in_check_order():
    assert tuple(r.budget for r in RESOURCES) == BUDGET_NAMES
    assert len({r.name for r in RESOURCES}) == len(RESOURCES)
    c = _contract('max_wall = "2m"\nmax_usd = 3.5\n')
    assert limits_of(c)["wall_s"] == 120.0 and limits_of(c)["usd"] == 3.5
    assert set(recorded_limits(c)) == {r.attribute for r in RESOURCES} and recorded_limits(c)["max_wall_s"] == 120.0


def test_a_reservation_that_does_not_fit_names_the_budget_and_holds_nothing():
    account = Account({"output_tokens": 300})
    assert isinstance(account.reserve("a", Charge.of(model_calls=1, output_tokens=200), "call a"), Reservation)
    stop = account.reserve("b", Charge.of(model_calls=1, output_tokens=200), "call b")  # 200 held + 200 > 300
    assert not isinstance(stop, Reservation) and stop.name == "max_output_tokens" and stop.forecast
    assert "200 reserved for call a" in stop.detail and set(account.open) == {"a"}
    account.settle("a", Charge.of(model_calls=1, output_tokens=50))
    assert isinstance(account.reserve("b", Charge.of(model_calls=1, output_tokens=200), "call b"), Reservation)
    assert account.committed["output_tokens"] == 250


def test_a_key_cannot_hold_two_reservations():
    account = Account({})
    account.reserve("a", Charge.of(job_units=1), "a")
    with pytest.raises(ValueError, match="already open"):
        account.reserve("a", Charge.of(job_units=1), "a")


def test_dollars_are_priced_per_million_tokens_and_the_limit_is_inclusive():
    price = LlmPrice(input_usd_per_mtok=2.5, output_usd_per_mtok=10.0)
    charge = priced(price, 200_000, 50_000)
    assert abs(charge["usd"] - 1.0) < 1e-12
    assert Account({"usd": 1.0}).refusal(charge, "a call") is None
    stop = Account({"usd": 1.0}).refusal(priced(price, 200_001, 50_000), "a call")
    assert stop is not None and stop.name == "max_usd"


def test_unknown_use_settles_at_the_charge_held():
    account = Account({})
    account.reserve("a", Charge.of(model_calls=1, input_tokens=500, output_tokens=100), "a")
    assert account.settle("a", None) == Settlement("a", Charge.of(model_calls=1, input_tokens=500, output_tokens=100))
    assert account.spent["input_tokens"] == 500 and not account.open


def test_replay_keeps_an_unsettled_reservation_charged():
    records = [Reservation("a", Charge.of(model_calls=1, input_tokens=9)), Settlement("a", Charge.of(model_calls=1)),
               Reservation("b", Charge.of(model_calls=1, input_tokens=9))]
    account = Account.replay({"model_calls": 2}, records)
    assert account.spent == Charge.of(model_calls=1) and account.committed["model_calls"] == 2
    stop = smallest_call_refusal(account, FREE, 10)
    assert stop is not None and stop.name == "max_model_calls"


def test_a_charge_round_trips_through_json_and_reads_format_2_model_keys():
    charge = Charge.of(model_calls=2, input_tokens=10, usd=0.5)
    assert Charge.from_json(charge.to_json()) == charge
    assert Charge.from_json({"calls": 1, "input_tokens": 3, "output_tokens": 0, "usd": 0.0}) == \
        Charge.of(model_calls=1, input_tokens=3)
    with pytest.raises(ValueError, match="not budgeted"):
        Charge.from_json({"tokens": 1})


def test_a_spent_budget_is_refused_as_spent_not_as_a_forecast():
    stop = Account({"model_calls": 3}, Charge.of(model_calls=3)).refusal(Charge.of(model_calls=1), "a call")
    assert stop is not None and not stop.forecast
    assert stop.detail == "max_model_calls = 3 model calls is spent (3 model calls used)"


def test_a_launch_fits_only_after_the_trial_and_the_final_measurement_are_reserved():
    c = _contract("max_evaluations = 100\n")
    used = BudgetUsed(attempts=1, evaluations=40)
    assert launch_refusal(c, used, 10, 10.0, trial_units=30, reserve_units=20, max_parallel=2) is None  # 40+10+30+20
    stop = launch_refusal(c, used, 11, 11.0, trial_units=30, reserve_units=20, max_parallel=2)
    assert stop is not None and stop.name == "max_evaluations"
    assert stop.detail == ("forecast, not spent: 40 job-units used + 11 for the launch (worst case) + 30 reserved for "
                           "the attempt's trial + 20 reserved for the final measurement = 101, which would exceed "
                           "max_evaluations = 100 job-units; 60 left unused")


def test_a_launch_counts_its_jobs_at_their_timeouts_against_wall_and_gpu_hours():
    c = _contract('max_wall = "100s"\nmax_gpu_hours = 1.0\n', compute="[compute]\ngpus_per_job = 1\n")
    used = BudgetUsed(attempts=1, wall_s=50.0)
    stop = launch_refusal(c, used, 4, 120.0, trial_units=0, reserve_units=0, max_parallel=2)  # 50 + 60 reaches 100
    assert stop is not None and stop.name == "max_wall"
    # 4 jobs x 1,000 s on one GPU each = 1.11 GPU-hours at worst; wall is unlimited here.
    c = _contract("max_gpu_hours = 1.0\n", compute="[compute]\ngpus_per_job = 1\n")
    stop = launch_refusal(c, BudgetUsed(attempts=1), 4, 4000.0, trial_units=0, reserve_units=0, max_parallel=4)
    assert stop is not None and stop.name == "max_gpu_hours"


def test_the_input_bound_is_at_least_the_request_bytes():
    assert input_token_bound(1000, 2) >= 1000 + 2


@given(st.floats(0.01, 50, allow_nan=False),
       st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.floats(0, 1, allow_nan=False)), max_size=40))
def test_reserve_then_settle_never_spends_past_the_limit(limit, works):
    """Work is reserved at its worst case while it fits and settled at `fraction` of it; spent plus
    held stays within the limit at every step, and nothing is held at the end."""
    account = Account({"gpu_hours": limit})
    running: list[tuple[str, float]] = []
    for i, (worst, fraction) in enumerate(works):
        held = account.reserve(f"j{i}", Charge.of(gpu_hours=worst), f"job {i}")
        if isinstance(held, Reservation):
            running.append((held.key, worst * fraction))
        else:
            assert held.name == "max_gpu_hours" and f"j{i}" not in account.open
        assert account.committed["gpu_hours"] <= limit + 1e-9
        if running and i % 2:
            key, used = running.pop(0)
            account.settle(key, Charge.of(gpu_hours=used))
    for key, used in running:
        account.settle(key, Charge.of(gpu_hours=used))
    assert not account.open and account.spent["gpu_hours"] <= limit + 1e-9
