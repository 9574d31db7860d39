"""The shares of attempts that overlap (stats/level_pool.py): exactly today's online fallback on every
sequential ledger, a credit used only after its decision is recorded and by one planning only, and
every base weight ending in exactly one place on any interleaving."""

from __future__ import annotations

import math
import random

import pytest

from ratchet.core.errors import RatchetError
from ratchet.core.stats.level_pool import LevelStep, levels_at_planning, share_at_planning, shares_in_order
from ratchet.core.stats.multiplicity import LEVEL_OUTCOMES, LevelOutcome, attempt_level, attempt_levels, campaign_weight

ALPHA, T = 0.05, 20


def sequential(outcomes: list[LevelOutcome], planned: list[bool]) -> list[LevelStep]:
    """Each attempt planned (when `planned`) then decided before the next starts."""
    steps: list[LevelStep] = []
    for t, (outcome, plans) in enumerate(zip(outcomes, planned, strict=True), start=1):
        if plans:
            steps.append(("planned", t))
        steps.append(("decided", t, outcome))
    return steps


@pytest.mark.parametrize("seed", range(40))
def test_a_sequential_ledger_gets_todays_levels_float_for_float(seed: int) -> None:
    rng = random.Random(seed)
    attempts = rng.choice([1, 3, 20, 100])
    n = rng.randint(1, attempts + 3)  # beyond max_attempts too: base 0, credits still carried
    outcomes: list[LevelOutcome] = [rng.choice(LEVEL_OUTCOMES) for _ in range(n)]
    # an unspent attempt planned a trial only under gate rules 1 (no unit completed); the others did
    planned = [o != "unspent" or rng.random() < 0.3 for o in outcomes]
    steps = sequential(outcomes, planned)
    for confirm in (True, False):
        for t in range(1, n + 1):
            prefix = steps[: sum(1 for s in steps if s[1] < t)]
            got = levels_at_planning(ALPHA, "campaign", attempts, t, prefix, confirm)
            assert got == attempt_levels(ALPHA, "campaign", t, attempts, outcomes[: t - 1], confirm)
    shares = shares_in_order(ALPHA, "campaign", attempts, steps)
    for t in shares:
        assert shares[t] == attempt_level(ALPHA, "campaign", t, attempts, outcomes[: t - 1])


def test_a_credit_pending_at_a_planning_is_not_used() -> None:
    w = [ALPHA * campaign_weight(t, T) for t in range(1, 6)]
    # 1 planned; 2 planned while 1 runs; 1 promoted; 3 planned: 1's share passes to 3, not to 2
    steps: list[LevelStep] = [("planned", 1), ("planned", 2), ("decided", 1, "promoted"), ("planned", 3)]
    shares = shares_in_order(ALPHA, "campaign", T, steps)
    assert shares == {1: w[0], 2: w[1], 3: w[2] + w[0]}
    # the old rule read "attempt 2's predecessor promoted", a decision recorded after 2's planning
    assert attempt_level(ALPHA, "campaign", 2, T, ["promoted"]) == w[1] + w[0] != shares[2]


def test_a_credit_passes_to_one_planning_only() -> None:
    w = [ALPHA * campaign_weight(t, T) for t in range(1, 8)]
    # 1 and 2 decided unspent (no_change) while 3 and 4 run; 5 claims both credits, 6 none of them
    steps: list[LevelStep] = [("planned", 3), ("planned", 4), ("decided", 1, "unspent"), ("decided", 2, "unspent"),
                              ("planned", 5), ("planned", 6), ("decided", 3, "not_promoted"),
                              ("decided", 4, "promoted"), ("planned", 7)]
    shares = shares_in_order(ALPHA, "campaign", T, steps)
    assert shares[5] == pytest.approx(w[4] + w[0] + w[1])
    assert shares[6] == w[5]
    assert shares[7] == w[6] + w[3]  # 4's promotion: its whole share (its base only) to the next planning
    assert share_at_planning(ALPHA, "campaign", T, 8, steps) == ALPHA * campaign_weight(8, T)
    assert share_at_planning(ALPHA, "campaign", T, 5, steps) == shares[5]  # fixed at its planning


def test_a_higher_attempt_decided_first_passes_its_credit_to_a_lower_one_planned_later() -> None:
    w = [ALPHA * campaign_weight(t, T) for t in range(1, 4)]
    steps: list[LevelStep] = [("decided", 2, "unspent"), ("planned", 1), ("planned", 3)]
    assert shares_in_order(ALPHA, "campaign", T, steps) == {1: w[0] + w[1], 3: w[2]}


@pytest.mark.parametrize("seed", range(200))
def test_on_any_interleaving_every_base_weight_ends_in_exactly_one_place(seed: int) -> None:
    """Conservation, the heart of the argument: the shares of the attempts that keep theirs (not
    promoted, or still running) plus the credit released and not yet claimed sum to the base weights
    of the attempts seen; so no credit is used twice and none is made up."""
    rng = random.Random(seed)
    attempts = rng.randint(1, 30)
    running: list[int] = []
    steps: list[LevelStep] = []
    outcome: dict[int, LevelOutcome] = {}
    nxt = 1
    while nxt <= attempts or running:
        if nxt <= attempts and (not running or rng.random() < 0.5):
            if rng.random() < 0.3:  # decided without a trial (no_change, a give-up)
                steps.append(("decided", nxt, "unspent"))
                outcome[nxt] = "unspent"
            else:
                steps.append(("planned", nxt))
                running.append(nxt)
            nxt += 1
        else:
            t = running.pop(rng.randrange(len(running)))
            outcome[t] = rng.choice(LEVEL_OUTCOMES)
            steps.append(("decided", t, outcome[t]))
        cut = rng.randint(0, len(steps))
        shares = shares_in_order(ALPHA, "campaign", T, steps[:cut])
        seen = {s[1] for s in steps[:cut]}
        decided = {s[1]: s[2] for s in steps[:cut] if s[0] == "decided"}
        kept = sum(v for a, v in shares.items() if decided.get(a, "not_promoted") == "not_promoted")
        unclaimed = share_at_planning(ALPHA, "campaign", T, 10_000, steps[:cut])  # base 0 beyond T
        assert kept + unclaimed == pytest.approx(sum(ALPHA * campaign_weight(a, T) for a in seen), rel=1e-12)
        assert kept + unclaimed <= ALPHA * (1 + 1e-12)


def test_trial_multiplicity_grants_alpha_to_every_attempt() -> None:
    steps: list[LevelStep] = [("decided", 1, "unspent"), ("planned", 2), ("decided", 2, "promoted"), ("planned", 3)]
    assert shares_in_order(ALPHA, "trial", T, steps) == {2: ALPHA, 3: ALPHA}
    assert levels_at_planning(ALPHA, "trial", T, 4, steps).trial == pytest.approx(math.sqrt(ALPHA))


@pytest.mark.parametrize("steps", [
    [("planned", 1), ("planned", 1)],
    [("decided", 1, "unspent"), ("decided", 1, "promoted")],
    [("decided", 1, "unspent"), ("planned", 1)],
    [("planned", 0)],
    [("planned", True)],
    [("decided", 1, "won")],
    [("started", 1)],
    ["planned"],
])
def test_a_malformed_timeline_is_refused(steps: list[object]) -> None:
    with pytest.raises(RatchetError) as err:
        shares_in_order(ALPHA, "campaign", T, steps)  # type: ignore[arg-type]
    assert err.value.code == "gate.bad_history"
