"""Budget arithmetic (pure): the worst-case job-units of a trial and of a run, and which budget, if
any, a planned piece of work would break. The kernel enforces these; nothing in a candidate tree can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from ratchet.core.contract import Contract
from ratchet.core.state import BudgetUsed

BudgetName = Literal["max_attempts", "max_evaluations", "max_cpu_hours", "max_gpu_hours", "max_wall", "max_val_trials"]
"""The kernel's budgets (`[budget]`), in the order `exhausted` checks them."""

BUDGET_NAMES: tuple[BudgetName, ...] = get_args(BudgetName)


def trial_worst_case(units: int, confirm: bool) -> int:
    """Job-units a trial of `units` paired units can spend at most: both variants on every unit,
    one champion-side retry per unit, and as much again for confirmation when enabled."""
    one = 3 * units
    return one * 2 if confirm else one


def holdout_worst_case(units: int) -> int:
    """Job-units the final holdout can spend at most (both variants, one champion-side retry each)."""
    return 3 * units


def worst_case(trial_units: int, confirms: bool, reserve_units: int, max_attempts: int) -> dict[str, int]:
    """{"per_trial", "holdout", "run"}: worst-case job-units of one trial whose last look has
    `trial_units` units (confirmed when `confirms`), of the final measurement (`reserve_units`:
    Target.reserve_units, e.g. 2 x test + dev + val for examples) and of a run of `max_attempts`."""
    per_trial = trial_worst_case(trial_units, confirms)
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


@dataclass(frozen=True)
class BudgetStop:
    """Why a budget forbids starting the next attempt: `name` (a BudgetName) and `detail`, one
    sentence a user reads with the arithmetic (what is spent, what the next attempt and the holdout
    are expected to cost, the limit). `forecast`: the budget is not spent yet; the stop is a
    forecast that spending more would exceed it."""

    name: BudgetName
    detail: str
    forecast: bool = False


def _time_stop(name: BudgetName, unit: str, spent: float, attempt: float, holdout: float, limit: float,
               digits: int) -> BudgetStop | None:
    """A wall-time or CPU-hours stop: spent already at the limit, or spent + the expected next attempt
    + the holdout reaching it (a forecast). None when it fits."""
    def num(x: float) -> str:
        return f"{x:.{digits}f} {unit}"

    if spent >= limit:
        return BudgetStop(name, f"{name} = {num(limit)} is spent ({num(spent)} used)")
    total = spent + attempt + holdout
    if total < limit:
        return None
    return BudgetStop(name, (
        f"forecast, not spent: {num(spent)} used + {num(attempt)} expected for one more attempt (the mean so far) "
        f"+ {num(holdout)} reserved for the holdout = {num(total)}, which would reach {name} = {num(limit)}; "
        f"{num(limit - spent)} were left unused. Raise {name} to let more attempts run"), forecast=True)


def exhausted(contract: Contract, used: BudgetUsed, val_trials: int, reserve_units: int, next_units: int,
              expected: Forecast = Forecast()) -> BudgetStop | None:
    """The first budget that forbids starting the next attempt now (a BudgetStop), or None.

    Job-units are checked on the worst case of the next trial (`next_units`) with `reserve_units`
    set aside for the holdout, so max_evaluations is never exceeded. Wall time and CPU hours have no
    worst case known in advance: they are checked on what is spent plus the expected cost of one
    more attempt and of the holdout (`expected`), so a run overshoots them by at most one attempt's
    deviation from the mean; a stop made before the budget is spent is a forecast (`forecast` set,
    the detail says so). `val_trials`: trials measured on val so far (examples targets). A budget of
    0 is unlimited (max_attempts is always a limit).
    """
    b = contract.budget
    if used.attempts >= b.max_attempts:
        return BudgetStop("max_attempts", f"{used.attempts} of max_attempts = {b.max_attempts} attempts made")
    if b.max_evaluations and used.evaluations + next_units + reserve_units > b.max_evaluations:
        total = used.evaluations + next_units + reserve_units
        return BudgetStop("max_evaluations", (
            f"{used.evaluations} job-units used + {next_units} for the next trial's worst case + {reserve_units} "
            f"reserved for the holdout = {total} would exceed max_evaluations = {b.max_evaluations}"),
            forecast=used.evaluations < b.max_evaluations)
    if b.max_cpu_hours:
        stop = _time_stop("max_cpu_hours", "CPU h", used.cpu_hours, expected.attempt_cpu_h, expected.holdout_cpu_h,
                          b.max_cpu_hours, 4)
        if stop is not None:
            return stop
    if b.max_wall_s:
        stop = _time_stop("max_wall", "s", used.wall_s, expected.attempt_wall_s, expected.holdout_wall_s,
                          b.max_wall_s, 0)
        if stop is not None:
            return stop
    if b.max_gpu_hours and contract.compute.gpus_per_job:
        stop = _gpu_stop(contract, used, next_units + reserve_units)
        if stop is not None:
            return stop
    if b.max_val_trials and contract.target.kind == "examples" and val_trials >= b.max_val_trials:
        return BudgetStop("max_val_trials", f"{val_trials} of max_val_trials = {b.max_val_trials} val trials made")
    return None


def gpu_hours_worst_case(contract: Contract, job_units: int) -> float:
    """GPU-hours `job_units` jobs can use at most: each held for its whole timeout on
    `compute.gpus_per_job` devices (the reservation; a job is charged its elapsed time x its devices
    when it ends)."""
    return job_units * contract.target.timeout_s * contract.compute.gpus_per_job / 3600.0


def _gpu_stop(contract: Contract, used: BudgetUsed, job_units: int) -> BudgetStop | None:
    """max_gpu_hours checked on the worst case (reserved, never exceeded): the next trial and the
    holdout at their timeouts."""
    limit = contract.budget.max_gpu_hours
    worst = gpu_hours_worst_case(contract, job_units)
    if used.gpu_hours + worst <= limit:
        return None
    return BudgetStop("max_gpu_hours", (
        f"{used.gpu_hours:.3f} GPU-hours used + {worst:.3f} reserved for the next trial and the holdout at their "
        f"timeouts ({job_units} jobs x {contract.target.timeout_s:g} s x {contract.compute.gpus_per_job} GPUs) "
        f"would exceed max_gpu_hours = {limit:g}"), forecast=used.gpu_hours < limit)


def limits(contract: Contract) -> Mapping[str, float | int]:
    """The run's limits as recorded in `run.started` (max_wall in seconds as `max_wall_s`)."""
    b = contract.budget
    return {
        "max_attempts": b.max_attempts,
        "max_evaluations": b.max_evaluations,
        "max_cpu_hours": b.max_cpu_hours,
        "max_gpu_hours": b.max_gpu_hours,
        "max_wall_s": b.max_wall_s,
        "max_val_trials": b.max_val_trials,
        "max_model_calls": b.max_model_calls,
        "max_input_tokens": b.max_input_tokens,
        "max_output_tokens": b.max_output_tokens,
        "max_usd": b.max_usd,
    }


def launch_refusal(contract: Contract, used: BudgetUsed, launch_units: int, launch_wall_s: float,
                   trial_units: int, reserve_units: int, max_parallel: int) -> str | None:
    """Why an agent's launch may not run now, or None when it may.

    Its worst case (`launch_units` job-units, `launch_wall_s` seconds of job time) must fit after
    setting aside one trial's worst case (`trial_units`: the attempt still has to be judged) and the
    final measurement (`reserve_units`). Wall time counts the launch's jobs `max_parallel` at a time.
    """
    b = contract.budget
    if b.max_evaluations and used.evaluations + launch_units + trial_units + reserve_units > b.max_evaluations:
        left = b.max_evaluations - used.evaluations - trial_units - reserve_units
        return (f"max_evaluations: {launch_units} job-units asked, {max(left, 0)} left after reserving "
                f"{trial_units} for the trial and {reserve_units} for the final measurement")
    wall = launch_wall_s / max(1, max_parallel)
    if b.max_wall_s and used.wall_s + wall > b.max_wall_s:
        return (f"max_wall: the launch may take {wall:.0f} s, {max(b.max_wall_s - used.wall_s, 0):.0f} s of "
                "wall time are left")
    if b.max_cpu_hours and used.cpu_hours + launch_wall_s / 3600 > b.max_cpu_hours:
        return f"max_cpu_hours: the launch may take {launch_wall_s / 3600:.2f} CPU hours"
    return None
