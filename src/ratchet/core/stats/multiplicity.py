"""Multiplicity: the level each trial of a campaign is granted (`gate.multiplicity`).

- `campaign` (default): trial t of at most T = budget.max_attempts gets level alpha * w_t with
  harmonic weights w_t = (1 / t) / H_T, H_T = 1 + 1/2 + ... + 1/T. The weights are positive,
  non-increasing (front-loaded: early trials, when gains are easiest to find, get the most) and
  sum to exactly 1 over T trials, so by the union bound (Bonferroni) the probability that a run
  with no real improvement promotes anything is at most alpha, whatever the dependence between
  trials (the same champion, agents that learn from earlier verdicts). Harmonic rather than
  geometric weights: a geometric sequence makes late trials' levels vanish exponentially and
  unreachable with a few units; 1/t only decays like 1/(t ln T). Trials beyond T get level 0.
- `trial`: every trial at alpha; false promotions then accumulate over a long run (the report
  says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from ratchet.core.errors import RatchetError
from ratchet.core.stats.paired import Kind
from ratchet.core.stats.sequential import boundaries

Multiplicity = Literal["campaign", "trial"]


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
    harmonic = math.fsum(1.0 / t for t in range(1, max_attempts + 1))
    return (1.0 / trial_index) / harmonic


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


@dataclass(frozen=True)
class LevelRow:
    """One trial's row of the level schedule `ratchet check` prints.

    trial: 1-based index; level: the trial's level; increments: per-look p-value thresholds after
    carrying unreachable ones forward (sequential.boundaries); min_p_first / min_p_last: the
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
) -> list[LevelRow]:
    """Rows for trials 1..max_attempts: level, look thresholds and whether the exact test reaches them.

    margin matters only for binary scores (the unconditional test's floor rises with it).
    Raises like `trial_level` and PlanError on bad looks.
    """
    _check(alpha, multiplicity, max_attempts)
    rows = []
    for t in range(1, max_attempts + 1):
        level = trial_level(alpha, multiplicity, t, max_attempts)
        marks = boundaries(level, looks, kind, margin)
        rows.append(
            LevelRow(
                trial=t,
                level=level,
                increments=tuple(m.increment for m in marks),
                min_p_first=marks[0].min_p,
                min_p_last=marks[-1].min_p,
                reachable_first=marks[0].reachable,
                reachable=marks[-1].reachable,
            )
        )
    return rows
