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
from typing import Any, Literal

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


def betting_cost(contract: Contract, looks: Sequence[int], level: float) -> dict[str, Any] | None:
    """What `gate.test = "betting"` (the floor test) would cost, for a benchmark that declares a floor
    (gate.max_unit_loss, or target.metric_range) but runs another test; None otherwise.

    {"floor": -max_unit_loss, "units": looks[-1], "level": the level given (trial 1's),
    "smallest_gain": the smallest steady gain (every unit gains it, no noise) the floor test accepts at
    the last look, metric units (None when no gain can be accepted with that many units),
    "units_per_gain": c such that a gain g needs at least about c / g units (the bet cap limits the
    wealth's growth to about FLOOR_BET_CAP g / max_unit_loss per unit: c = ln(1 / level) max_unit_loss /
    FLOOR_BET_CAP, with the margin added to max_unit_loss), "text": one line saying both}."""
    import math

    import numpy as np

    from ratchet.core.gate_design import max_unit_loss_for
    from ratchet.core.stats.floor import FLOOR_BET_CAP, floor_test

    c = contract
    loss = max_unit_loss_for(c.gate.max_unit_loss, c.target.metric_range)
    if c.target.kind != "benchmark" or c.gate.test == "betting" or loss is None or not 0.0 < level < 1.0:
        return None
    margin, n = c.gate.min_effect, looks[-1]

    def accepts(gain: float) -> bool:
        return float(floor_test(np.full(n, margin + gain), margin, -loss)) <= level

    low, high = 0.0, 1e6 * (loss + margin)
    smallest = None
    if accepts(high):
        for _ in range(60):
            mid = (low + high) / 2.0
            low, high = (low, mid) if accepts(mid) else (mid, high)
        smallest = high
    per_gain = math.log(1.0 / level) * (loss + margin) / FLOOR_BET_CAP
    source = "gate.max_unit_loss" if c.gate.max_unit_loss is not None else "target.metric_range"
    head = f'gate.test = "betting" (the floor test, floor {-loss:g} from {source}) at trial 1\'s level {level:.3g}'
    if smallest is None:
        text = f"{head} cannot accept any gain with {n} units at the last look"
    else:
        text = (f"{head} accepts at the last look ({n} units) only a steady gain of at least {smallest:.3g} "
                "over the margin")
    text += f"; a gain g needs at least about {per_gain:.3g} / g units, more with noise"
    return {"floor": -loss, "units": n, "level": level, "smallest_gain": smallest, "units_per_gain": per_gain,
            "text": text}
