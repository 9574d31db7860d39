"""Guardrails in the gate (core.guardrails, gate.decide): the look walk, the agreement of the one-trial
decision with its batched twin, the promise at the allowance (simulated, Clopper-Pearson) and the
contract's rules."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import clopper_pearson

from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import ContractError, RatchetError
from ratchet.core.gate import GateSettings, UnitScore, decide
from ratchet.core.guardrails import (
    GUARDED_OUTCOMES,
    GUARDRAIL,
    Guardrail,
    allowance_for,
    decide_batch,
    walk_guarded,
)
from ratchet.core.stats.sequential import walk_looks

LOOKS = (10, 20, 40)


def settings(*guardrails: Guardrail, level: float = 0.05, seed: int = 1) -> GateSettings:
    return GateSettings(looks=LOOKS, level=level, margin=0.0, kind="continuous", direction="max", seed=seed,
                        guardrails=guardrails)


def scores(d: np.ndarray, champ: np.ndarray, cand: np.ndarray) -> list[UnitScore]:
    """UnitScores with primary champion 0 and candidate d, guardrail values (guardrails, n)."""
    return [UnitScore(i, 0.0, float(d[i]), champion_guardrails=tuple(champ[:, i]),
                      candidate_guardrails=tuple(cand[:, i])) for i in range(len(d))]


def test_a_candidate_that_breaks_its_guardrail_is_rejected_naming_it() -> None:
    rng = np.random.default_rng(0)
    champ = rng.normal(0.9, 0.01, (1, 40))
    guard = Guardrail("accuracy", "max", 0.02)
    decision = decide(scores(rng.normal(1.0, 0.2, 40), champ, champ - 0.2), settings(guard))
    assert (decision.verdict, decision.reason, decision.look) == ("rejected", "guardrail", 0)
    (check,) = decision.guardrails
    assert (check.name, check.status, check.allowance) == ("accuracy", "broken", 0.02)
    assert check.estimate == pytest.approx(-0.2)
    assert "Guardrail accuracy regressed beyond its allowance" in decision.reason_text
    assert decision.to_json()["guardrails"][0]["name"] == "accuracy"


def test_a_guardrail_for_a_min_metric_counts_a_rise_as_a_regression() -> None:
    rng = np.random.default_rng(1)
    champ = rng.normal(5.0, 0.01, (1, 40))
    worse = decide(scores(rng.normal(1.0, 0.2, 40), champ, champ + 1.0), settings(Guardrail("latency", "min", 0.1)))
    better = decide(scores(rng.normal(1.0, 0.2, 40), champ, champ - 1.0), settings(Guardrail("latency", "min", 0.1)))
    assert worse.reason == "guardrail" and better.reason == "significant_gain"
    assert better.guardrails[0].status == "passed" and better.guardrails[0].bound >= -0.1


def test_a_guardrail_not_shown_by_the_last_look_rejects_even_a_clear_gain() -> None:
    rng = np.random.default_rng(2)
    champ = rng.normal(0.0, 1.0, (1, 40))
    cand = champ + rng.normal(0.0, 3.0, (1, 40))  # unchanged on average, far too noisy to show within 0.1
    decision = decide(scores(rng.normal(2.0, 0.5, 40), champ, cand), settings(Guardrail("g", "max", 0.1)))
    assert (decision.reason, decision.look, decision.guardrails[0].status) == ("guardrail", 2, "not_shown")
    assert decision.p_value <= decision.threshold, "the primary was significant: only the guardrail rejected"


def test_without_guardrails_the_batched_walk_is_the_plain_walk() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, (300, 40))
    empty = np.zeros((300, 0, 40))
    look, outcome = decide_batch(d, empty, empty, settings())
    s = settings()
    from ratchet.core.gate import look_boundaries, look_test

    test, marks = look_test(s), look_boundaries(s)
    p = np.stack([test.p_value(d[:, :n], 0.0, m.increment) for n, m in zip(LOOKS, marks, strict=True)], axis=1)
    est = np.stack([d[:, :n].mean(axis=1) for n in LOOKS], axis=1)
    guard = np.stack([test.guard(d[:, :n]) for n in LOOKS], axis=1)
    plain_look, plain_outcome = walk_looks(p, est, 0.0, [m.increment for m in marks], guard)
    assert np.array_equal(outcome, plain_outcome) and np.array_equal(look, plain_look)


def test_decide_and_its_batched_twin_agree_trial_by_trial() -> None:
    rng = np.random.default_rng(4)
    trials, g = 40, Guardrail("g", "max", 0.5)
    d = rng.normal(0.6, 1.0, (trials, 40))
    champ = rng.normal(0.0, 1.0, (trials, 1, 40))
    cand = champ + rng.normal(-0.3, 1.0, (trials, 1, 40))
    _, outcome = decide_batch(d, champ, cand, settings(g))
    for t in range(trials):
        one = decide(scores(d[t], champ[t], cand[t]), settings(g))
        name = GUARDED_OUTCOMES[outcome[t]]
        assert one.reason == {"accepted": "significant_gain"}.get(name, name)
    assert len(set(outcome.tolist())) >= 3, "the draw should exercise several outcomes"


def test_the_walk_keeps_a_rejection_from_an_earlier_look() -> None:
    # primary significant at look 1 only, guardrail shown at look 2 only: accepted at look 2
    p = np.array([[0.001, 0.5, 0.5]])
    est = np.array([[1.0, 0.1, 0.1]])
    shown = np.array([[[False, True, False]]])
    look, outcome, which = walk_guarded(p, est, 0.0, [0.0125, 0.0125, 0.025], np.zeros((1, 3), bool), shown,
                                        np.zeros_like(shown))
    assert (int(look[0]), GUARDED_OUTCOMES[int(outcome[0])], int(which[0])) == (1, "accepted", -1)
    broken = np.array([[[False, False, False], [True, False, False]]])
    look, outcome, which = walk_guarded(p, est, 0.0, [0.0125, 0.0125, 0.025], np.zeros((1, 3), bool),
                                        np.zeros((1, 2, 3), bool), broken)
    assert (int(look[0]), int(outcome[0]), int(which[0])) == (0, GUARDRAIL, 1)


def test_a_candidate_losing_exactly_its_allowance_is_promoted_at_most_at_the_level() -> None:
    """The promise at the guardrail's boundary: a primary gain that is always significant, a Gaussian
    guardrail change with mean exactly -allowance. 2,000 trials: the promotion rate's 95%
    Clopper-Pearson lower bound must not exceed the level (a rate of 5% would show as about [4.1, 6.0])."""
    rng = np.random.default_rng(32)
    trials, level, allowance = 2000, 0.05, 0.5
    d = rng.normal(3.0, 1.0, (trials, 40))
    champ = rng.normal(0.0, 1.0, (trials, 1, 40))
    cand = champ + rng.normal(-allowance, 1.0, (trials, 1, 40))
    _, outcome = decide_batch(d, champ, cand, settings(Guardrail("g", "max", allowance), level=level, seed=7))
    promoted = int((outcome == 1).sum())
    low, high = clopper_pearson(promoted, trials)
    assert low <= level, f"promoted {promoted}/{trials} at the boundary: [{low:.4f}, {high:.4f}] lies above {level}"
    assert promoted > 0, "the test must not be trivially conservative: some boundary trials are promoted"


def test_a_pass_fail_guardrail_uses_a_test_valid_for_ties() -> None:
    rng = np.random.default_rng(5)
    champ = (rng.random((1, 40)) < 0.8).astype(float)
    decision = decide(scores(rng.normal(2.0, 0.5, 40), champ, champ.copy()),
                      settings(Guardrail("check", "max", 0.1, "binary")))
    assert decision.reason == "significant_gain" and decision.guardrails[0].status == "passed"
    with pytest.raises(RatchetError, match="0 or 1"):
        decide(scores(rng.normal(2.0, 0.5, 40), champ, champ + 0.5), settings(Guardrail("check", "max", 0.1, "binary")))


def test_allowance_takes_the_larger_of_absolute_and_relative() -> None:
    assert allowance_for(0.01, 0.05, 0.9) == pytest.approx(0.045)
    assert allowance_for(0.1, 0.05, 0.9) == 0.1
    assert allowance_for(0.01, 0.5, None) == 0.01
    with pytest.raises(RatchetError, match="must be > 0"):
        allowance_for(0.0, 0.1, 0.0)
    with pytest.raises(RatchetError):
        Guardrail("g", "max", 0.0)


CONTRACT = """[campaign]
name = "x"
[target]
kind = "benchmark"
command = "python3 b.py"
metric = "seconds"
direction = "min"
[scope]
allowed = ["a.py"]
[agent]
kind = "files"
[agent.files]
path = "c/"
"""

EXAMPLES = """[campaign]
name = "x"
[target]
kind = "examples"
examples = "ex.jsonl"
solution = "s.py"
[[target.checks]]
type = "custom"
script = "one.py"
name = "format"
[[target.checks]]
type = "custom"
script = "two.py"
[scope]
allowed = ["s.py"]
[agent]
kind = "files"
[agent.files]
path = "c/"
"""


@pytest.mark.parametrize(("extra", "code", "words"), [
    ('[[gate.guardrails]]\nmetric = "accuracy"\n', "contract.guardrail_allowance", "demands a significant improvement"),
    ('[[gate.guardrails]]\nmetric = "seconds"\nmax_regression = 1.0\n', "contract.guardrail_primary", "target.metric"),
    ('[[gate.guardrails]]\nmetric = "a"\nmax_regression = 1.0\n'
     '[[gate.guardrails]]\nmetric = "a"\nmax_regression = 2.0\n',
     "contract.guardrail_duplicate", "two [[gate.guardrails]]"),
])
def test_a_bad_guardrail_is_a_contract_error_naming_the_key(extra: str, code: str, words: str) -> None:
    with pytest.raises(ContractError) as caught:
        parse_contract(CONTRACT + extra)
    assert caught.value.code == code and words in caught.value.message and caught.value.hint


def test_an_examples_guardrail_names_a_check() -> None:
    ok = parse_contract(EXAMPLES + '[[gate.guardrails]]\nmetric = "format"\nmax_regression = 0.05\n')
    assert ok.gate.guardrails[0].metric == "format" and ok.target.checks[0].name == "format"
    with pytest.raises(ContractError) as caught:
        parse_contract(EXAMPLES + '[[gate.guardrails]]\nmetric = "json"\nmax_regression = 0.05\n')
    assert caught.value.code == "contract.guardrail_check" and "'format'" in caught.value.message
    with pytest.raises(ContractError) as caught:
        parse_contract(EXAMPLES.replace('script = "two.py"', 'script = "two.py"\nname = "format"'))
    assert caught.value.code == "contract.check_name_duplicate"
