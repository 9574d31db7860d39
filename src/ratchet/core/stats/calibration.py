"""A benchmark's noise and what the gate can detect through it (`ratchet calibrate`): pure arithmetic.

The champion is measured on N seeds twice each. Model: y_ij = mu + s_i + e_ij for seed i and repeat
j, with a seed effect s_i (spread `seed_sd`) and run-to-run noise e_ij (spread `repeat_sd`),
independent. Method-of-moments estimates (one-way random-effects ANOVA with two repeats):

- repeat variance: sum_i (y_i1 - y_i2)^2 / (2 N)  (unbiased, N degrees of freedom);
- seed variance: max(0, var(seed means) - repeat variance / 2)  (the seed means' variance holds
  half the repeat variance; floored at 0).

A trial's paired difference d_i = candidate_i - champion_i shares the seed, so how much of s_i
cancels depends on the candidate: all of it when the change leaves what the seed drives alone
(SD sqrt(2) repeat_sd), none when the candidate's response to a seed is unrelated to the
champion's (SD sqrt(2 (seed_sd^2 + repeat_sd^2))). Detectable effects use the middle case,
a correlation of 1/2 between the two seed effects: SD sqrt(2 repeat_sd^2 + seed_sd^2). A
deterministic benchmark (repeat SD 0) therefore plans with its seed-to-seed SD, never with zero.

Detectable effects of the sign-flip test (continuous scores) use the normal approximation of a
one-sided paired t-test's power with Student t quantiles: the smallest gain detected with
probability `power` on n units at p-value threshold a is
    margin + (t_{1-a, n-1} + t_{power, n-1}) * sd / sqrt(n)
(the sign-flip test of the mean is asymptotically as powerful as the t-test; a simulation test
checks the figure against the real test). Binary scores (examples) use the exact McNemar power of
`power.mde_binary`. Each look is judged at its own threshold (`sequential.boundaries`): a look
whose threshold the exact test cannot reach detects nothing (None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ratchet.core.stats.multiplicity import Multiplicity, trial_level
from ratchet.core.stats.paired import Kind
from ratchet.core.stats.sequential import boundaries, validate_looks

DEFAULT_POWER = 0.8
"""The probability of accepting a real gain that `detectable` figures are computed for."""

SHARED_SEED_CORRELATION = 0.5
"""The assumed correlation between the champion's and a candidate's effect of one seed (see the
module docstring): 1 would cancel the seed effect entirely, 0 not at all."""

MAX_SUGGESTED_UNITS = 100_000
"""The largest last look `units_for_effect` searches (units per variant)."""

MIN_SEEDS = 2
"""Seeds (each measured twice) needed to estimate a seed-to-seed spread."""


@dataclass(frozen=True)
class Noise:
    """A benchmark's noise from seeds measured twice each (see the module docstring).

    seeds: seeds with both repeats measured; mean: the grand mean (raw metric units); repeat_sd:
    the same-seed run-to-run SD; seed_sd: the SD of the seed's own effect, net of run-to-run
    noise; total_sd: sqrt(seed_sd^2 + repeat_sd^2), the SD of one measurement across seeds;
    paired_sd: the SD of a trial's paired difference that detectable effects use; paired_sd_low /
    paired_sd_high: that SD when a candidate keeps all / none of the champion's seed effect;
    deterministic: every seed gave exactly the same value twice; constant: deterministic and
    every seed gave the same value. All SDs in metric units, >= 0.
    """

    seeds: int
    mean: float
    repeat_sd: float
    seed_sd: float
    total_sd: float
    paired_sd: float
    paired_sd_low: float
    paired_sd_high: float
    deterministic: bool
    constant: bool

    def to_json(self) -> dict[str, object]:
        """Plain JSON object with the fields above."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Noise:
        """Rebuild from `to_json()` output. Raises ValueError on missing or mistyped fields."""
        try:
            fields: dict[str, Any] = {name: data[name] for name in cls.__dataclass_fields__}
            noise = cls(**fields)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a noise estimate: {exc}") from None
        if not all(isinstance(getattr(noise, f), int | float) for f in ("mean", "repeat_sd", "seed_sd",
                                                                         "paired_sd")):
            raise ValueError("not a noise estimate: non-numeric spread")
        return noise


def estimate_noise(pairs: Sequence[tuple[float, float]]) -> Noise:
    """The noise of a benchmark from `pairs`: per seed, its two measurements (raw metric values,
    finite). Raises ValueError with fewer than MIN_SEEDS pairs or a non-finite value.
    Source: the one-way random-effects ANOVA estimators, e.g. Searle, Casella & McCulloch (1992),
    Variance Components, §3.5 (balanced case, two observations per group)."""
    if len(pairs) < MIN_SEEDS:
        raise ValueError(f"need at least {MIN_SEEDS} seeds measured twice, got {len(pairs)}")
    values = [(float(a), float(b)) for a, b in pairs]
    if not all(math.isfinite(a) and math.isfinite(b) for a, b in values):
        raise ValueError("every measurement must be finite")
    n = len(values)
    repeat_var = math.fsum((a - b) ** 2 for a, b in values) / (2 * n)
    means = [(a + b) / 2 for a, b in values]
    grand = math.fsum(means) / n
    means_var = math.fsum((m - grand) ** 2 for m in means) / (n - 1)
    seed_var = max(0.0, means_var - repeat_var / 2)
    deterministic = all(a == b for a, b in values)
    return Noise(
        seeds=n, mean=grand, repeat_sd=math.sqrt(repeat_var), seed_sd=math.sqrt(seed_var),
        total_sd=math.sqrt(seed_var + repeat_var),
        paired_sd=math.sqrt(2 * repeat_var + 2 * (1 - SHARED_SEED_CORRELATION) * seed_var),
        paired_sd_low=math.sqrt(2 * repeat_var), paired_sd_high=math.sqrt(2 * (seed_var + repeat_var)),
        deterministic=deterministic, constant=deterministic and all(m == means[0] for m in means),
    )


def aa_skewness(pairs: Sequence[tuple[float, float]], direction: str = "max") -> float | None:
    """The skewness G1 (stats.skew.sample_skewness) of a calibration's A/A differences: per seed,
    its second measurement minus its first (negated for direction `min`, so a left tail is rare
    large losses, as in a trial's d). pairs: per seed, its two raw values (finite). None with fewer
    than 3 pairs or no spread (a deterministic benchmark). Two repeats of one tree are exchangeable
    unless their order matters (a warm cache, a shared file), so a far-from-0 G1 says the repeats
    differ systematically or the noise has a heavy tail that few seeds show unevenly; it cannot see
    the skew a candidate would bring."""
    from ratchet.core.stats.skew import sample_skewness

    sign = 1.0 if direction == "max" else -1.0
    value = sample_skewness([sign * (float(b) - float(a)) for a, b in pairs])
    return float(value) if isinstance(value, float) else None


def detectable_continuous(sd: float, units: int, threshold: float, power: float = DEFAULT_POWER,
                          margin: float = 0.0) -> float:
    """The smallest mean paired gain (metric units) a one-sided paired test at p-value `threshold`
    detects on `units` units with probability `power`, by the normal approximation of the t-test's
    power: margin + (t_{1-threshold, units-1} + t_{power, units-1}) * sd / sqrt(units).
    math.inf when units < 2 or threshold <= 0 (nothing can be detected). Raises ValueError on a
    negative or non-finite sd or margin, or power / threshold outside (0, 1).
    Source: e.g. Chow, Shao & Wang (2008), Sample Size Calculations in Clinical Research, §3.1."""
    from scipy import stats as sps

    if not (math.isfinite(sd) and sd >= 0 and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"sd and margin must be finite and >= 0, got {sd!r}, {margin!r}")
    if not (0.0 < power < 1.0 and threshold < 1.0):
        raise ValueError(f"power and threshold must be below 1 (power above 0), got {power!r}, {threshold!r}")
    if units < 2 or threshold <= 0.0:
        return math.inf
    df = units - 1
    return margin + float(sps.t.ppf(1.0 - threshold, df) + sps.t.ppf(power, df)) * sd / math.sqrt(units)


@dataclass(frozen=True)
class LookEffect:
    """What one look can detect: index (0-based), units (cumulative, per variant), threshold (the
    look's p-value threshold), detectable (the smallest gain detected there with the power asked,
    metric units for continuous scores, pass rate for binary; None: the exact test cannot reach
    the threshold with this many units, so this look never accepts)."""

    index: int
    units: int
    threshold: float
    detectable: float | None

    def to_json(self) -> dict[str, object]:
        """Plain JSON object with the fields above."""
        return asdict(self)


def look_effects(sd: float, looks: Sequence[int], level: float, kind: Kind = "continuous", margin: float = 0.0,
                 power: float = DEFAULT_POWER) -> tuple[LookEffect, ...]:
    """The detectable gain at every look of a trial at `level` (see the module docstring).

    sd: the paired difference's SD (continuous; ignored for binary); looks: cumulative units
    (`gate.units`); margin: the tested null (metric units; binary: a pass rate, and the figure is
    the McNemar one, a floor when margin > 0). Raises PlanError on bad looks, ValueError on a bad
    level, sd, margin or power."""
    from ratchet.core.stats.power import mde_binary

    out = []
    for look in boundaries(level, looks, kind, margin):
        value: float | None = None
        if look.reachable and look.increment > 0.0:
            if kind == "binary":
                value = max(mde_binary(look.units, look.increment, power), margin)
            else:
                value = detectable_continuous(sd, look.units, look.increment, power, margin)
            value = value if math.isfinite(value) else None
        out.append(LookEffect(look.index, look.units, look.increment, value))
    return tuple(out)


@dataclass(frozen=True)
class LevelEffects:
    """The detectable gains of one trial of a campaign: trial (1-based), level (granted by
    `gate.multiplicity`), looks (one LookEffect per look of `gate.units`)."""

    trial: int
    level: float
    looks: tuple[LookEffect, ...]

    def to_json(self) -> dict[str, object]:
        """Plain JSON object: trial, level, looks (a list of LookEffect objects)."""
        return {"trial": self.trial, "level": self.level, "looks": [look.to_json() for look in self.looks]}


def granted_trials(multiplicity: Multiplicity, max_attempts: int) -> tuple[int, ...]:
    """The trials whose levels bound a campaign's: the first (the largest level) and, under
    `campaign` multiplicity, the last (the smallest); `trial` multiplicity grants all the same."""
    return (1,) if multiplicity == "trial" or max_attempts == 1 else (1, max_attempts)


def level_effects(sd: float, *, alpha: float, multiplicity: Multiplicity, max_attempts: int, looks: Sequence[int],
                  kind: Kind = "continuous", margin: float = 0.0, power: float = DEFAULT_POWER
                  ) -> tuple[LevelEffects, ...]:
    """`look_effects` at the levels a campaign grants (`granted_trials`: the first trial's, and the
    last trial's under campaign multiplicity). Raises like `trial_level` and `look_effects`."""
    out = []
    for trial in granted_trials(multiplicity, max_attempts):
        level = trial_level(alpha, multiplicity, trial, max_attempts)
        out.append(LevelEffects(trial, level, look_effects(sd, looks, level, kind, margin, power)))
    return tuple(out)


def scaled_looks(shape: Sequence[int], last: int) -> tuple[int, ...]:
    """Looks in the proportions of `shape` (e.g. gate.units [10, 20, 40]) ending at `last` units:
    each look rounded to whole units, at least 1, duplicates dropped. Raises PlanError on a bad
    shape, ValueError when last < 1."""
    values = validate_looks(shape)
    if last < 1:
        raise ValueError(f"last must be >= 1, got {last}")
    return tuple(sorted({max(1, round(v * last / values[-1])) for v in values[:-1]} | {last}))


def units_for_effect(effect: float, sd: float, shape: Sequence[int], level: float, kind: Kind = "continuous",
                     margin: float = 0.0, power: float = DEFAULT_POWER) -> tuple[int, ...] | None:
    """The smallest looks in the proportions of `shape` (`scaled_looks`) whose last look detects a
    gain of `effect` (metric units; binary: pass rate) at `level` with probability `power`.

    None when no last look up to MAX_SUGGESTED_UNITS does (or effect <= margin: a gain at the
    margin is the null). Bisection over the last look's units, which assumes the detectable gain
    falls as units grow (true up to the exact test's discreteness). Raises ValueError on a
    non-finite or non-positive effect, and like `look_effects`."""
    if not (math.isfinite(effect) and effect > 0):
        raise ValueError(f"effect must be finite and > 0, got {effect!r}")
    if effect <= margin:
        return None

    def detects(last: int) -> bool:
        found = look_effects(sd, scaled_looks(shape, last), level, kind, margin, power)[-1].detectable
        return found is not None and found <= effect

    low, high = 1, 2
    while not detects(high):
        if high >= MAX_SUGGESTED_UNITS:
            return None
        low, high = high, min(2 * high, MAX_SUGGESTED_UNITS)
    while high - low > 1:
        mid = (low + high) // 2
        if detects(mid):
            high = mid
        else:
            low = mid
    return scaled_looks(shape, high)
