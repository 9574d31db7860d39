"""The shares of alpha of a campaign whose attempts overlap (`agent.workers` > 1): the online
fallback of `multiplicity.attempt_level` generalised from "the previous attempt" to "every credit
released before this trial was planned".

The rule (docs/gate.md, "Several attempts at once"). Attempt t (1-based, numbered in start order)
has the base share alpha * w_t (multiplicity.campaign_weight: harmonic, 0 beyond
budget.max_attempts). Its decision, when recorded, releases a *credit*: a promoted attempt its
whole share; an `unspent` one its whole share too (its base, plus what it claimed if it planned a
trial: only under gate rules 1, a trial whose jobs completed no unit); a `not_promoted` one
nothing. When attempt t's trial is planned, its share is alpha * w_t plus every credit released
before that planning (in ledger order) and not claimed by an earlier planning; credits of
decisions still pending are never used. Each credit so passes to exactly one attempt planned
after its decision.

Why P(any false promotion) <= alpha on every interleaving (online fallback, Tian & Ramdas 2021,
Stat Methods Med Res 30(4):976-993, after Wiens 2003, Pharm Stat 2:211): take the earliest-planned
null trial that is falsely promoted. When it was planned, no false promotion had been recorded
(an earlier-recorded false promotion would be of a trial planned earlier still). A credit travels
only through true promotions and unspent attempts, each credit to one later planning, so each
base weight alpha * w_j reaches the share of at most one null trial planned before any false
promotion. Shares are fixed at planning from the recorded past, and each trial's p-value is valid
conditionally on that past, so P(any false promotion) <= sum_j alpha * w_j <= alpha. On a
sequential ledger (each attempt decided before the next is planned) the credit pending at a
planning is the previous attempt's whole share or nothing, and this is `attempt_level` exactly,
float for float.

Pure: a timeline in, shares out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from ratchet.core.errors import RatchetError
from ratchet.core.stats.multiplicity import (
    LEVEL_OUTCOMES,
    AttemptLevels,
    LevelOutcome,
    Multiplicity,
    campaign_weight,
    split_share,
    trial_level,
)

PlannedStep = tuple[Literal["planned"], int]
DecidedStep = tuple[Literal["decided"], int, LevelOutcome]
LevelStep = PlannedStep | DecidedStep
"""One step of a level timeline, in ledger order: ("planned", attempt) when the attempt's trial is
first planned (its `trial.planned`, stage trial); ("decided", attempt, outcome) when its decision
is recorded (its promotion, its rejection by the trial or the confirmation, a verdict without jobs,
its give-up)."""


def _bad(step: object) -> RatchetError:
    return RatchetError(
        "gate.bad_history",
        f"a level timeline step must be ('planned', attempt) or ('decided', attempt, one of "
        f"{list(LEVEL_OUTCOMES)}), an attempt >= 1 planned at most once and never after its decision, "
        f"decided at most once; got {step!r}",
        hint="build the timeline from the ledger (loop.history.level_timeline)",
    )


class LevelPool:
    """The walk over a timeline, one step at a time (what `shares_in_order` runs; a simulation of
    many schedules steps it as it goes): `shares` (attempt -> share fixed at its planning) and `pool`
    (the credit released and not yet claimed). Raises like `shares_in_order`."""

    def __init__(self, alpha: float, policy: Multiplicity, max_attempts: int) -> None:
        trial_level(alpha, policy, 1, max_attempts)  # the same checks, raised now
        self.alpha, self.policy, self.max_attempts = alpha, policy, max_attempts
        self.shares: dict[int, float] = {}
        self.decided: set[int] = set()
        self.pool = 0.0

    def share_if_planned(self, attempt: int) -> float:
        """The share `attempt` would get if its trial were planned now (nothing changes)."""
        base = trial_level(self.alpha, self.policy, attempt, self.max_attempts)
        return base if self.policy == "trial" else base + self.pool

    def record(self, step: object) -> None:
        """Apply one LevelStep: a planning claims the pool, a decision releases its credit."""
        if not isinstance(step, tuple) or len(step) < 2 or isinstance(step[1], bool) or not isinstance(
                step[1], int) or step[1] < 1:
            raise _bad(step)
        attempt = step[1]
        if step[0] == "planned" and len(step) == 2:
            if attempt in self.shares or attempt in self.decided:
                raise _bad(step)
            self.shares[attempt] = self.share_if_planned(attempt)
            if self.policy == "campaign":
                self.pool = 0.0
        elif step[0] == "decided" and len(step) == 3 and step[2] in LEVEL_OUTCOMES:
            if attempt in self.decided:
                raise _bad(step)
            self.decided.add(attempt)
            if step[2] == "not_promoted" or self.policy == "trial":
                return
            share = self.shares.get(attempt)
            # the same sums in the same order as attempt_level: base + carried, carried + 0.0
            self.pool = (share if share is not None else
                         self.alpha * campaign_weight(attempt, self.max_attempts)) + self.pool
        else:
            raise _bad(step)


def shares_in_order(alpha: float, policy: Multiplicity, max_attempts: int,
                    timeline: Iterable[LevelStep]) -> dict[int, float]:
    """attempt -> its share of alpha, for every attempt the timeline plans (module docstring).

    timeline: LevelStep in ledger order. `trial` policy: every share is alpha. Raises RatchetError
    like multiplicity.trial_level (alpha, policy, max_attempts), and `gate.bad_history` for a step
    that is not a LevelStep, an attempt planned twice, decided twice or planned after its decision.
    """
    pool = LevelPool(alpha, policy, max_attempts)
    for step in timeline:
        pool.record(step)
    return pool.shares


def share_at_planning(alpha: float, policy: Multiplicity, max_attempts: int, attempt: int,
                      timeline: Iterable[LevelStep]) -> float:
    """The share of `attempt` (1-based): the one fixed when its trial was planned, if the timeline
    plans it; else the share it gets if planned now, after the whole timeline (alpha * w_t plus every
    credit released and not yet claimed). Raises like `shares_in_order`, and `gate.bad_trial_index`
    for an attempt < 1."""
    pool = LevelPool(alpha, policy, max_attempts)
    for step in timeline:
        pool.record(step)
    if attempt in pool.shares:
        return pool.shares[attempt]
    return pool.share_if_planned(attempt)


def levels_at_planning(alpha: float, policy: Multiplicity, max_attempts: int, attempt: int,
                       timeline: Iterable[LevelStep], confirm: bool = True) -> AttemptLevels:
    """The trial's and the confirmation's levels of `attempt`: share_at_planning split as
    multiplicity.attempt_levels splits it (confirm: (a ** 0.5, a ** 0.5); without: (a, 1.0)).
    Equal to attempt_levels(..., history) on a sequential timeline. Raises like `share_at_planning`."""
    return split_share(share_at_planning(alpha, policy, max_attempts, attempt, timeline), confirm)


def timeline_of(planned: Mapping[int, int], decided: Mapping[int, tuple[int, LevelOutcome]]) -> list[LevelStep]:
    """The LevelStep list from `planned` (attempt -> seq of its first trial planning) and `decided`
    (attempt -> (seq of its decision, outcome)), ordered by seq."""
    steps: list[tuple[int, LevelStep]] = [(seq, ("planned", a)) for a, seq in planned.items()]
    steps += [(seq, ("decided", a, outcome)) for a, (seq, outcome) in decided.items()]
    steps.sort(key=lambda s: s[0])
    return [s for _, s in steps]
