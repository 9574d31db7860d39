"""Multiplicity: the level each attempt of a campaign is granted, and its split between trial and
confirmation (`gate.multiplicity`).

- `campaign` (default): P(the run promotes any candidate whose true mean gain over the champion it
  faced is at most the margin) <= alpha, however the agents adapt, provided each trial's test is
  valid for that candidate. Attempt t of at most T = budget.max_attempts starts from the harmonic
  weight alpha * w_t, w_t = (1 / t) / H_T (H_T = 1 + 1/2 + ... + 1/T; positive, front-loaded, summing
  to 1 over T attempts; 1/t decays like 1/(t ln T), not exponentially, so late trials stay
  reachable), and passes its level on (online fallback, Tian & Ramdas 2021, Stat Methods Med Res
  30(4):976-993, after Wiens 2003): alpha_t = alpha * w_t + alpha_{t-1} when attempt t-1 promoted (or
  spent nothing: it was decided without jobs), else alpha * w_t. Valid under adaptivity: the levels
  depend only on the past, each trial's p-value is valid conditionally on the past, and on every
  path each weight w_j feeds the level of at most one attempt whose candidate is not better, so
  P(any false promotion) <= sum_j alpha * w_j <= alpha. Procedures that need independent p-values
  across attempts are not used: agents learn from earlier verdicts.
- `trial`: every attempt at alpha; false promotions then accumulate over a long run (the report
  says so).

Words (docs/gate.md): alpha_t is the attempt's *share of alpha*; a stage's *level* is what its test
runs at. Split. A promotion needs the trial and, when `gate.confirm` is on, a confirmation on fresh
units (independent of the trial's units given the candidate): P(promote a null) <= trial level x
confirmation level. So an attempt's share a is split as a product, trial = a ** (1 - CONFIRM_SHARE),
confirmation = a ** CONFIRM_SHARE, rather than both at a (which puts a run's error near a^2, the
level wasted). Without confirmation the trial gets all of a.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, NamedTuple

from ratchet.core.errors import RatchetError
from ratchet.core.stats.paired import Kind
from ratchet.core.stats.sequential import boundaries

Multiplicity = Literal["campaign", "trial"]
LevelOutcome = Literal["promoted", "not_promoted", "unspent"]
"""What a past attempt did with its level (the `history` of `attempt_levels`):
- promoted: its candidate was promoted (its level passes on to the next attempt);
- not_promoted: its trial or confirmation ran and did not promote (its level is spent);
- unspent: decided without jobs (no_change, duplicate, scope_violation, invalid_candidate, budget,
  or a give-up): no test ran, so its level passes on."""
LEVEL_OUTCOMES: tuple[LevelOutcome, ...] = ("promoted", "not_promoted", "unspent")
CONFIRM_SHARE = 0.5  # the confirmation's share of an attempt's level, as an exponent: confirm = level ** 0.5


def _check(alpha: float, multiplicity: str, max_attempts: int) -> None:
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and 0.0 < alpha < 1.0):
        raise RatchetError("gate.bad_alpha", f"gate.alpha must be in (0, 1), got {alpha!r}")
    if multiplicity not in ("campaign", "trial"):
        raise RatchetError(
            "gate.bad_multiplicity", f"gate.multiplicity must be 'campaign' or 'trial', got {multiplicity!r}"
        )
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise RatchetError(
            "gate.bad_max_attempts", f"budget.max_attempts must be an integer >= 1, got {max_attempts!r}"
        )


def campaign_weight(trial_index: int, max_attempts: int) -> float:
    """Harmonic weight w_t = (1/t) / H_T of trial t (1-based) among T = max_attempts; 0 beyond T.

    Sum over t = 1..T is 1 (Bonferroni: valid under any dependence between trials).
    """
    if trial_index < 1 or max_attempts < 1:
        raise ValueError(f"trial_index and max_attempts must be >= 1, got {trial_index}, {max_attempts}")
    if trial_index > max_attempts:
        return 0.0
    return (1.0 / trial_index) / _harmonic(max_attempts)


@functools.lru_cache(maxsize=64)
def _harmonic(max_attempts: int) -> float:
    """H_T = 1 + 1/2 + ... + 1/T (math.fsum: correctly rounded), computed once per T: attempt_level
    asks for it at every attempt up to the current one, and a long run has thousands."""
    return math.fsum(1.0 / t for t in range(1, max_attempts + 1))


def trial_level(alpha: float, multiplicity: Multiplicity, trial_index: int, max_attempts: int) -> float:
    """The level granted to trial `trial_index` (1-based) of a campaign.

    campaign: alpha * campaign_weight(t, max_attempts) (0.0 for trials beyond max_attempts: refused);
    trial: alpha. Raises RatchetError `gate.bad_alpha` (alpha outside (0, 1)),
    `gate.bad_multiplicity`, `gate.bad_max_attempts` or `gate.bad_trial_index` (< 1).
    """
    _check(alpha, multiplicity, max_attempts)
    if isinstance(trial_index, bool) or not isinstance(trial_index, int) or trial_index < 1:
        raise RatchetError(
            "gate.bad_trial_index", f"trial index must be an integer >= 1, got {trial_index!r}"
        )
    if multiplicity == "trial":
        return float(alpha)
    return alpha * campaign_weight(trial_index, max_attempts)


class AttemptLevels(NamedTuple):
    """The levels of one attempt: `trial` (its looks) and `confirm` (the confirmation's looks; 1.0
    when there is none). trial * confirm == the attempt's level."""

    trial: float
    confirm: float


def attempt_level(
    alpha: float, policy: Multiplicity, attempt: int, max_attempts: int, history: Sequence[LevelOutcome]
) -> float:
    """The share of alpha of attempt `attempt` (1-based): P(it promotes a candidate no better than the
    margin) is at most it. Its trial and confirmation are tested at levels from it (`attempt_levels`).

    campaign: online fallback over harmonic weights (module docstring); trial: alpha. history: the
    outcomes of attempts 1..attempt-1, in order (len(history) == attempt - 1). Raises RatchetError
    like `trial_level`, and `gate.bad_history` on a history of the wrong length or values.
    """
    base = trial_level(alpha, policy, attempt, max_attempts)
    if len(history) != attempt - 1 or not all(h in LEVEL_OUTCOMES for h in history):
        raise RatchetError(
            "gate.bad_history",
            f"history must hold the {attempt - 1} earlier attempts' outcomes, one of {list(LEVEL_OUTCOMES)}; "
            f"got {list(history)!r}",
            hint="pass the outcome of every earlier attempt of the run, in order",
        )
    if policy == "trial":
        return base
    # A not_promoted attempt carries nothing forward: start from the last one (the same sums, in
    # the same order, as from attempt 1; a long run's level then costs O(1), not O(attempts)).
    first = 1
    for t in range(attempt, 1, -1):
        if history[t - 2] == "not_promoted":
            first = t
            break
    level = 0.0
    for t in range(first, attempt + 1):
        carried = level if t > first else 0.0
        level = alpha * campaign_weight(t, max_attempts) + carried
    return level


def attempt_levels(
    alpha: float,
    policy: Multiplicity,
    attempt: int,
    max_attempts: int,
    history: Sequence[LevelOutcome],
    confirm: bool = True,
) -> AttemptLevels:
    """The trial's and the confirmation's levels of attempt `attempt` (1-based).

    a = attempt_level(alpha, policy, attempt, max_attempts, history); with confirm: (a ** (1 -
    CONFIRM_SHARE), a ** CONFIRM_SHARE), independent stages on fresh units, so P(promote a null)
    <= a; without: (a, 1.0). history: the outcomes of all earlier attempts. The campaign grants
    level_pool.levels_at_planning (attempts that overlap), equal to this on a sequential ledger
    (each attempt decided before the next is planned). Raises like `attempt_level`.
    """
    return split_share(attempt_level(alpha, policy, attempt, max_attempts, history), confirm)


def split_share(share: float, confirm: bool = True) -> AttemptLevels:
    """An attempt's share of alpha split between its trial and its confirmation: with confirm
    (share ** (1 - CONFIRM_SHARE), share ** CONFIRM_SHARE), (0.0, 0.0) for a share of 0; without,
    (share, 1.0)."""
    if not confirm or share == 0.0:
        return AttemptLevels(share, 1.0 if not confirm else 0.0)
    return AttemptLevels(share ** (1.0 - CONFIRM_SHARE), share**CONFIRM_SHARE)


@dataclass(frozen=True)
class LevelRow:
    """One trial's row of the level schedule `ratchet check` prints.

    trial: 1-based index; level: the level the trial is tested at (the square root of the attempt's
    share of alpha when confirmed, else the share; `confirm_level` the confirmation's level, 1.0
    without one; share = level * confirm_level), before any promotion passes a share on; increments: per-look
    thresholds after carrying unreachable ones forward (sequential.boundaries); min_p_first / min_p_last: the
    smallest p-value the exact test can produce at the first / last look; reachable_first: the
    first look can stop for efficacy; reachable: some look can accept at all (the last look's
    threshold is at least its smallest p-value). A False `reachable` means this trial can never
    promote with the configured units: `ratchet check` warns.
    """

    trial: int
    level: float
    increments: tuple[float, ...]
    min_p_first: float
    min_p_last: float
    reachable_first: bool
    reachable: bool
    confirm_level: float = 1.0

    def to_json(self) -> dict[str, object]:
        """Plain JSON object with the fields above (increments as a list)."""
        data = asdict(self)
        data["increments"] = list(self.increments)
        return data


def level_schedule(
    alpha: float,
    multiplicity: Multiplicity,
    max_attempts: int,
    looks: Sequence[int],
    kind: Kind,
    margin: float = 0.0,
    confirm: bool = False,
    min_p: Callable[[int, float], float] | None = None,
) -> list[LevelRow]:
    """Rows for trials 1..max_attempts: level, look thresholds and whether the exact test reaches them.

    Levels are those of `attempt_levels` when no attempt promotes (the smallest each attempt can
    get). margin matters only for binary scores (the unconditional test's floor rises with it).
    confirm: split each attempt's level with its confirmation (gate.confirm on a benchmark target).
    min_p: an anytime-valid test's smallest p-value (sequential.boundaries).
    Raises like `trial_level` and PlanError on bad looks.
    """
    _check(alpha, multiplicity, max_attempts)
    rows = []
    for t in range(1, max_attempts + 1):
        level, confirm_level = attempt_levels(alpha, multiplicity, t, max_attempts, ["not_promoted"] * (t - 1), confirm)
        marks = boundaries(level, looks, kind, margin, min_p=min_p)
        rows.append(
            LevelRow(
                trial=t,
                level=level,
                increments=tuple(m.increment for m in marks),
                min_p_first=marks[0].min_p,
                min_p_last=marks[-1].min_p,
                reachable_first=marks[0].reachable,
                reachable=marks[-1].reachable,
                confirm_level=confirm_level,
            )
        )
    return rows
