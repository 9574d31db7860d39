"""Budget arithmetic with plain values: worst cases, and which budget stops the next attempt."""

from __future__ import annotations

from pathlib import Path

from test_contract import GOOD

from ratchet.commands.contract_file import load_contract
from ratchet.core.budget import Forecast, exhausted, forecast, holdout_worst_case, trial_worst_case, worst_case
from ratchet.core.contract_load import parse_contract
from ratchet.core.state import BudgetUsed


def _contract(budget: str):
    return parse_contract(GOOD + "[budget]\n" + budget)


def test_worst_cases_count_both_variants_retries_and_confirmation():
    assert trial_worst_case(40, confirm=False) == 120
    assert trial_worst_case(40, confirm=True) == 240
    assert holdout_worst_case(40) == 120
    # An examples run reserves 2 x test + dev + val (Target.reserve_units) and has no confirmation.
    assert worst_case(40, False, 2 * 50 + 100 + 50, 10) == {"per_trial": 120, "holdout": 250, "run": 1450}


def test_evaluations_budget_counts_the_next_trials_worst_case_and_the_reserve():
    c = _contract("max_evaluations = 1000\n")
    used = BudgetUsed(attempts=1, evaluations=500)
    assert exhausted(c, used, 0, reserve_units=120, next_units=240) is None  # 500 + 240 + 120 <= 1000
    stop = exhausted(c, used, 0, reserve_units=120, next_units=400)
    assert stop is not None and stop.name == "max_evaluations" and stop.forecast
    assert stop.detail == ("forecast, not spent: 500 job-units used + 400 for the next attempt (its trial's worst "
                           "case) + 120 reserved for the holdout = 1020, which would exceed max_evaluations = 1000 "
                           "job-units; 500 left unused")


def test_attempts_budget_is_always_a_limit():
    c = _contract("max_attempts = 3\n")
    assert exhausted(c, BudgetUsed(attempts=2), 0, 0, 0) is None
    stop = exhausted(c, BudgetUsed(attempts=3), 0, 0, 0)
    assert stop is not None and stop.name == "max_attempts" and not stop.forecast


def test_wall_budget_adds_the_expected_attempt_and_holdout():
    c = _contract('max_wall = "100s"\n')
    used = BudgetUsed(attempts=2, wall_s=60.0)
    assert exhausted(c, used, 0, 0, 0) is None
    expected = forecast(used, attempts_done=2, jobs_run=20, job_wall_s=1.0, holdout_jobs=20, max_parallel=2)
    assert expected.attempt_wall_s == 30.0 and expected.holdout_wall_s == 10.0
    assert exhausted(c, BudgetUsed(attempts=2, wall_s=59.0), 0, 0, 0, expected) is None  # 59 + 30 + 10 < 100
    stop = exhausted(c, used, 0, 0, 0, expected)  # 60 + 30 + 10 reaches the limit
    assert stop is not None and stop.name == "max_wall"


def test_a_wall_stop_made_before_the_budget_is_spent_says_it_is_a_forecast_with_its_arithmetic():
    c = _contract('max_wall = "180s"\n')
    expected = Forecast(attempt_wall_s=51.0, holdout_wall_s=80.0)
    stop = exhausted(c, BudgetUsed(attempts=1, wall_s=51.0), 0, 0, 0, expected)
    assert stop is not None and stop.name == "max_wall" and stop.forecast
    assert stop.detail == ("forecast, not spent: 51 s used + 51 for the next attempt (expected: the mean attempt so "
                           "far) + 80 reserved for the holdout = 182, which would reach max_wall = 180 s; 129 left "
                           "unused")
    spent = exhausted(c, BudgetUsed(attempts=1, wall_s=181.0), 0, 0, 0, expected)
    assert spent is not None and not spent.forecast and spent.detail == "max_wall = 180 s is spent (181 s used)"


def test_a_cpu_stop_shows_hours_spent_expected_and_reserved():
    c = _contract("max_cpu_hours = 0.5\n")
    expected = Forecast(attempt_cpu_h=0.125, holdout_cpu_h=0.2)
    stop = exhausted(c, BudgetUsed(attempts=2, cpu_hours=0.25), 0, 0, 0, expected)
    assert stop is not None and stop.name == "max_cpu_hours" and stop.forecast
    assert "0.2500 CPU h used + 0.1250 for the next attempt (expected" in stop.detail
    assert "+ 0.2000 reserved for the holdout = 0.5750, which would reach max_cpu_hours = 0.5000 CPU h" in stop.detail


def test_zero_means_unlimited():
    c = _contract("")
    assert exhausted(c, BudgetUsed(attempts=1, evaluations=10**9, cpu_hours=1e6, wall_s=1e9), 10**6, 10**6, 10**6,
                     Forecast(1e9, 1e9, 1e9, 1e9)) is None


LOADED_JOB_S = 7.0
"""Wall seconds of one digits job on a loaded 2-core machine (measured 4.8 to 6.9 s at load average 11)."""


def test_the_digits_demo_is_budgeted_to_reach_a_promotion_and_its_holdout_on_a_loaded_machine():
    contract = load_contract(Path(__file__).resolve().parents[2] / "examples" / "digits").contract
    gate, parallel = contract.gate, contract.compute.max_parallel
    holdout_jobs = 2 * gate.holdout_size
    # The costliest order: a promotion whose trial and confirmation both go to the last look, first (the
    # mean attempt the forecast uses is then largest), then rejections at the first look.
    attempts = [2 * 2 * gate.units[-1]] + [2 * gate.units[0]] * (contract.budget.max_attempts - 1)
    wall, jobs_run, stop = LOADED_JOB_S / parallel, 1, None  # the preflight's one job
    for done, jobs in enumerate(attempts, start=1):
        assert stop is None, f"stopped before attempt {done}: {stop}"
        wall += jobs / parallel * LOADED_JOB_S
        jobs_run += jobs
        used = BudgetUsed(attempts=done, wall_s=wall)
        expected = forecast(used, done, jobs_run, LOADED_JOB_S, holdout_jobs, parallel)
        stop = exhausted(contract, used, done, holdout_worst_case(gate.holdout_size),
                         trial_worst_case(gate.units[-1], gate.confirm), expected)
    assert stop is not None and stop.name == "max_attempts", stop
    assert wall + holdout_jobs / parallel * LOADED_JOB_S <= contract.budget.max_wall_s
