"""The gate: failure rules, looks, direction, binary scores, decisions without jobs."""

from __future__ import annotations

import math
from typing import get_args

import numpy as np
import pytest

from ratchet.core.canonical import canonical_bytes
from ratchet.core.errors import PlanError, RatchetError
from ratchet.core.gate import (
    NO_LOOK,
    REASONS,
    VERDICTS,
    Decision,
    GateSettings,
    Reason,
    UnitScore,
    Verdict,
    decide,
)
from ratchet.core.gate_design import margin_for

LOOKS = (10, 20, 40)


def settings(**overrides) -> GateSettings:
    base = {"looks": LOOKS, "level": 0.05, "margin": 0.0, "kind": "continuous", "direction": "max", "seed": 1}
    return GateSettings(**{**base, **overrides})


def paired(champion, candidate, start: int = 0) -> list[UnitScore]:
    return [
        UnitScore(start + i, float(a), float(b))
        for i, (a, b) in enumerate(zip(champion, candidate, strict=True))
    ]


def gains(n: int, gain: float, noise: float = 0.1, seed: int = 0) -> list[UnitScore]:
    rng = np.random.default_rng(seed)
    champ = rng.normal(1.0, noise, n)
    return paired(champ, champ + gain + rng.normal(0, noise, n))


def test_every_verdict_and_reason_has_a_docstring_line() -> None:
    assert set(VERDICTS) == set(get_args(Verdict))
    assert set(REASONS) == set(get_args(Reason))


def test_clear_gain_is_accepted_at_the_first_look() -> None:
    decision = decide(gains(10, 1.0), settings())
    assert (decision.verdict, decision.reason, decision.look, decision.units) == (
        "accepted",
        "significant_gain",
        0,
        10,
    )
    assert decision.p_value == 0.5**10 and decision.p_value <= decision.threshold
    assert decision.estimate == pytest.approx(1.0, abs=0.15)
    low, high = decision.interval
    assert low < decision.estimate < high
    assert decision.level == 0.05 and decision.retry_units == ()


def test_no_gain_stops_for_futility_at_an_interim_look() -> None:
    decision = decide(gains(10, -0.5), settings())
    assert (decision.verdict, decision.reason, decision.look) == ("rejected", "futility", 0)


def test_identical_scores_never_accept() -> None:
    same = [UnitScore(i, 0.7, 0.7) for i in range(40)]
    decision = decide(same, settings())
    assert decision.verdict == "rejected" and decision.estimate == 0.0 and decision.p_value == 1.0


def test_undecided_interim_look_continues_to_the_next() -> None:
    scores = paired([0.0] * 10, [0.5, -0.4, 0.3, -0.2, 0.1, 0.2, -0.1, 0.3, -0.3, 0.1])
    decision = decide(scores, settings())
    assert (decision.verdict, decision.reason, decision.look, decision.units) == (
        "continue",
        "next_look",
        0,
        10,
    )
    assert "20 units" in decision.reason_text


def test_last_look_without_significance_is_rejected() -> None:
    rng = np.random.default_rng(4)
    pattern = np.where(rng.random(40) < 0.5, 0.3, -0.25)
    pattern[:20] = np.tile([0.3, -0.25], 10)  # positive but weak at every look
    decision = decide(paired(np.zeros(40), pattern), settings())
    assert (decision.verdict, decision.reason, decision.look, decision.units) == (
        "rejected",
        "not_significant",
        2,
        40,
    )


def test_walking_all_looks_equals_judging_after_each_look() -> None:
    scores = gains(40, 0.15, noise=0.3, seed=8)
    full = decide(scores, settings())
    for n in LOOKS:
        step = decide(scores[:n], settings())
        if step.verdict != "continue":
            break
    assert (step.verdict, step.reason, step.look, step.p_value) == (
        full.verdict,
        full.reason,
        full.look,
        full.p_value,
    )


def test_gain_exactly_at_margin_is_not_accepted() -> None:
    decision = decide(paired([1.0] * 10, [1.2] * 10), settings(margin=0.2))
    assert decision.verdict == "rejected" and decision.reason == "futility"


def test_margin_shifts_the_null() -> None:
    scores = gains(10, 0.3, noise=0.01)
    assert decide(scores, settings(margin=0.1)).verdict == "accepted"
    assert decide(scores, settings(margin=0.5)).reason == "futility"


def test_min_direction_normalises_so_positive_is_better() -> None:
    scores = gains(10, -1.0)  # the candidate's loss is lower: better when direction is min
    decision = decide(scores, settings(direction="min"))
    assert decision.verdict == "accepted" and decision.estimate > 0
    assert decide(scores, settings()).reason == "futility"


def test_candidate_failure_rejects_even_with_a_large_gain() -> None:
    scores = gains(10, 5.0)
    scores[3] = UnitScore(3, 1.0, None, candidate_failed=True)
    decision = decide(scores, settings())
    assert (decision.verdict, decision.reason, decision.look) == ("rejected", "candidate_failed", NO_LOOK)
    assert "unit 3" in decision.reason_text


def test_candidate_nan_counts_as_failure() -> None:
    scores = gains(10, 5.0)
    scores[0] = UnitScore(0, 1.0, math.nan)
    assert decide(scores, settings()).reason == "candidate_failed"


def test_candidate_failure_before_the_first_look_rejects_immediately() -> None:
    decision = decide([UnitScore(0, 1.0, None, candidate_failed=True)], settings())
    assert decision.reason == "candidate_failed"


def test_champion_failure_is_retried_once() -> None:
    scores = gains(10, 1.0)
    scores[2] = UnitScore(2, None, scores[2].candidate, champion_failed=True)
    scores[5] = UnitScore(5, math.inf, scores[5].candidate)
    decision = decide(scores, settings())
    assert (decision.verdict, decision.reason, decision.retry_units) == ("continue", "champion_retry", (2, 5))


def test_champion_failing_again_after_retry_is_inconclusive() -> None:
    scores = gains(10, 1.0)
    scores[2] = UnitScore(2, None, scores[2].candidate, champion_failed=True, champion_retried=True)
    decision = decide(scores, settings())
    assert (decision.verdict, decision.reason, decision.retry_units) == (
        "inconclusive",
        "champion_failed",
        (),
    )


def test_champion_retry_that_succeeds_is_judged_normally() -> None:
    scores = gains(10, 1.0)
    scores[2] = UnitScore(2, scores[2].champion, scores[2].candidate, champion_retried=True)
    assert decide(scores, settings()).verdict == "accepted"


def test_candidate_failure_wins_over_champion_failure() -> None:
    scores = gains(10, 1.0)
    scores[1] = UnitScore(1, None, None, champion_failed=True, candidate_failed=True)
    assert decide(scores, settings()).reason == "candidate_failed"


def test_too_few_units_is_an_error_with_a_code() -> None:
    with pytest.raises(RatchetError) as err:
        decide(gains(9, 1.0), settings())
    assert err.value.code == "gate.too_few_units"


def test_units_not_yet_run_do_not_count() -> None:
    scores = gains(10, 1.0) + [UnitScore(10, 1.0, None)]
    assert decide(scores, settings()).units == 10
    scores = gains(10, 1.0)
    scores[4] = UnitScore(4, 1.0, None)
    with pytest.raises(RatchetError) as err:
        decide(scores, settings())
    assert err.value.code == "gate.too_few_units"


def test_too_many_and_duplicate_units_are_errors() -> None:
    with pytest.raises(RatchetError) as err:
        decide(gains(41, 0.0), settings())
    assert err.value.code == "gate.too_many_units"
    scores = gains(10, 1.0)
    scores[1] = UnitScore(0, 1.0, 1.0)
    with pytest.raises(RatchetError) as err:
        decide(scores, settings())
    assert err.value.code == "gate.duplicate_unit"


def test_binary_scores_use_mcnemar_and_newcombe() -> None:
    champ = [0] * 10 + [1] * 5
    cand = [1] * 10 + [1] * 5
    decision = decide(paired(champ, cand), settings(looks=(15,), kind="binary"))
    assert decision.verdict == "accepted" and decision.p_value == 0.5**10
    assert decision.estimate == pytest.approx(10 / 15)
    low, high = decision.interval
    assert 0 < low < decision.estimate < high <= 1


def test_binary_min_direction_flips_passes() -> None:
    champ, cand = [1] * 10, [0] * 10  # e.g. an error indicator: lower is better
    decision = decide(paired(champ, cand), settings(looks=(10,), kind="binary", direction="min"))
    assert decision.verdict == "accepted" and decision.estimate == 1.0


def test_binary_margin_uses_the_unconditional_test() -> None:
    decision = decide(paired([0] * 10, [1] * 10), settings(looks=(10,), kind="binary", margin=0.1))
    assert decision.p_value == pytest.approx(0.55**10)


def test_binary_scores_must_be_zero_or_one() -> None:
    with pytest.raises(RatchetError) as err:
        decide(paired([0.5] * 10, [1] * 10), settings(kind="binary"))
    assert err.value.code == "gate.bad_score"


def test_level_zero_never_accepts() -> None:
    decision = decide(gains(40, 5.0), settings(level=0.0))
    assert decision.verdict == "rejected" and decision.reason == "not_significant"


def test_single_unit_look_has_no_interval() -> None:
    decision = decide(gains(1, 1.0), settings(looks=(1, 2)))
    assert decision.interval is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"level": 1.0},
        {"level": -0.1},
        {"margin": -1.0},
        {"margin": math.nan},
        {"kind": "ordinal"},
        {"direction": "up"},
        {"seed": "x"},
    ],
)
def test_bad_settings_are_refused(overrides: dict) -> None:
    with pytest.raises(RatchetError) as err:
        settings(**overrides)
    assert err.value.code == "gate.bad_settings"


def test_bad_looks_in_settings_are_plan_errors() -> None:
    with pytest.raises(PlanError) as err:
        settings(looks=(20, 10))
    assert err.value.code == "plan.bad_looks"


def test_decision_without_jobs_and_json() -> None:
    decision = Decision.without_jobs("no_change", "The candidate's tree equals the champion's.", 0.01)
    assert (decision.verdict, decision.units, decision.look, decision.estimate) == (
        "rejected",
        0,
        NO_LOOK,
        None,
    )
    canonical_bytes(decision.to_json())
    canonical_bytes(decide(gains(10, 1.0), settings()).to_json())


def test_margin_for() -> None:
    assert margin_for(0.01, 0.0, 5.0) == 0.01
    assert margin_for(0.01, 0.1, -5.0) == 0.5
    assert margin_for(0.0, 0.0, 3.0) == 0.0
    with pytest.raises(RatchetError) as err:
        margin_for(-0.1, 0.0, 1.0)
    assert err.value.code == "gate.bad_margin"
    with pytest.raises(RatchetError):
        margin_for(0.0, 0.1, math.nan)


def test_confirmation_is_one_look_at_the_designs_last_look_whatever_the_trial_used():
    from ratchet.core.gate_design import confirmation_looks

    assert confirmation_looks((10, 20, 40), 10) == (40,)
    assert confirmation_looks((10, 20, 40), 40) == (40,)
    with pytest.raises(ValueError):
        confirmation_looks((10, 20, 40), 0)


def test_guard_rejects_a_candidate_whose_unit_lost_far_more_than_the_others() -> None:
    rng = np.random.default_rng(4)
    champ = rng.normal(1.0, 0.01, 20)
    cand = champ + 0.05 + rng.normal(0, 0.01, 20)
    cand[7] = champ[7] - 0.5  # one unit diverged
    guarded = decide(paired(champ, cand), settings(looks=(20,)))
    plain = decide(paired(champ, cand), settings(looks=(20,), test="sign_flip"))
    assert (guarded.verdict, guarded.reason, guarded.test) == ("rejected", "harmful_tail", "guarded_sign_flip")
    assert plain.reason != "harmful_tail"
    assert decide(gains(20, 0.05, 0.01), settings(looks=(20,))).verdict == "accepted"  # no outlier: no guard


def test_gate_design_records_the_test_its_guarantee_and_constants() -> None:
    from ratchet.core.gate_design import gate_design

    design = gate_design("betting", (0.0, 1.0))
    assert design["test"] == "betting" and design["metric_range"] == [0.0, 1.0]
    assert design["guarantee"].startswith("P(accept) <=") and design["spending"] == "linear"
    assert canonical_bytes(design)  # JSON-clean, for the ledger
    assert gate_design("guarded_sign_flip", None)["tail_guard_scales"] is None  # rules 1 recorded 6.0 here


def test_a_unit_below_the_floor_rejects_the_candidate_naming_the_unit_and_the_floor() -> None:
    champ = np.full(20, 0.9)
    cand = champ + 0.001  # too small a gain to accept at the first look
    cand[12] = 0.6  # a loss of 0.3 on unit 12, beyond max_unit_loss = 0.1
    decision = decide(paired(champ, cand), settings(looks=(10, 20), test="betting", max_unit_loss=0.1))
    assert (decision.verdict, decision.reason, decision.look, decision.bound) == ("rejected", "below_floor", 1, None)
    assert "Unit 12" in decision.reason_text and "-0.1" in decision.reason_text
    # the same unit outside metric_range is a below_floor rejection under the floor test, not gate.bad_score
    cand[12] = -0.5
    ranged = decide(paired(champ, cand), settings(looks=(10, 20), test="betting", metric_range=(0.0, 1.0)))
    assert ranged.reason == "below_floor" and "floor -1" in ranged.reason_text
    assert decide(paired(champ[:10], cand[:10]), settings(looks=(10, 20), test="betting",
                                                          max_unit_loss=0.1)).reason != "below_floor"


def test_rules_1_betting_is_unchanged_where_the_floor_test_differs() -> None:
    from ratchet.core.stats.betting import betting_test
    from ratchet.core.stats.floor import floor_test

    rng = np.random.default_rng(8)
    champ = rng.uniform(0.3, 0.7, 40)
    cand = np.clip(champ + rng.normal(0.05, 0.02, 40), 0.0, 1.0)
    d = cand - champ
    old = decide(paired(champ, cand), settings(test="betting", metric_range=(0.0, 1.0), rules=1))
    new = decide(paired(champ, cand), settings(test="betting", metric_range=(0.0, 1.0)))
    assert old.p_value == float(betting_test(d, 0.0, (-1.0, 1.0), 0.05, 40))
    assert new.p_value == float(floor_test(d, 0.0, -1.0))
    assert old.p_value != new.p_value and old.test == new.test == "betting"
    with pytest.raises(RatchetError) as err:  # rules 1 bets over the range: a floor alone is not enough
        settings(test="betting", max_unit_loss=1.0, rules=1)
    assert err.value.code == "gate.bad_settings"


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, True])
def test_max_unit_loss_must_be_finite_and_positive(bad: float) -> None:
    with pytest.raises(RatchetError) as err:
        settings(test="betting", max_unit_loss=bad)
    assert err.value.code == "gate.bad_settings" and "max_unit_loss" in err.value.message


def test_gate_design_records_the_floor_the_bet_rule_and_the_cap() -> None:
    from ratchet.core.gate_design import gate_design

    ranged = gate_design("betting", (0.0, 1.0))
    assert (ranged["max_unit_loss"], ranged["floor"], ranged["bet_cap"]) == (1.0, -1.0, 0.99)
    assert ranged["bet_rule"].startswith("aGRAPA")
    declared = gate_design("betting", (0.0, 1.0), max_unit_loss=0.1)
    assert (declared["max_unit_loss"], declared["floor"]) == (0.1, -0.1)
    assert gate_design("sign_flip", (0.0, 1.0))["floor"] is None
    assert canonical_bytes(declared)
