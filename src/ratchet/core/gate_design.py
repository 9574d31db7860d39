"""The gate's design around `decide` (pure): the margin tested as the null, the confirmation's
looks, and the record of everything a verdict depends on (`run.started` data.gate)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ratchet.core.errors import RatchetError
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.vocab import GateTest, Spending


def max_unit_loss_for(declared: float | None, metric_range: Sequence[float] | None) -> float | None:
    """The floor test's max_unit_loss: `gate.max_unit_loss` when declared, else hi - lo of
    `target.metric_range` (no paired difference of two scores in [lo, hi] loses more), else None (no
    floor). Metric units, > 0 when not None."""
    if declared is not None:
        return float(declared)
    if metric_range is not None:
        return float(metric_range[1]) - float(metric_range[0])
    return None


def confirmation_looks(looks: Sequence[int], units_used: int) -> tuple[int, ...]:
    """The looks of a confirmation on fresh units: one look at the design's last look, looks[-1],
    whatever the trial used (`units_used` >= 1, kept for the call's shape).

    Fresh units give a rare large loss its chance to show: a failure of frequency q hides from 40
    units with chance 0.95**40 = 0.13 at q = 0.05, from 10 with 0.60. Simulated (docs/gate.md): with
    the harmful-tail guard, a run of 20 lopsided nulls with q = 0.10 promotes 9% instead of 69% with
    the trial's own schedule, for +4% job-units in the mixed campaign. Raises ValueError for units_used < 1.
    """
    if units_used < 1:
        raise ValueError(f"units_used must be >= 1, got {units_used}")
    return (tuple(looks)[-1],)


def gate_design(test: GateTest, metric_range: Sequence[float] | None, spending: Spending = "linear",
                max_unit_loss: float | None = None) -> dict:
    """Everything a verdict depends on beyond the contract's numbers, for `run.started` (so a verdict
    can be re-derived later): the test and its guarantee sentence, the range, the spending, the
    confirmation's share and looks rule, the multiplicity rule, and the tests' constants.
    `tail_guard_scales` is rules 1's fixed guard (6 robust SDs), recorded by runs of those rules;
    rules 2 records None there and its guard in `tail_guard` (`tail_guard.guard_design`); for
    `betting` (the floor test), max_unit_loss (`gate.max_unit_loss`, defaulted from the range), the
    floor -max_unit_loss, the bet rule and the bet cap (FLOOR_BET_CAP / (margin - floor))."""
    from ratchet.core.stats import floor, multiplicity, paired, tail_guard
    from ratchet.core.stats.guarantee import guarantee
    from ratchet.core.stats.sequential import SPENDING_NAMES

    betting = test == "betting"
    loss = max_unit_loss_for(max_unit_loss, metric_range)
    return {
        "rules": GATE_RULES,
        "test": test,
        "guarantee": guarantee(test),
        "metric_range": None if metric_range is None else [float(v) for v in metric_range],
        "spending": spending,
        "spending_name": SPENDING_NAMES[spending],
        "confirm_share": multiplicity.CONFIRM_SHARE,
        "confirmation_looks": "one look at gate.units[-1] fresh units",
        "multiplicity_rule": "online fallback over harmonic weights (Tian & Ramdas 2021)",
        "tail_guard_scales": None,
        "tail_guard": tail_guard.guard_design() if test == "guarded_sign_flip" else None,
        "skew_correction": "Hall 1992 skewness-corrected t must reject too (p = the larger)"
        if test == "guarded_sign_flip" else None,
        "exact_max_units": paired.EXACT_MAX_UNITS,
        "mc_flips": [paired.MC_FLIPS, paired.MC_RESOLUTION, paired.MC_MAX_FLIPS],
        "bet_cap": floor.FLOOR_BET_CAP if betting else None,
        "bet_rule": floor.BET_RULE if betting else None,
        "max_unit_loss": loss if betting else None,
        "floor": None if not betting or loss is None else -loss,
    }


def margin_for(min_effect: float, min_effect_rel: float, champion_mean: float) -> float:
    """The margin tested as the null: max(min_effect, min_effect_rel * |champion_mean|), metric units.

    champion_mean should come from measurements made before the trial (else the null depends on the
    data it is tested on). Raises RatchetError `gate.bad_margin` on negative or non-finite inputs.
    """
    values = (min_effect, min_effect_rel, champion_mean)
    if (
        not all(isinstance(v, int | float) and math.isfinite(v) for v in values)
        or min(min_effect, min_effect_rel) < 0
    ):
        raise RatchetError(
            "gate.bad_margin",
            f"min_effect {min_effect!r}, min_effect_rel {min_effect_rel!r} and "
            f"champion mean {champion_mean!r} must be finite, the first two >= 0",
        )
    return float(max(min_effect, min_effect_rel * abs(champion_mean)))


def margin_for_state(min_effect: float, min_effect_rel: float, champion_mean: float | None) -> float:
    """margin_for with the champion's mean as last measured (RunState.champion_mean). With no
    measured mean a relative margin cannot be computed: RatchetError `gate.no_champion_mean` when
    min_effect_rel > 0 (the kernel always measures the baseline first, so this is a bug, never a
    silent 0)."""
    if champion_mean is None:
        if min_effect_rel > 0:
            raise RatchetError("gate.no_champion_mean", "gate.min_effect_rel needs the champion's measured mean, "
                               "and none was recorded", hint="report this: the preflight records the baseline's mean")
        return margin_for(min_effect, 0.0, 0.0)
    return margin_for(min_effect, min_effect_rel, champion_mean)
