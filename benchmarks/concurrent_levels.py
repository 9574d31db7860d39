"""Levels when attempts overlap (`agent.workers` = N): the false promotions of campaigns whose
attempts run N at once and are decided in any order.

Campaigns of 20 and 100 attempts at N = 1, 4 and 16 workers. A free worker takes the next attempt
number; the attempt's agent thinks for an exponential time, then the attempt is either decided at
once without jobs (`unspent`: no_change and the like) or plans its trial, which runs for a
log-normal time (sigma 1) and is decided. Shares come from the rule the campaign runs
(`ratchet.core.stats.level_pool.LevelPool`, stepped in event order: a planning claims the credits
released so far, a decision releases its credit), split between the trial and its confirmation as
the campaign splits them (`multiplicity.split_share`). Each trial is decided by the gate's own code
on simulated paired differences, as in gate_sim.py: the default `guarded_sign_flip` (sign_flip_test,
Hall's skew-corrected t, the harmful-tail guard), linear spending over looks 10/20/40
(`sequential.boundaries`, `walk_looks`), then a confirmation in one look of 40 fresh units.

Trials' data: a bank of BANK simulated trials per distribution (40 paired differences for the trial
and 40 fresh ones for its confirmation, p-values computed once); each simulated trial draws its row
at random from its bank, so a cell's rate is that of the bank's empirical distribution (a bank of
40,000 rows pins a level-0.1 acceptance rate to +-0.15 point).

A run is *falsely promoted* when any null candidate is promoted. Null trials are judged after the
schedule, at the shares they were granted on the path where no null was promoted: up to the first
false promotion that path is the run's own, so whether the run promotes any null is exact. Real
gains are judged as they are decided (their promotions pass credits on).

    python benchmarks/concurrent_levels.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import heapq
import itertools
import random
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_sim as g  # noqa: E402
import numpy as np  # noqa: E402
from _common import clopper_pearson, cp, save, table  # noqa: E402

from ratchet.core.gate_design import confirmation_looks  # noqa: E402
from ratchet.core.stats.level_pool import LevelPool  # noqa: E402
from ratchet.core.stats.multiplicity import split_share  # noqa: E402
from ratchet.core.stats.sequential import ACCEPTED, walk_looks  # noqa: E402

ALPHA = g.ALPHA
ATTEMPTS = (20, 100)
WORKERS = (1, 4, 16)
RUNS, QUICK_RUNS = 2000, 200
BANK, QUICK_BANK = 40_000, 4_000
GAIN = 1.0  # a real gain, in SDs of d
SEED = 31


@dataclass(frozen=True)
class Scenario:
    """How a campaign's attempts behave. unspent: P(an attempt is decided without jobs); gain: P(its
    candidate is a real gain of GAIN SDs of d), else a null of `null`'s bank; think / think_unspent:
    mean agent time before the trial is planned / before the attempt is decided without jobs; trial:
    median duration of a trial (log-normal, sigma 1); slow: worker 1's times multiplied by it."""

    title: str
    null: str = "gaussian"
    unspent: float = 0.0
    gain: float = 0.0
    think: float = 1.0
    think_unspent: float = 1.0
    trial: float = 3.0
    slow: float = 1.0


SCENARIOS = {
    "aa": Scenario("A/A: every candidate a Gaussian null, every attempt a trial"),
    "aa-unspent": Scenario("A/A, 40% of attempts decided without jobs (their credits pass on)", unspent=0.4),
    "skewed": Scenario("A/A, skewed nulls (e^0.5 - lognormal(0, 1), left-skewed), 40% without jobs",
                       null="lognormal-left", unspent=0.4),
    "pile-up": Scenario("adversarial pile-up: 80% decided without jobs at once (mean 0.02), so each trial "
                        "claims the credits piled up while its agent thought", unspent=0.8, think_unspent=0.02),
    "mixture": Scenario("mixed: 30% real gains (1 SD of d), 20% without jobs, 50% nulls: true promotions "
                        "pass their shares to nulls", gain=0.3, unspent=0.2),
    "slow-worker": Scenario("mixed, one slow worker: worker 1 thinks and measures 20x longer, its decisions "
                            "landing late; 30% gains, 30% without jobs", gain=0.3, unspent=0.3, slow=20.0),
}
BROKEN = {"aa-unspent", "pile-up", "mixture"}
"""Scenarios also run under a broken rule (`Reusing`: a planning does not claim the credits, so every
later planning uses them again): the simulation must see it exceed alpha."""


class Reusing(LevelPool):
    """A deliberately broken rule: every planning gets its base weight plus every credit released so
    far, and no credit is ever used up (a share capped at 0.99: a level must be below 1)."""

    def record(self, step: object) -> None:
        pool = self.pool
        super().record(step)
        if isinstance(step, tuple) and step[0] == "planned":
            self.pool = pool
            self.shares[step[1]] = min(self.shares[step[1]], 0.99)


RULES: dict[str, Callable[[int], LevelPool]] = {
    "level_pool": lambda attempts: LevelPool(ALPHA, "campaign", attempts),
    "broken: credits reused": lambda attempts: Reusing(ALPHA, "campaign", attempts),
}


# -- the gate on banked trials --------------------------------------------------------------------


@dataclass(frozen=True)
class Bank:
    """Simulated trials of one distribution: `trial` at looks 10/20/40, `conf` the confirmation's
    one look of 40 fresh units (gate_sim.LookPValues rows)."""

    trial: g.LookPValues
    conf: g.LookPValues

    @property
    def size(self) -> int:
        return int(self.trial.p.shape[0])


def sample_d(rng: np.random.Generator, family: str, rows: int, effect: float = 0.0) -> np.ndarray:
    """(rows, 40) paired differences: Gaussian (gate_sim.paired_d, SD 1) or a skewed_nulls family
    (mean 0), shifted by `effect`."""
    if family == "gaussian":
        return g.paired_d(rng, np.full(rows, effect), g.FIXED_N, "gaussian")
    from skewed_nulls import FAMILIES

    return FAMILIES[family][2](rng, (rows, g.FIXED_N)) + effect


def make_bank(rng: np.random.Generator, family: str, rows: int, effect: float = 0.0) -> Bank:
    """A bank of `rows` trials of `family` (+ effect), p-values by the gate's tests."""
    trial = g.LookPValues(sample_d(rng, family, rows, effect), "continuous", fixed=False)
    conf = g.LookPValues(sample_d(rng, family, rows, effect), "continuous", False,
                         confirmation_looks(g.LOOKS, g.LOOKS[-1]))
    return Bank(trial, conf)


@functools.cache
def increments(level: float, looks: tuple[int, ...]) -> tuple[float, ...]:
    """Each look's threshold at `level` (stats.sequential.boundaries, linear spending)."""
    return tuple(g.thresholds(level, looks, "continuous"))


def _walk(looks: g.LookPValues, rows: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """accepted per row, each at its own level: walk_looks with the guarded sign-flip's p-values
    (the larger of the sign-flip's and Hall's t's) and the harmful-tail guard."""
    marks = np.array([increments(float(level), looks.looks) for level in levels]).reshape(len(rows), -1)
    p = np.maximum(looks.p[rows], looks.skew_p[rows])
    _, outcome = walk_looks(p, looks.est[rows], 0.0, list(marks.T), looks.guard[rows])
    return outcome == ACCEPTED


def promoted(bank: Bank, rows: np.ndarray, shares: list[float]) -> np.ndarray:
    """Whether each banked trial `rows[i]` is promoted at share `shares[i]`: its trial at the share's
    trial level, then, if accepted, its confirmation at the confirmation level (split_share)."""
    out = np.zeros(len(rows), dtype=bool)
    if not len(rows):
        return out
    split = [split_share(s) for s in shares]
    trial = np.array([s.trial for s in split])
    conf = np.array([s.confirm for s in split])
    accepted = _walk(bank.trial, rows, trial)
    if accepted.any():
        out[accepted] = _walk(bank.conf, rows[accepted], conf[accepted])
    return out


# -- the schedule ---------------------------------------------------------------------------------


def campaign(rnd: random.Random, sc: Scenario, attempts: int, workers: int, pool: LevelPool
             ) -> Generator[float, bool, list[float]]:
    """One campaign's schedule, in event order. Yields the share of each real gain when it is
    decided and is sent whether it was promoted; returns the shares of its null trials (each
    decided not_promoted: the path where no null is promoted)."""
    heap: list[tuple[float, int, str, int, str, int]] = []
    order = itertools.count()
    numbers = itertools.count(1)
    nulls: list[float] = []

    def start(now: float, worker: int) -> None:
        number = next(numbers)
        if number > attempts:
            return
        u = rnd.random()
        kind = "unspent" if u < sc.unspent else "gain" if u < sc.unspent + sc.gain else "null"
        slow = sc.slow if worker == 0 else 1.0
        think = rnd.expovariate(1.0 / (sc.think_unspent if kind == "unspent" else sc.think)) * slow
        heapq.heappush(heap, (now + think, next(order), "submitted", number, kind, worker))

    for worker in range(workers):
        start(0.0, worker)
    while heap:
        now, _, event, number, kind, worker = heapq.heappop(heap)
        if event == "submitted" and kind == "unspent":
            pool.record(("decided", number, "unspent"))
            start(now, worker)
        elif event == "submitted":
            pool.record(("planned", number))
            slow = sc.slow if worker == 0 else 1.0
            heapq.heappush(heap, (now + sc.trial * rnd.lognormvariate(0.0, 1.0) * slow, next(order), "decided",
                                  number, kind, worker))
        else:
            share = pool.shares[number]
            if kind == "gain":
                won = yield share
                pool.record(("decided", number, "promoted" if won else "not_promoted"))
            else:
                nulls.append(share)
                pool.record(("decided", number, "not_promoted"))
            start(now, worker)
    return nulls


@dataclass(frozen=True)
class Cell:
    """One cell's result: runs, runs with a false promotion, mean null trials per run, mean true
    promotions per run, the mean of each run's largest null share."""

    runs: int
    false_runs: int
    null_trials: float
    true_promotions: float
    largest_share: float


def run_cell(sc: Scenario, attempts: int, workers: int, runs: int, banks: dict[str, Bank], seed: int,
             rule: str = "level_pool") -> Cell:
    """`runs` campaigns of scenario `sc`; every run's gains judged together as they come due."""
    rng = np.random.default_rng(seed)
    rnd = random.Random(seed)
    gens = [campaign(random.Random(rnd.random()), sc, attempts, workers, RULES[rule](attempts))
            for _ in range(runs)]
    pending: dict[int, float] = {}
    nulls: list[list[float]] = [[] for _ in range(runs)]
    wins = 0

    def advance(i: int, value: bool | None) -> None:
        try:
            pending[i] = gens[i].send(value)  # type: ignore[arg-type]
        except StopIteration as stop:
            nulls[i] = stop.value

    for i in range(runs):
        advance(i, None)
    while pending:
        due = list(pending)
        shares = [pending.pop(i) for i in due]
        won = promoted(banks["gain"], rng.integers(0, banks["gain"].size, len(due)), shares)
        wins += int(won.sum())
        for i, w in zip(due, won, strict=True):
            advance(i, bool(w))
    owner = np.repeat(np.arange(runs), [len(n) for n in nulls])
    flat = [s for n in nulls for s in n]
    bank = banks[sc.null]
    false = promoted(bank, rng.integers(0, bank.size, len(flat)), flat)
    false_runs = len(np.unique(owner[false]))
    largest = float(np.mean([max(n) if n else 0.0 for n in nulls]))
    return Cell(runs, false_runs, len(flat) / runs, wins / runs, largest)


def make_banks(rng: np.random.Generator, rows: int, scenarios: list[Scenario]) -> dict[str, Bank]:
    """The banks the scenarios read: their null families and the real gains (if any has gains)."""
    banks = {family: make_bank(rng, family, rows) for family in dict.fromkeys(sc.null for sc in scenarios)}
    banks["gain"] = make_bank(rng, "gaussian", rows if any(sc.gain for sc in scenarios) else 16, GAIN)
    return banks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer runs and a 10x smaller bank (smoke test)")
    args = parser.parse_args()
    runs, bank_rows = (QUICK_RUNS, QUICK_BANK) if args.quick else (RUNS, BANK)
    start = time.perf_counter()
    banks = make_banks(np.random.default_rng(SEED), bank_rows, list(SCENARIOS.values()))
    bank_s = time.perf_counter() - start
    rows, broken, missed = [], [], []
    seeds = itertools.count(SEED * 1000)
    for name, sc in SCENARIOS.items():
        for attempts in ATTEMPTS:
            for workers in WORKERS:
                cell = run_cell(sc, attempts, workers, runs, banks, next(seeds))
                low, _ = clopper_pearson(cell.false_runs, cell.runs)
                met = low <= ALPHA
                if not met:
                    missed.append(f"{name} T={attempts} N={workers}")
                rows.append([name, str(attempts), str(workers), f"{cell.runs:,}", str(cell.false_runs),
                             cp(cell.false_runs, cell.runs), f"{100 * ALPHA:.0f}", f"{cell.null_trials:.1f}",
                             f"{cell.true_promotions:.2f}", f"{cell.largest_share:.4f}", "met" if met else "MISSED"])
            if name in BROKEN:
                cell = run_cell(sc, attempts, 4, runs, banks, next(seeds), rule="broken: credits reused")
                low, _ = clopper_pearson(cell.false_runs, cell.runs)
                broken.append([name, str(attempts), "4", f"{cell.runs:,}", str(cell.false_runs),
                               cp(cell.false_runs, cell.runs), f"{100 * ALPHA:.0f}",
                               "exceeds alpha" if low > ALPHA else "not detected"])
    head = (
        "Every run is a campaign whose attempts overlap: N workers, attempts numbered in start order, "
        "decisions recorded in any order. A run is falsely promoted when it promotes any null candidate "
        "(true mean gain 0 over the champion it faced). Shares of alpha: `level_pool` (docs/gate.md, "
        "\"Several attempts at once\"); the trial and its confirmation each at the share's square root; "
        "the guarded sign-flip, looks 10/20/40, linear spending, confirmation on 40 fresh units "
        f"(gate_sim.py). alpha = {ALPHA}. Check: the lower end of the 95% Clopper-Pearson interval of the "
        "false-promotion rate is <= alpha (tolerance: a rate is flagged only when the simulation shows it "
        "above alpha at the 2.5% one-sided level).\n\n"
        + "\n".join(f"- `{name}`: {sc.title}" for name, sc in SCENARIOS.items())
        + "\n\nColumns: *null trials / run* (trials of null candidates), *true promotions / run* (real gains "
        "promoted), *largest null share*: the mean over runs of the largest share a null trial was "
        "granted (the pile-up concentrates credits on few trials).\n\n"
        f"## Target: P(run promotes any null) <= alpha = {ALPHA} at every N\n\n"
        + table(["scenario", "attempts", "workers", "runs", "falsely promoted runs",
                 "P(run promotes a null) % [95% CP]", "alpha %", "null trials / run", "true promotions / run",
                 "largest null share", "check"], rows)
        + ("\nAll cells met.\n" if not missed else f"\nMISSED: {', '.join(missed)}\n")
        + "\n## The simulation can fail: a broken rule that reuses credits\n\n"
        "The same schedules (4 workers) with a rule that never uses a credit up: every planning adds every "
        "credit released so far.\n\n"
        + table(["scenario", "attempts", "workers", "runs", "falsely promoted runs",
                 "P(run promotes a null) % [95% CP]", "alpha %", "check"], broken)
    )
    foot = (f"\nSimulation: seed {SEED}, {runs:,} runs per cell, banks of {bank_rows:,} trials per distribution "
            f"(built in {bank_s:.0f} s), {time.perf_counter() - start:.0f} s in all.\n")
    save("concurrent_levels" + ("-quick" if args.quick else ""), "Levels when attempts overlap: false promotions "
         "at N workers", head + foot)


if __name__ == "__main__":
    main()
