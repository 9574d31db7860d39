"""`ratchet status`: a run's state as the `--json` result of `ratchet status`, built from the folded
ledger (pure) plus whether a kernel holds the run's lock (the only effect, done by the caller).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ratchet.core.state import AttemptState, RunState


def final_verdict(a: AttemptState) -> tuple[str | None, str | None]:
    """An attempt's verdict and reason after confirmation: an accepted trial whose confirmation did
    not accept is `rejected` with reason `not_confirmed`."""
    if a.verdict == "accepted" and a.confirm is not None and a.confirm.verdict != "accepted":
        return "rejected", "not_confirmed"
    if a.gave_up is not None and a.verdict is None:
        return None, "gave_up"
    return a.verdict, a.reason


def attempt_label(row: Mapping[str, Any]) -> str:
    """An attempt's number as status and reports show it (`row`: an `attempt_row`): `3`, or with
    several workers `3 (w2)`, and `3 (w2, re-base of 1)` for a re-base attempt."""
    extra = [f"w{row['worker']}"] if row.get("worker") is not None else []
    if row.get("rebases") is not None:
        extra.append(f"re-base of {row['rebases']}")
    return f"{row['attempt']} ({', '.join(extra)})" if extra else str(row["attempt"])


def attempt_row(a: AttemptState) -> dict[str, Any]:
    """One attempt for status and reports: {attempt, summary, verdict, reason, reason_text,
    estimate, interval, p_value, units, level, champion_mean, candidate_mean, params, promoted,
    confirm, worker, rebases, guardrails} (`worker`: the worker that ran it, None in a run of one
    worker; `rebases`: the accepted attempt whose change it re-measured on a moved champion);
    guardrails: each guardrail's {name, allowance, estimate, bound, p_value, threshold, units, status,
    champion_mean, candidate_mean} (core.guardrails.GuardrailCheck). `estimate` is the paired gain
    (direction-normalized); `champion_mean` and `candidate_mean` the raw means of each side over the
    trial's units (None: no jobs ran)."""
    verdict, reason = final_verdict(a)
    confirm = None
    if a.confirm is not None:
        c = a.confirm
        confirm = {"verdict": c.verdict, "reason": c.reason, "estimate": c.estimate,
                   "interval": list(c.interval) if c.interval else None, "p_value": c.p_value, "units": c.units,
                   "level": c.level, "champion_mean": c.champion_mean, "candidate_mean": c.candidate_mean,
                   "guardrails": [dict(g) for g in c.guardrails]}
    return {
        "attempt": a.attempt,
        "summary": a.summary,
        "verdict": verdict,
        "reason": reason,
        "reason_text": a.gave_up if a.gave_up is not None and a.verdict is None else a.reason_text,
        "estimate": a.estimate,
        "interval": list(a.interval) if a.interval else None,
        "p_value": a.p_value,
        "units": a.units,
        "level": a.level,
        "champion_mean": a.champion_mean,
        "candidate_mean": a.candidate_mean,
        "params": dict(a.params) if a.params is not None else None,
        "promoted": a.promoted,
        "confirm": confirm,
        "guardrails": [dict(g) for g in a.guardrails],
        "worker": a.worker,
        "rebases": a.rebases,
    }


def best_params(state: RunState) -> dict[str, Any] | None:
    """The champion's parameters (a search agent's `attempt.submitted` data.params of the promoted
    attempt), or None while the champion is the baseline or its attempt recorded none."""
    if state.champion.attempt is None:
        return None
    a = state.attempt(state.champion.attempt)
    return dict(a.params) if a is not None and a.params is not None else None


def status_result(state: RunState, lock_holder: int | None) -> dict[str, Any]:
    """The `ratchet status` result. `lock_holder`: pid of the kernel holding the run's lock, or None;
    a run recorded as running whose lock nobody holds was killed: it is reported `interrupted`.

    Gains (`estimate`) are paired and direction-normalized; next to them, raw means in metric units
    (a pass rate for examples): `baseline.mean` (the preflight's), `champion.mean` (as last
    measured), each attempt's `champion_mean` / `candidate_mean`, and the holdout's `baseline_mean` /
    `champion_mean`. `champion.params`: the champion's parameters (search agent; else None).
    `in_flight`: while the run is running, the attempts started and not yet judged nor given up
    ({attempt, worker, summary}: with several workers, one per busy worker)."""
    run_state = state.state
    if run_state == "running" and lock_holder is None:
        run_state = "interrupted"
    used = state.budget_used
    holdout = None
    if state.holdout is not None:
        h = state.holdout
        holdout = {"verdict": h.verdict, "estimate": h.estimate, "interval": list(h.interval) if h.interval else None,
                   "p_value": h.p_value, "units": h.units, "level": h.level,
                   "baseline_mean": h.champion_mean, "champion_mean": h.candidate_mean,
                   "guardrails": [dict(g) for g in h.guardrails]}
    return {
        "run_id": state.run_id,
        "state": run_state,
        "stop_reason": state.stop_reason if run_state != "running" else None,
        "stop_budget": state.stop_budget,
        "stop_detail": state.stop_detail if run_state != "running" else None,
        "kernel_pid": lock_holder,
        "baseline": {"commit": state.baseline.commit, "tree": state.baseline.tree, "mean": state.baseline_mean},
        "champion": {
            "commit": state.champion.commit,
            "tree": state.champion.tree,
            "estimate": state.champion.estimate,
            "interval": list(state.champion.interval) if state.champion.interval else None,
            "attempt": state.champion.attempt,
            "mean": state.champion_mean,
            "params": best_params(state),
        },
        "promotions": state.promotions,
        "holdout": holdout,
        "budget": {
            "used": {
                "attempts": used.attempts,
                "evaluations": used.evaluations,
                "cpu_hours": used.cpu_hours,
                "gpu_hours": used.gpu_hours,
                "wall_s": used.wall_s,
            },
            "limits": dict(state.limits),
        },
        "attempts": [attempt_row(a) for a in state.attempts],
        "in_flight": [{"attempt": a.attempt, "worker": a.worker, "summary": a.summary} for a in state.attempts
                      if a.verdict is None and a.gave_up is None] if run_state == "running" else [],
    }
