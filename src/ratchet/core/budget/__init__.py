"""Budgets (pure): one reserve / settle mechanism (`account.py`) and what asks it: the kernel's
attempts and agents' launches (`jobs.py`: job-units, CPU and wall time, GPU-hours, val trials),
the llm agent's model calls (`model.py`: calls, tokens, dollars), a prompt solution's eval and judge
calls (`eval_calls.py`), and which budgets each agent kind
can enforce with what a command agent's leg is charged (`agent_kinds.py`).
"""

from ratchet.core.budget.account import (
    BUDGET_NAMES,
    RESOURCES,
    Account,
    BudgetName,
    BudgetStop,
    Charge,
    Reservation,
    Resource,
    ResourceName,
    Settlement,
    limits_of,
    recorded_limits,
    standing,
)
from ratchet.core.budget.jobs import (
    Forecast,
    exhausted,
    forecast,
    gpu_hours_worst_case,
    holdout_worst_case,
    launch_refusal,
    spent_of,
    trial_worst_case,
    worst_case,
)

__all__ = [
    "BUDGET_NAMES", "RESOURCES", "Account", "BudgetName", "BudgetStop", "Charge", "Forecast", "Reservation",
    "Resource", "ResourceName", "Settlement", "exhausted", "forecast", "gpu_hours_worst_case", "holdout_worst_case",
    "launch_refusal", "limits_of", "recorded_limits", "spent_of", "standing", "trial_worst_case", "worst_case",
]
