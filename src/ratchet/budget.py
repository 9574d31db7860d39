"""Budget arithmetic (pure): the worst-case job-units of a trial and of a run, and which budget, if
any, a planned piece of work would break. The kernel enforces these; nothing in a candidate tree can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ratchet.contract import Contract

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
class BudgetUse:
    """What a run has spent: attempts started, job-units, CPU hours, wall seconds, val trials."""

    attempts: int = 0
    evaluations: int = 0
    cpu_hours: float = 0.0
    wall_s: float = 0.0
    val_trials: int = 0


def exhausted(contract: Contract, used: BudgetUse, reserve_units: int, next_units: int) -> str | None:
    """The name of the first budget that forbids starting work of `next_units` job-units now, or None.

    `reserve_units` stays set aside for the holdout. A budget of 0 is unlimited (max_attempts is
    always a limit). Wall and CPU budgets are checked on what is already spent (their worst case is
    unknowable in advance); job-units on the worst case of the next piece of work.
    """
    b = contract.budget
    if used.attempts >= b.max_attempts:
        return "max_attempts"
    if b.max_evaluations and used.evaluations + next_units + reserve_units > b.max_evaluations:
        return "max_evaluations"
    if b.max_cpu_hours and used.cpu_hours >= b.max_cpu_hours:
        return "max_cpu_hours"
    if b.max_wall_s and used.wall_s >= b.max_wall_s:
        return "max_wall"
    if b.max_val_trials and contract.target.kind == "examples" and used.val_trials >= b.max_val_trials:
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
    }
