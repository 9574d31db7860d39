"""Whether a campaign's trials can reach their levels, and what to change when they cannot.

Each trial is granted a level (`gate.multiplicity`, core.stats.multiplicity) and spends it across
its looks (core.stats.sequential); the exact test cannot produce a p-value below a floor that
depends on the units seen (0.5**n for McNemar and the exact sign-flip test). A look whose threshold
is below that floor cannot stop for efficacy ("futility only"); a trial whose last look cannot
accept can never promote anything, whatever the candidate. `ratchet check`, `ratchet run` (at the
start, recorded in `run.started` as `warnings`) and the report say so with the reason and the fix.

Pure: plain values in, text out; it calls the statistics of core.stats and changes nothing there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ratchet.core.contract import Contract
from ratchet.core.stats.multiplicity import LevelRow, level_schedule
from ratchet.core.stats.paired import Kind
from ratchet.core.stats.sequential import boundaries

MAX_SUGGESTED_UNITS = 1000
"""Units (a last look's cumulative count) searched for the smallest that lets a trial accept."""

LookStop = Literal["efficacy", "futility only", "cannot accept"]
"""What a look can do. efficacy: it can accept (an interim look can also stop for futility);
futility only: an interim look whose threshold is below the smallest p-value its units allow (its
level is carried to the next look); cannot accept: the last look ditto (the trial can never accept)."""


def score_kind(contract: Contract) -> Kind:
    """The gate's test for the target: `binary` (examples: McNemar) or `continuous` (benchmark)."""
    return "binary" if contract.target.kind == "examples" else "continuous"


def look_stops(level: float, looks: Sequence[int], kind: Kind, margin: float = 0.0) -> tuple[LookStop, ...]:
    """One LookStop per look of a trial at `level` (see core.stats.sequential.boundaries).
    Raises PlanError on bad looks, ValueError on a bad level or kind."""
    stops: list[LookStop] = []
    for mark in boundaries(level, looks, kind, margin):
        if mark.reachable:
            stops.append("efficacy")
        else:
            stops.append("futility only" if mark.interim else "cannot accept")
    return tuple(stops)


def units_to_reach(level: float, looks: Sequence[int], kind: Kind, margin: float = 0.0,
                   cap: int = MAX_SUGGESTED_UNITS) -> int | None:
    """The smallest last look n >= looks[-1] (earlier looks kept) at which a trial at `level` can
    accept, or None when no n <= `cap` can (a level below the test's floor at any size).

    Binary: the smallest p-value falls with n and the last look's threshold grows with it, so the
    answer is found by bisection. Continuous: scanned one by one, since a Monte Carlo p-value's floor
    need not fall with n (core.stats.paired.min_p_value)."""
    head = tuple(looks[:-1])

    def reachable(n: int) -> bool:
        return boundaries(level, head + (n,), kind, margin)[-1].reachable

    start = max(looks[-1], 1)
    if reachable(start):
        return start
    if kind == "continuous":
        return next((n for n in range(start + 1, cap + 1) if reachable(n)), None)
    if cap <= start or not reachable(cap):
        return None
    low, high = start, cap  # reachable(low) is False, reachable(high) is True
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reachable(mid) else (mid, high)
    return high


def level_rows(contract: Contract, looks: Sequence[int]) -> list[LevelRow]:
    """The level schedule of the contract's trials with `looks` (the target's trial looks: gate.units,
    clamped to the val split for examples), each trial's level split with its confirmation when a
    benchmark confirms. Raises like core.stats.multiplicity.level_schedule."""
    gate = contract.gate
    confirm = gate.confirm and contract.target.kind == "benchmark"
    return level_schedule(gate.alpha, gate.multiplicity, contract.budget.max_attempts, tuple(looks),
                          score_kind(contract), gate.min_effect, confirm=confirm)


def _unit_word(contract: Contract) -> str:
    return "val examples" if contract.target.kind == "examples" else "units"


def _fix(contract: Contract, looks: Sequence[int], rows: Sequence[LevelRow]) -> str:
    """What to change so that the first trial that cannot accept (and every trial) can."""
    gate, kind, what = contract.gate, score_kind(contract), _unit_word(contract)
    first = next(r for r in rows if not r.reachable)
    n_first = units_to_reach(first.level, looks, kind, gate.min_effect)
    others = "raise gate.alpha or lower budget.max_attempts"
    if gate.multiplicity == "campaign":
        others += ', or set gate.multiplicity = "trial" (false promotions then add up over the run)'
    if n_first is None:
        return (f"no number of {what} up to {MAX_SUGGESTED_UNITS} lets trial {first.trial} reach its level "
                f"({first.level:.3g}): {others}")
    fix = f"a last look of at least {n_first} {what}"
    n_all = units_to_reach(rows[-1].level, looks, kind, gate.min_effect)
    if n_all is not None and n_all != n_first:
        fix += f" ({n_all} let every trial up to budget.max_attempts = {len(rows)} accept)"
    if contract.target.kind == "examples" and tuple(looks) != tuple(gate.units):
        fix += (f": the looks are clamped to the val split's {looks[-1]} example(s), so add examples or raise "
                "the val fraction of target.split")
        if gate.units[-1] < n_first:
            fix += f", and end gate.units at {n_first} or more"
    else:
        fix += f": end gate.units at {n_first} or more"
    return f"{fix}; or {others}"


def reach_warnings(contract: Contract, looks: Sequence[int]) -> list[str]:
    """Warnings (reason and fix) when trials cannot accept with `looks` (the target's trial looks):
    none of them can, or those from some trial on. [] when every trial can. Raises like level_rows."""
    rows = level_rows(contract, looks)
    blocked = [r for r in rows if not r.reachable]
    if not blocked:
        return []
    first, last = blocked[0], rows[-1]
    floor = first.min_p_last
    what = _unit_word(contract)
    if first.trial == 1:
        levels = f"trial 1: {rows[0].level:.3g}" + (f", trial {last.trial}: {last.level:.3g}" if len(rows) > 1 else "")
        reason = (f"no trial can accept a candidate: with {looks[-1]} {what} at the last look (looks {list(looks)}) "
                  f"the exact test's smallest p-value is {floor:.3g}, above every trial's level ({levels}); "
                  "the run would spend its budget without a promotion")
    else:
        reason = (f"trials {first.trial} to {last.trial} can never accept: their levels ({first.level:.3g} and "
                  f"below) are under the smallest p-value the exact test can produce with {looks[-1]} {what} "
                  f"({floor:.3g})")
    return [f"{reason}. Fix: {_fix(contract, looks, rows)}"]
