"""Budget arithmetic (pure): the worst-case job-units of a trial and of a run, and which budget, if
any, a planned piece of work would break. The kernel enforces these; nothing in a candidate tree can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ratchet.core.contract import Contract
from ratchet.core.state import BudgetUsed

BUDGET_NAMES = ("max_attempts", "max_evaluations", "max_cpu_hours", "max_gpu_hours", "max_wall", "max_val_trials")


def trial_worst_case(units: int, confirm: bool) -> int:
    """Job-units a trial of `units` paired units can spend at most: both variants on every unit,
    one champion-side retry per unit, and as much again for confirmation when enabled."""
    one = 3 * units
    return one * 2 if confirm else one


def holdout_worst_case(units: int) -> int:
    """Job-units the final holdout can spend at most (both variants, one champion-side retry each)."""
    return 3 * units


def worst_case_units(contract: Contract) -> dict[str, int]:
    """{"per_trial", "holdout", "run"}: worst-case job-units (benchmark targets)."""
    gate = contract.gate
    per_trial = trial_worst_case(gate.units[-1], gate.confirm and contract.target.kind == "benchmark")
    holdout = holdout_worst_case(gate.holdout_size)
    return {"per_trial": per_trial, "holdout": holdout, "run": per_trial * contract.budget.max_attempts + holdout}


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


def exhausted(contract: Contract, used: BudgetUsed, val_trials: int, reserve_units: int, next_units: int,
              expected: Forecast = Forecast()) -> str | None:
    """The name of the first budget that forbids starting the next attempt now, or None.

    Job-units are checked on the worst case of the next trial (`next_units`) with `reserve_units`
    set aside for the holdout, so max_evaluations is never exceeded. Wall time and CPU hours have no
    worst case known in advance: they are checked on what is spent plus the expected cost of one
    more attempt and of the holdout (`expected`), so a run overshoots them by at most one attempt's
    deviation from the mean. `val_trials`: trials measured on val so far (examples targets). A
    budget of 0 is unlimited (max_attempts is always a limit).
    """
    b = contract.budget
    if used.attempts >= b.max_attempts:
        return "max_attempts"
    if b.max_evaluations and used.evaluations + next_units + reserve_units > b.max_evaluations:
        return "max_evaluations"
    if b.max_cpu_hours and used.cpu_hours + expected.attempt_cpu_h + expected.holdout_cpu_h >= b.max_cpu_hours:
        return "max_cpu_hours"
    if b.max_wall_s and used.wall_s + expected.attempt_wall_s + expected.holdout_wall_s >= b.max_wall_s:
        return "max_wall"
    if b.max_val_trials and contract.target.kind == "examples" and val_trials >= b.max_val_trials:
        return "max_val_trials"
    return None


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
