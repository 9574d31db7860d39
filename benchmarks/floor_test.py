"""The floor test (gate.test = "betting", gate rules 2) against the rules-1 bets over the range.

1. Units needed: paired differences of an accuracy in [0, 1] with a true gain of 0.005 and SD(d)
   0.01, 0.015, 0.02 (Gaussian, clipped to the floor and to 1), level 0.01, margin 0. Before: the
   rules-1 betting test over [-1, 1] (bets capped at 0.75 / mu0). After: the floor test with the
   floor -1 (what metric_range = [0, 1] gives) and -0.1 (gate.max_unit_loss = 0.1). For each:
   the median units at which the anytime p-value first falls to the level, and the share of trials
   accepted by a single look at n units (for the rules-1 test its bets are tuned to that horizon).
2. Type-I error of the floor test at the boundary of the null (mean exactly the margin) for
   distributions that touch the floor: the share of trials whose p-value ever falls to the level
   within 1,000 units (the event Ville's inequality bounds), with a 95% Clopper-Pearson interval.

    python benchmarks/floor_test.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import cp, save, table  # noqa: E402
from scipy.optimize import brentq  # noqa: E402
from scipy.stats import norm  # noqa: E402

from ratchet.core.stats.betting import BET_CAP, _bets  # noqa: E402
from ratchet.core.stats.floor import FLOOR_BET_CAP, agrapa_bets, units_needed  # noqa: E402

SEED = 20
GAIN, SDS, POWER_LEVEL = 0.005, (0.01, 0.015, 0.02), 0.01
FLOORS = (-1.0, -0.1)
HORIZON = 2_000  # units simulated per trial (the rules-1 bets are tuned to it for the median)
FIXED = (150, 200, 300, 800, 1000, 1100, 1300, 1500)
POWER_TRIALS, QUICK_POWER_TRIALS = 2_000, 200
NULL_TRIALS, QUICK_NULL_TRIALS, NULL_UNITS = 4_000, 400, 1_000
NULL_LEVELS = (0.05, 0.01)
MARGIN = 0.0



def floor_log_wealth(d: np.ndarray, floor: float, margin: float = MARGIN) -> np.ndarray:
    """log K_t of the floor test at every unit (trials, n): the gate's floor_test, unrolled."""
    bets = np.minimum(agrapa_bets(d, margin, floor), FLOOR_BET_CAP / (margin - floor))
    return np.cumsum(np.log1p(bets * (d - margin)), axis=1)


def range_log_wealth(d: np.ndarray, level: float, horizon: int) -> np.ndarray:
    """log K_t of the rules-1 betting test over [-1, 1] (betting.betting_test, unrolled)."""
    x, mu0 = (d + 1.0) / 2.0, (MARGIN + 1.0) / 2.0
    bets = np.minimum(_bets(x, level, horizon), BET_CAP / mu0)
    return np.cumsum(np.log1p(bets * (x - mu0)), axis=1)


def first_crossing(log_wealth: np.ndarray, level: float) -> np.ndarray:
    """Units at which max K first reaches 1 / level, per trial (inf when never)."""
    hit = log_wealth >= math.log(1.0 / level)
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1.0, np.inf)


def median_text(stops: np.ndarray) -> str:
    med = float(np.median(stops))
    return f"> {HORIZON:,}" if math.isinf(med) else f"{med:,.0f}"


def power_rows(rng: np.random.Generator, trials: int) -> list[list[object]]:
    rows = []
    for sd in SDS:
        raw = rng.normal(GAIN, sd, (trials, HORIZON))
        d = np.clip(raw, -1.0, 1.0)
        before = first_crossing(range_log_wealth(d, POWER_LEVEL, HORIZON), POWER_LEVEL)
        fixed_before = [float(np.mean(range_log_wealth(d[:, :n], POWER_LEVEL, n).max(axis=1)
                                      >= math.log(1 / POWER_LEVEL))) for n in FIXED]
        rows.append([f"{sd:g}", "before: range bets over [-1, 1] (rules 1)", "-", median_text(before),
                     *[f"{100 * v:.1f}" for v in fixed_before]])
        for floor in FLOORS:
            stops = first_crossing(floor_log_wealth(np.clip(raw, floor, 1.0), floor), POWER_LEVEL)
            plan = units_needed(GAIN, sd, floor, POWER_LEVEL)
            rows.append([f"{sd:g}", f"after: floor test, floor {floor:g}", f"{plan:,.0f}", median_text(stops),
                         *[f"{100 * float(np.mean(stops <= n)):.1f}" for n in FIXED]])
    return rows


def clipped_gaussian(rng: np.random.Generator, shape: tuple[int, int], floor: float, sd: float) -> np.ndarray:
    """N(mu, sd) clipped at the floor, mu chosen so the mean is exactly MARGIN."""
    def gap(mu: float) -> float:
        a = (floor - mu) / sd
        return floor * norm.cdf(a) + mu * norm.sf(a) + sd * norm.pdf(a) - MARGIN
    mu = brentq(gap, MARGIN - abs(floor) - 10 * sd, MARGIN + 10 * sd)
    return np.maximum(rng.normal(mu, sd, shape), floor)


NULLS = {
    "two-point: -M w.p. 0.05, else 0.05 M / 0.95": lambda r, s, f: np.where(
        r.random(s) < 0.05, f, (MARGIN - 0.05 * f) / 0.95),
    "two-point: -M or +M, w.p. 1/2 each": lambda r, s, f: np.where(r.random(s) < 0.5, f, -f),
    "skewed: -M + M Exp(1)": lambda r, s, f: f + (MARGIN - f) * r.exponential(1.0, s),
    "Gaussian, SD M / 2, clipped at -M": lambda r, s, f: clipped_gaussian(r, s, f, -f / 2),
    "Gaussian, SD M / 10, clipped at -M": lambda r, s, f: clipped_gaussian(r, s, f, -f / 10),
}


def null_rows(rng: np.random.Generator, trials: int) -> tuple[list[list[object]], int]:
    rows, worst = [], 0
    for floor in FLOORS:
        for name, draw in NULLS.items():
            d = draw(rng, (trials, NULL_UNITS), floor)
            peak = floor_log_wealth(d, floor).max(axis=1)
            looks = floor_log_wealth(d[:, :40], floor)[:, [9, 19, 39]].max(axis=1)
            cells = []
            for level in NULL_LEVELS:
                ever = int(np.sum(peak >= math.log(1 / level)))
                cells += [cp(ever, trials), cp(int(np.sum(looks >= math.log(1 / level))), trials)]
                worst = max(worst, ever * 100 // trials)
            rows.append([f"{floor:g}", name, f"{float(d.mean()):+.4f}", *cells])
    return rows, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer trials (smoke test)")
    args = parser.parse_args()
    power_trials = QUICK_POWER_TRIALS if args.quick else POWER_TRIALS
    null_trials = QUICK_NULL_TRIALS if args.quick else NULL_TRIALS
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    power = power_rows(rng, power_trials)
    nulls, _ = null_rows(rng, null_trials)
    took = time.perf_counter() - start
    body = [
        f"Accuracy in [0, 1], true gain {GAIN}, level {POWER_LEVEL}, margin 0; {power_trials:,} trials of "
        f"{HORIZON:,} units per SD. *median units*: where the anytime p-value first falls to the level "
        "(the rules-1 bets tuned to a horizon of 2,000); *accepted at n*: a single look at n units (the "
        "rules-1 bets tuned to n). *plan*: `floor.units_needed`, ln(1/level) / the growth per unit once "
        "the estimates settle.\n\n",
        table(["SD(d)", "test", "plan", "median units", *[f"% accepted at {n:,}" for n in FIXED]], power),
        f"\nType-I error of the floor test at the boundary (mean = margin = 0), {null_trials:,} trials "
        "each, % [95% Clopper-Pearson]; M = max_unit_loss = -floor. *ever*: the p-value falls to the level "
        f"at any of {NULL_UNITS:,} units; *looks*: at looks 10, 20, 40 (the gate's default units). "
        "Ville's inequality bounds both by the level.\n\n",
        table(["floor", "null", "mean d", *[f"{w} at {lv}" for lv in NULL_LEVELS for w in ("ever", "looks")]],
              nulls),
        f"\nRun time {took:.0f} s.\n",
    ]
    save("floor_test-quick" if args.quick else "floor_test",
         "The floor test against the range bets: units needed and type-I error", "".join(body))


if __name__ == "__main__":
    main()
