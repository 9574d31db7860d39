"""Levels when attempts overlap, simulated (benchmarks/concurrent_levels.py, small): A/A campaigns of
20 attempts at 4 workers, a third of attempts decided without jobs (their credits pass on), each
trial judged by the gate's own code. The rule keeps P(run promotes a null) within alpha; the same
simulation catches a broken rule that reuses credits; and one worker is today's rule exactly.
Tolerance: the 95% Clopper-Pearson interval of the rate must reach down to alpha (the rule), or lie
wholly above it (the broken rule)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import clopper_pearson

from ratchet.core.stats.level_pool import LevelPool
from ratchet.core.stats.multiplicity import LevelOutcome, attempt_level

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
RUNS, BANK, ATTEMPTS, WORKERS = 600, 3000, 20, 4


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import concurrent_levels

        yield concurrent_levels
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def banks(bench):
    return bench.make_banks(np.random.default_rng(5), BANK, [bench.SCENARIOS["aa-unspent"]])


def test_overlapping_aa_campaigns_stay_within_alpha_and_a_rule_reusing_credits_does_not(bench, banks) -> None:
    sc = bench.SCENARIOS["aa-unspent"]
    cell = bench.run_cell(sc, ATTEMPTS, WORKERS, RUNS, banks, seed=11)
    low, high = clopper_pearson(cell.false_runs, cell.runs)
    print(f"level_pool: {cell.false_runs}/{cell.runs} runs falsely promoted [{low:.4f}, {high:.4f}]")
    assert low <= bench.ALPHA, f"P(run promotes a null) above alpha: {cell}"
    assert cell.false_runs > 0, "no false promotion at all: the levels are not reached (or not simulated)"
    broken = bench.run_cell(sc, ATTEMPTS, WORKERS, RUNS, banks, seed=11, rule="broken: credits reused")
    low, high = clopper_pearson(broken.false_runs, broken.runs)
    print(f"broken: {broken.false_runs}/{broken.runs} runs falsely promoted [{low:.4f}, {high:.4f}]")
    assert low > bench.ALPHA, f"the simulation does not see a rule that reuses credits: {broken}"


class Recording(LevelPool):
    """LevelPool keeping the steps it was given."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.steps: list[tuple] = []

    def record(self, step: object) -> None:
        super().record(step)
        assert isinstance(step, tuple)
        self.steps.append(step)


@pytest.mark.parametrize("workers", [1, 4])
def test_one_worker_is_todays_rule_and_several_overlap(bench, workers: int) -> None:
    sc = bench.SCENARIOS["mixture"]
    overlapped = 0
    for seed in range(20):
        pool = Recording(bench.ALPHA, "campaign", ATTEMPTS)
        gen = bench.campaign(random.Random(seed), sc, ATTEMPTS, workers, pool)
        flip = random.Random(seed + 100)
        try:
            share = next(gen)
            while True:
                share = gen.send(flip.random() < 0.8)  # a real gain promoted 4 times in 5
                assert share > 0
        except StopIteration:
            pass
        outcome: dict[int, LevelOutcome] = {s[1]: s[2] for s in pool.steps if s[0] == "decided"}
        assert sorted(outcome) == list(range(1, ATTEMPTS + 1))
        order = [s[1] for s in pool.steps]
        if workers == 1:
            assert all(order[i] <= order[i + 1] for i in range(len(order) - 1)), "one worker overlapped"
            for t, share in pool.shares.items():
                history = [outcome[a] for a in range(1, t)]
                assert share == attempt_level(bench.ALPHA, "campaign", t, ATTEMPTS, history)
        overlapped += any(order[i] > order[i + 1] for i in range(len(order) - 1))
    assert overlapped == (0 if workers == 1 else 20), f"{overlapped} of 20 schedules overlap at {workers} workers"
