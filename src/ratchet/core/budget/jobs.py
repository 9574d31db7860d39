"""The kernel's asks (pure): the worst-case job-units of a trial and of a run, the expected time of
the next attempt, and the charge an attempt or an agent's launch asks of the budget before it starts
(`exhausted`, `launch_refusal`, both answered by the one mechanism, `budget.account`). The kernel
enforces these; nothing in a candidate tree can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ratchet.core.budget.account import Account, BudgetStop, Charge, Reservation, ResourceName, limits_of
from ratchet.core.budget.eval_calls import EVAL_BASIS, eval_worst_case
from ratchet.core.contract import Contract
from ratchet.core.state import BudgetUsed


def trial_worst_case(units: int, confirm: bool) -> int:
    """Job-units a trial of `units` paired units can spend at most: both variants on every unit,
    one champion-side retry per unit, and as much again for confirmation when enabled."""
    one = 3 * units
    return one * 2 if confirm else one


def holdout_worst_case(units: int) -> int:
    """Job-units the final holdout can spend at most (both variants, one champion-side retry each)."""
    return 3 * units


def worst_case(trial_units: int, confirms: bool, reserve_units: int, max_attempts: int, dev_units: int = 0
               ) -> dict[str, int]:
    """{"per_trial", "holdout", "run"}: worst-case job-units of one attempt whose trial's last look
    has `trial_units` units (confirmed when `confirms`) plus `dev_units` (an examples candidate's
    dev measurement, for an agent that reads history), of the final measurement (`reserve_units`:
    Target.reserve_units, e.g. 2 x test + dev + val for examples) and of a run of `max_attempts`."""
    per_trial = trial_worst_case(trial_units, confirms) + dev_units
    return {"per_trial": per_trial, "holdout": reserve_units, "run": per_trial * max_attempts + reserve_units}


@dataclass(frozen=True)
class Forecast:
    """What the next attempt and the holdout are expected to cost in time: `attempt_wall_s` and
    `attempt_cpu_h` (means over the attempts so far), `holdout_wall_s` and `holdout_cpu_h` (the
    holdout's jobs at the mean job's cost). Zero before anything was measured."""

    attempt_wall_s: float = 0.0
    attempt_cpu_h: float = 0.0
    holdout_wall_s: float = 0.0
    holdout_cpu_h: float = 0.0


def forecast(used: BudgetUsed, attempts_done: int, jobs_run: int, job_wall_s: float, holdout_jobs: int,
             max_parallel: int) -> Forecast:
    """Expected cost of one more attempt (the mean of those done) and of the holdout
    (`holdout_jobs` jobs at the mean job's wall seconds `job_wall_s`, `max_parallel` at a time)."""
    if attempts_done <= 0 or jobs_run <= 0:
        return Forecast()
    mean_job_cpu_h = used.cpu_hours / jobs_run
    return Forecast(
        attempt_wall_s=used.wall_s / attempts_done,
        attempt_cpu_h=used.cpu_hours / attempts_done,
        holdout_wall_s=job_wall_s * holdout_jobs / max_parallel,
        holdout_cpu_h=mean_job_cpu_h * holdout_jobs,
    )


def gpu_hours_worst_case(contract: Contract, job_units: int) -> float:
    """GPU-hours `job_units` jobs can use at most: each held for its whole timeout on
    `compute.gpus_per_job` devices (the reservation; a job is charged its elapsed time x its devices
    when it ends)."""
    return job_units * contract.target.timeout_s * contract.compute.gpus_per_job / 3600.0


ATTEMPT_BASIS: Mapping[ResourceName, str] = {
    "job_units": "its trial's worst case",
    "cpu_hours": "expected: the mean attempt so far",
    "wall_s": "expected: the mean attempt so far",
    "gpu_hours": "worst case: its jobs at their timeouts",
    **EVAL_BASIS,
}
"""How the next attempt's charge is reckoned, per resource (BudgetStop details say it)."""

LAUNCH_BASIS: Mapping[ResourceName, str] = {
    "job_units": "worst case",
    "cpu_hours": "worst case: its jobs at their timeouts",
    "wall_s": "worst case: its jobs at their timeouts",
    "gpu_hours": "worst case: its jobs at their timeouts",
}
"""How an agent's launch is reckoned, per resource."""


def spent_of(used: BudgetUsed, val_trials: int = 0) -> Charge:
    """What the reducer's BudgetUsed (and `val_trials`, trials on val) spent, as a Charge."""
    return Charge.of(attempts=used.attempts, job_units=used.evaluations, cpu_hours=used.cpu_hours,
                     gpu_hours=used.gpu_hours, wall_s=used.wall_s, val_trials=val_trials,
                     eval_calls=used.eval_calls, eval_tokens=used.eval_tokens, eval_usd=used.eval_usd)


def exhausted(contract: Contract, used: BudgetUsed, val_trials: int, reserve_units: int, next_units: int,
              expected: Forecast = Forecast()) -> BudgetStop | None:
    """The first budget that forbids starting the next attempt now (a BudgetStop), or None.

    The next attempt asks for one attempt, the worst case of its trial (`next_units` job-units; on
    GPUs, those jobs at their timeouts) and, for wall time and CPU hours, which have no worst case
    known in advance, the expected cost (`expected`: the mean attempt so far); the holdout stays
    reserved (`reserve_units` job-units and its expected time). So max_evaluations and max_gpu_hours
    are never exceeded, and a run overshoots max_wall or max_cpu_hours by at most one attempt's
    deviation from the mean; a stop made before the budget is spent says it is a forecast. A prompt
    solution's eval calls, tokens and dollars are asked at their worst case for the trial and held for
    the holdout (`budget.eval_calls`), like job-units.
    `val_trials`: trials measured on val so far (examples targets, one more per attempt). A budget
    of 0 is unlimited (max_attempts is always a limit).
    """
    examples = contract.target.kind == "examples"
    holdout = Charge.of(job_units=reserve_units, cpu_hours=expected.holdout_cpu_h, wall_s=expected.holdout_wall_s,
                        gpu_hours=gpu_hours_worst_case(contract, reserve_units))
    holdout = holdout + eval_worst_case(contract, reserve_units)
    account = Account(limits_of(contract), spent_of(used, val_trials if examples else 0),
                      {"holdout": Reservation("holdout", holdout, "the holdout")})
    ask = Charge.of(attempts=1, job_units=next_units, cpu_hours=expected.attempt_cpu_h,
                    wall_s=expected.attempt_wall_s, gpu_hours=gpu_hours_worst_case(contract, next_units),
                    val_trials=1 if examples else 0) + eval_worst_case(contract, next_units)
    return account.refusal(ask, "the next attempt", ATTEMPT_BASIS)


def launch_refusal(contract: Contract, used: BudgetUsed, launch_units: int, launch_wall_s: float,
                   trial_units: int, reserve_units: int, max_parallel: int) -> BudgetStop | None:
    """Why an agent's launch may not run now (a BudgetStop), or None when it may.

    The launch asks for its worst case: `launch_units` job-units and `launch_wall_s` seconds of job
    time (wall time counts its jobs `max_parallel` at a time, CPU hours one core per job, GPU-hours
    `compute.gpus_per_job` devices per job). It must fit after reserving one trial's worst case
    (`trial_units`: the attempt still has to be judged) and the final measurement (`reserve_units`).
    """
    held = {key: Reservation(key, Charge.of(job_units=units, gpu_hours=gpu_hours_worst_case(contract, units)), purpose)
            for key, units, purpose in (("trial", trial_units, "the attempt's trial"),
                                        ("final", reserve_units, "the final measurement"))}
    ask = Charge.of(job_units=launch_units, wall_s=launch_wall_s / max(1, max_parallel),
                    cpu_hours=launch_wall_s / 3600, gpu_hours=launch_wall_s * contract.compute.gpus_per_job / 3600)
    return Account(limits_of(contract), spent_of(used), held).refusal(ask, "the launch", LAUNCH_BASIS)
