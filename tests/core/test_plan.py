"""Plans: determinism, fresh unit streams, job layout, refusals with stable codes."""

from __future__ import annotations

import math
import re

import pytest

from ratchet.core.errors import PlanError
from ratchet.core.plan import Plan, UnitDraw, compile_plan, retry_job, unit_seeds

CHAMP, CAND, CAND256 = "a" * 40, "b" * 40, "c" * 64
TARGET = {"command": "python3 bench.py", "metric": "accuracy", "timeout_s": 600}


def plan(**overrides) -> Plan:
    args = {
        "stage": "trial",
        "attempt": 3,
        "trial": 2,
        "champion_tree": CHAMP,
        "candidate_tree": CAND,
        "target": TARGET,
        "looks": (10, 20, 40),
        "campaign_seed": 0,
        "run_salt": "salt-1",
    }
    return compile_plan(**{**args, **overrides})


def test_same_inputs_give_byte_identical_plans() -> None:
    first, second = plan(), plan(target=dict(reversed(list(TARGET.items()))))
    assert first.canonical_bytes() == second.canonical_bytes()
    assert first.digest == second.digest and first.digest.startswith("sha256:")


def test_any_input_changes_the_digest() -> None:
    base = plan().digest
    for overrides in (
        {"run_salt": "salt-2"},
        {"campaign_seed": 1},
        {"trial": 3},
        {"attempt": 4},
        {"candidate_tree": CAND256},
        {"target": {**TARGET, "timeout_s": 601}},
        {"looks": (10, 40)},
    ):
        assert plan(**overrides).digest != base, overrides


def test_unit_seeds_are_31_bit_distinct_and_deterministic() -> None:
    seeds = unit_seeds(0, "salt", "trial", 1, 500)
    assert len(set(seeds)) == 500 and all(0 <= s < 2**31 for s in seeds)
    assert seeds == unit_seeds(0, "salt", "trial", 1, 500)
    assert unit_seeds(0, "salt", "trial", 1, 10) == seeds[:10]


def test_each_stage_and_trial_draws_a_fresh_stream() -> None:
    streams = [
        set(unit_seeds(0, "salt", stage, trial, 40))
        for stage in ("trial", "confirm", "holdout")
        for trial in (1, 2, 3)
    ]
    for i, a in enumerate(streams):
        for b in streams[i + 1 :]:
            assert not a & b
    assert set(unit_seeds(0, "salt", "trial", 1, 40)).isdisjoint(unit_seeds(0, "other", "trial", 1, 40))


def test_jobs_pair_both_variants_per_unit_in_a_drawn_order() -> None:
    p = plan()
    assert len(p.units) == 40 and len(p.jobs) == 80
    orders = []
    for index, seed in enumerate(p.units):
        pair = p.jobs[2 * index : 2 * index + 2]
        assert {j.variant for j in pair} == {"champion", "candidate"}
        assert [j.order for j in pair] == [0, 1]
        assert all(j.unit == index and j.seed == seed for j in pair)
        assert all(j.tree == (CHAMP if j.variant == "champion" else CAND) for j in pair)
        orders.append(pair[0].variant)
    assert 5 < orders.count("champion") < 35, "run order should be drawn, not fixed"


def test_jobs_know_their_look() -> None:
    p = plan()
    assert [j.look for j in p.jobs[::2]] == [0] * 10 + [1] * 10 + [2] * 20
    assert len(p.jobs_for_look(1)) == 20


def test_job_ids_are_unique_and_filename_safe() -> None:
    ids = [j.job_id for j in plan().jobs]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", i) for i in ids)
    assert "a0003-trial-u000-champion" in ids
    assert set(ids).isdisjoint(j.job_id for j in plan(stage="confirm").jobs)


def test_retry_job_suffix() -> None:
    champion = next(j for j in plan().jobs if j.variant == "champion")
    first = retry_job(champion, 1)
    assert first.job_id == champion.job_id + "-r1"
    assert (first.seed, first.tree, first.unit) == (champion.seed, champion.tree, champion.unit)
    assert retry_job(first, 2).job_id == champion.job_id + "-r2"


@pytest.mark.parametrize("variant,n", [("candidate", 1), ("champion", 0)])
def test_bad_retries_are_refused(variant: str, n: int) -> None:
    job = next(j for j in plan().jobs if j.variant == variant)
    with pytest.raises(PlanError) as err:
        retry_job(job, n)
    assert err.value.code == "plan.bad_retry"


def test_identical_trees_are_allowed_at_plan_level() -> None:
    assert plan(candidate_tree=CHAMP).candidate_tree == CHAMP


def test_holdout_plan_compares_baseline_and_final_champion() -> None:
    p = plan(stage="holdout", attempt=0, trial=0, champion_tree=CHAMP, candidate_tree=CAND256, looks=(30,))
    assert p.stage == "holdout" and len(p.units) == 30
    assert p.jobs[0].job_id.startswith("a0000-holdout-")


def test_round_trip_through_json() -> None:
    p = plan()
    assert Plan.from_json(p.to_json()) == p


def test_tampered_plan_is_refused() -> None:
    data = plan().to_json()
    data["units"][0] += 1
    with pytest.raises(PlanError) as err:
        Plan.from_json(data)
    assert err.value.code == "plan.digest_mismatch"


def test_plan_with_duplicate_units_is_refused() -> None:
    from ratchet.core.canonical import digest

    data = plan().to_json()
    data["units"][1] = data["units"][0]
    data["digest"] = digest({k: v for k, v in data.items() if k != "digest"})
    with pytest.raises(PlanError) as err:
        Plan.from_json(data)
    assert err.value.code == "plan.duplicate_units"


def test_target_is_copied_and_read_only() -> None:
    target = {"command": "x", "env": {"A": "1"}}
    p = plan(target=target)
    target["command"] = "y"
    assert p.target["command"] == "x"
    with pytest.raises(TypeError):
        p.target["command"] = "z"  # type: ignore[index]


@pytest.mark.parametrize(
    "overrides,code",
    [
        ({"looks": ()}, "plan.no_units"),
        ({"looks": (20, 10)}, "plan.bad_looks"),
        ({"looks": (0, 10)}, "plan.bad_looks"),
        ({"looks": (10, 10)}, "plan.bad_looks"),
        ({"champion_tree": ""}, "plan.missing_tree"),
        ({"champion_tree": None}, "plan.missing_tree"),
        ({"candidate_tree": "A" * 40}, "plan.missing_tree"),
        ({"candidate_tree": "a" * 39}, "plan.missing_tree"),
        ({"candidate_tree": "g" * 40}, "plan.missing_tree"),
        ({"stage": "final"}, "plan.bad_stage"),
        ({"run_salt": ""}, "plan.missing_salt"),
        ({"campaign_seed": "0"}, "plan.bad_seed"),
        ({"attempt": -1}, "plan.bad_index"),
        ({"trial": -1}, "plan.bad_index"),
        ({"target": {"timeout_s": math.nan}}, "plan.bad_target"),
        ({"target": {"x": {1, 2}}}, "plan.bad_target"),
        ({"target": ["command"]}, "plan.bad_target"),
        ({"draws": (UnitDraw(1, 0), UnitDraw(1, 1))}, "plan.bad_json"),
    ],
)
def test_refusals_have_stable_codes(overrides: dict, code: str) -> None:
    with pytest.raises(PlanError) as err:
        plan(**overrides)
    assert err.value.code == code


def test_examples_units_are_example_ids_and_keep_their_drawn_order() -> None:
    draws = (UnitDraw(0, 1, "ex-b"), UnitDraw(0, 1, "ex-a"), UnitDraw(0, 0, "ex-c"))
    p = plan(looks=(2, 3), draws=draws)
    assert p.units == ("ex-b", "ex-a", "ex-c")
    assert [j.variant for j in p.jobs if j.unit == 0] == ["candidate", "champion"]
    assert [j.key for j in p.jobs_for_look(1)] == ["ex-c", "ex-c"]
    assert Plan.from_json(p.to_json()) == p
    assert p.gate_seed == p.trial


def test_a_repeated_example_id_is_refused() -> None:
    with pytest.raises(PlanError) as err:
        plan(looks=(2,), draws=(UnitDraw(0, 0, "same"), UnitDraw(0, 0, "same")))
    assert err.value.code == "plan.duplicate_units"
