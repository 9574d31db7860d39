"""The budget checks of `ratchet verify` (docs/verify.md): attempts, job-units, val trials, model
calls and a command agent's legs re-added from a run's events and held to its limits. Pure, like
`audit.py`, whose Finding they return.
"""

from __future__ import annotations

import math

from ratchet.core.audit import ABS_TOL, REL_TOL, Finding
from ratchet.core.audit_view import RunView
from ratchet.core.budget import RESOURCES, Account, Charge, Reservation
from ratchet.core.budget.agent_kinds import COMMAND_RESOURCES, command_budget_stop, leg_charge
from ratchet.core.contract_llm import LlmPrice
from ratchet.core.payloads import AgentLeg, ModelCalled, ModelReserved, given


def check_budgets(view: RunView, command_price: LlmPrice | None = None) -> list[Finding]:
    """Attempts (each number once, at most max_attempts), job-units charged (at most
    max_evaluations when set), examples trials on val (at most max_val_trials when set), and what
    jobs, model calls and a command agent's legs used (GPU-hours, model calls, tokens, dollars:
    `check_settled`, `check_legs` with `command_price`, the contract's `[agent.command.price]`),
    against the limits run.started recorded."""
    out: list[Finding] = check_settled(view) + check_legs(view, command_price or LlmPrice())
    limits = view.limits
    numbers = [n for _, n in view.attempts_started]
    cap = limits.get("max_attempts")
    if len(set(numbers)) != len(numbers):
        out.append(Finding("verify.budget", None, "an attempt number was started twice"))
    if isinstance(cap, int) and len(numbers) > cap:
        out.append(Finding("verify.budget", view.attempts_started[cap][0],
                           f"{len(numbers)} attempts started, max_attempts is {cap}"))
    cap = limits.get("max_evaluations")
    if isinstance(cap, int) and cap > 0:
        used = 0
        for f in view.finished:
            used += 0 if f.cached else int(f.units_charged or 0)
            if used > cap:
                out.append(Finding("verify.budget", f.seq, f"job-units reach {used}, max_evaluations is {cap}"))
                break
    cap = limits.get("max_val_trials")
    trials = [p for p in view.planned if p.stage == "trial"]
    if view.target_kind == "examples" and isinstance(cap, int) and 0 < cap < len(trials):
        out.append(Finding("verify.budget", trials[cap].seq, f"{len(trials)} trials on val, max_val_trials is {cap}"))
    return out


def check_settled(view: RunView) -> list[Finding]:
    """GPU-hours and the model budgets, by the rule the kernel enforces on each.

    GPU-hours: the non-cached jobs' `gpu_s` summed in ledger order never past `max_gpu_hours` (the
    kernel reserves every trial's and the holdout's jobs at their timeouts and charges a job at
    most its timeout's worth). Model budgets: every `model.reserved` fitted when it was made (spent
    plus the reservations still open plus its worst case within each limit), replayed through the
    same Account the llm agent uses; what a call was charged after is not held to the limit, as a
    server may report more tokens than the request's bound (docs/budgets.md). A charge that does not
    read as one is a finding too."""
    out: list[Finding] = []
    gpu = next(r for r in RESOURCES if r.name == "gpu_hours")
    limit, spent = view.limits.get(gpu.attribute), 0.0
    for f in view.finished:
        gpu_s = given(f.payload.gpu_s)
        if f.cached or not gpu_s:
            continue
        spent += float(gpu_s) / 3600
        if isinstance(limit, int | float) and gpu.over(spent, limit):
            out.append(Finding("verify.budget", f.seq, f"{gpu.budget}: {gpu.fmt(spent)} spent, the limit is "
                                                       f"{gpu.fmt(limit)}"))
            break
    return out + _model_reservations(view)


def check_legs(view: RunView, price: LlmPrice) -> list[Finding]:
    """A command agent's legs (`agent.leg`), by the rule the agent enforces: each leg's `charged` is
    what its reported `tokens` and `cost_usd` give (`leg_charge` with `price`; a leg that reported
    usage under a limited token or dollar budget must carry one), and no leg ran once the charges
    before it had reached a limit (`command_budget_stop`). The leg that reaches a limit may pass it."""
    limits = {r.name: float(view.limits[r.attribute]) for r in RESOURCES
              if r.name in COMMAND_RESOURCES and isinstance(view.limits.get(r.attribute), int | float)}
    limited = any(limits.values())
    spent, out, late = Charge(), [], False
    for e in view.legs:
        leg = e.payload
        assert isinstance(leg, AgentLeg)  # read_view keeps only these
        name = f"leg {leg.leg} of attempt {leg.attempt}"
        stop = command_budget_stop(limits, spent)
        if stop is not None and leg.job_id is not None and not late:
            late = True
            out.append(Finding("verify.budget", e.seq, f"{name} ran after {stop.name} was reached: {stop.detail}"))
        cost = given(leg.cost_usd)
        expected = leg_charge(leg.tokens or {}, float(cost) if cost is not None else None, price)
        charged = given(leg.charged)
        if charged is None:
            if expected is not None and limited:
                out.append(Finding("verify.budget", e.seq, f"{name} reported usage but was charged nothing"))
            continue
        try:
            counted = Charge.from_json(charged)
        except (KeyError, ValueError, TypeError, AttributeError):
            out.append(Finding("verify.budget", e.seq, f"{name}: its charge does not read as one"))
            continue
        if not _same_charge(counted, expected or Charge()):
            shown = expected.to_json() if expected is not None else {}
            out.append(Finding("verify.budget", e.seq, f"{name} was charged {counted.to_json()}, but its reported "
                                                       f"usage gives {shown}"))
        spent = spent + counted
    return out


def _same_charge(a: Charge, b: Charge) -> bool:
    return all(math.isclose(a[r.name], b[r.name], rel_tol=REL_TOL, abs_tol=ABS_TOL) for r in RESOURCES)


def _model_reservations(view: RunView) -> list[Finding]:
    limits = {r.name: float(view.limits[r.attribute]) for r in RESOURCES
              if isinstance(view.limits.get(r.attribute), int | float)}
    account, out = Account(limits), []
    for e in view.model_events:
        payload = e.payload
        assert isinstance(payload, ModelReserved | ModelCalled)  # read_view keeps only these
        key = payload.key
        try:
            charge = Charge.from_json(payload.charge if isinstance(payload, ModelReserved) else payload.charged)
        except (KeyError, ValueError, TypeError, AttributeError):
            out.append(Finding("verify.budget", e.seq, f"{e.kind} of {key!r}: its charge does not read as one"))
            continue
        if e.kind == "model.called":
            account.open.pop(str(key), None)
            account.spent = account.spent + charge
            continue
        stop = account.refusal(charge, f"the model call {key}")
        if stop is not None:
            out.append(Finding("verify.budget", e.seq, f"model call {key} was reserved past {stop.name}: "
                                                       f"{stop.detail}"))
        account.open[str(key)] = Reservation(str(key), charge)
    return out
