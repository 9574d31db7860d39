"""Budget arithmetic with plain values: worst cases, and which budget stops the next attempt."""

from __future__ import annotations

from test_contract import GOOD

from ratchet.core.budget import Forecast, exhausted, forecast, holdout_worst_case, trial_worst_case
from ratchet.core.contract_load import parse_contract
from ratchet.core.state import BudgetUsed


def _contract(budget: str):
    return parse_contract(GOOD + "[budget]\n" + budget)


def test_worst_cases_count_both_variants_retries_and_confirmation():
    assert trial_worst_case(40, confirm=False) == 120
    assert trial_worst_case(40, confirm=True) == 240
    assert holdout_worst_case(40) == 120


def test_evaluations_budget_counts_the_next_trials_worst_case_and_the_reserve():
    c = _contract("max_evaluations = 1000\n")
    used = BudgetUsed(attempts=1, evaluations=500)
    assert exhausted(c, used, 0, reserve_units=120, next_units=240) is None  # 500 + 240 + 120 <= 1000
    assert exhausted(c, used, 0, reserve_units=120, next_units=400) == "max_evaluations"


def test_attempts_budget_is_always_a_limit():
    c = _contract("max_attempts = 3\n")
    assert exhausted(c, BudgetUsed(attempts=2), 0, 0, 0) is None
    assert exhausted(c, BudgetUsed(attempts=3), 0, 0, 0) == "max_attempts"


def test_wall_budget_adds_the_expected_attempt_and_holdout():
    c = _contract('max_wall = "100s"\n')
    used = BudgetUsed(attempts=2, wall_s=60.0)
    assert exhausted(c, used, 0, 0, 0) is None
    expected = forecast(used, attempts_done=2, jobs_run=20, job_wall_s=1.0, holdout_jobs=20, max_parallel=2)
    assert expected.attempt_wall_s == 30.0 and expected.holdout_wall_s == 10.0
    assert exhausted(c, BudgetUsed(attempts=2, wall_s=59.0), 0, 0, 0, expected) is None  # 59 + 30 + 10 < 100
    assert exhausted(c, used, 0, 0, 0, expected) == "max_wall"  # 60 + 30 + 10 reaches the limit


def test_zero_means_unlimited():
    c = _contract("")
    assert exhausted(c, BudgetUsed(attempts=1, evaluations=10**9, cpu_hours=1e6, wall_s=1e9), 10**6, 10**6, 10**6,
                     Forecast(1e9, 1e9, 1e9, 1e9)) is None
