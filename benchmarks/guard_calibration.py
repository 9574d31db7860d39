"""The harmful-tail guard, rules 1 (6 robust SDs at every n) against rules 2 (a threshold c(n) on the
worst loss against the larger of the robust SD and the upper tail; `ratchet.core.stats.tail_guard`).

Three tables, both rules judging the same draws through the gate's own functions
(`ratchet.core.gate.look_test`: LookTest.guard and LookTest.p_value; `look_boundaries`;
`stats.sequential.walk_looks`), with the guard off (`sign_flip`) as the reference:
- false alarms per look under Gaussian differences at n = 3..10, 16, 20, 40, 80, 160, with two-sided
  95% Clopper-Pearson intervals (80 and 160 are not tabled in TAIL_THRESHOLDS: they check the step
  rule between tabled n);
- how often the guard fires at the looks 10, 20 and 40 of a 1 SD gain under four noises, and the
  power at that gain: trial 1 of 20 under `campaign` (levels from
  `multiplicity.attempt_levels(0.05, "campaign", 1, 20, [])`), looks 10/20/40 with linear spending,
  then the confirmation on 40 fresh units;
- the lopsided nulls' promotion rate per attempt (the same attempt), the case the guard exists for.

Noises of d (SD 1, or scale 1 for t(2)): Gaussian; bimodal, an equal mixture of N(-2, 1) and N(2, 1)
divided by sqrt(5); tight bimodal, the same with modes N(+-2, 0.3^2), divided by sqrt(4.09); mode
switch, N(0, 1) w.p. 0.9 and N(0, 5^2) w.p. 0.1, divided by sqrt(3.4); t(2), the difference of two
t(2) run noises times 1/sqrt(2) (`gate_sim.paired_d`). Lopsided nulls: +1 w.p. 1 - q, -(1 - q)/q
w.p. q, plus N(0, 1) noise truncated to +-4 (`gate_sim.LOPSIDED`), q = 0.05, 0.10.

    python benchmarks/guard_calibration.py [--quick]
    python benchmarks/guard_calibration.py --table   # re-simulate tail_guard.TAIL_THRESHOLDS (minutes)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_sim as g  # noqa: E402  (sets one BLAS thread per process before numpy loads)
import numpy as np  # noqa: E402
from _common import clopper_pearson, save, table  # noqa: E402

from ratchet.core.gate import GateSettings, look_boundaries, look_test  # noqa: E402
from ratchet.core.stats.multiplicity import attempt_levels  # noqa: E402
from ratchet.core.stats.sequential import ACCEPTED, walk_looks  # noqa: E402
from ratchet.core.stats.tail_guard import (  # noqa: E402
    TAIL_GUARD_DESIGN_RATE,
    TAIL_GUARD_FALSE_ALARM,
    TAIL_THRESHOLDS,
    tail_statistic,
)

SEED = 31
FALSE_ALARM_NS = (3, 4, 5, 6, 7, 8, 9, 10, 16, 20, 40, 80, 160)
FALSE_ALARM_LOOKS = 200_000
"""Gaussian looks per n: a rate of 5e-4 gets a 95% upper bound near 6e-4, well below 1e-3."""
TRIALS = 10_000
"""Trials per noise: the SE of a power near 95% is 0.2 point, of a promotion rate near 5% 0.2 point."""
QUICK_FACTOR = 10
EFFECT = 1.0  # SD of d
LOOKS, CONFIRM_UNITS = g.LOOKS, g.LOOKS[-1]
LEVELS = attempt_levels(g.ALPHA, "campaign", 1, 20, [])
DESIGNS = {
    "no guard (`sign_flip`)": ("sign_flip", 2),
    "rules 1: 6 robust SDs": ("guarded_sign_flip", 1),
    "rules 2: c(n), lower tail against IQR and upper tail": ("guarded_sign_flip", 2),
}
NOISES = ("gaussian", "bimodal", "tight bimodal", "mode switch", "t2")
LOPSIDED = {"lopsided, q = 0.05": "left-5%", "lopsided, q = 0.10": "left-10%"}

TABLE_SEED = 20261202
TABLE_NS = (*range(3, 41), 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
TABLE_LOOKS = {"small": 1_000_000, "large": 400_000}  # n <= 40 / beyond
CHUNK_VALUES = 4_000_000  # draws per block (memory)



def gaussian_blocks(rng: np.random.Generator, looks: int, n: int):
    """Blocks of standard Gaussian looks, (rows, n), `looks` rows in all."""
    rows = max(1, CHUNK_VALUES // n)
    for start in range(0, looks, rows):
        yield rng.standard_normal((min(rows, looks - start), n))


def settings(level: float, looks: tuple[int, ...], test: str, rules: int) -> GateSettings:
    return GateSettings(looks, level, 0.0, "continuous", "max", SEED, test, rules=rules)  # type: ignore[arg-type]


# -- false alarms ----------------------------------------------------------------------------------


def false_alarms(looks: int) -> tuple[str, list[str]]:
    """The table of false alarms per look under Gaussian d, both rules; and the checks failed."""
    rng = np.random.default_rng(SEED)
    guards = {r: look_test(settings(0.05, (10,), "guarded_sign_flip", r)) for r in (1, 2)}
    rows, missed = [], []
    for n in FALSE_ALARM_NS:
        fired = {1: 0, 2: 0}
        for x in gaussian_blocks(rng, looks, n):
            for r, test in guards.items():
                fired[r] += int(np.count_nonzero(test.guard(x)))
        cells = []
        for r in (1, 2):
            low, high = clopper_pearson(fired[r], looks)
            cells.append(f"{fired[r] / looks:.2e} [{low:.1e}, {high:.1e}]")
        met = clopper_pearson(fired[2], looks)[1] <= TAIL_GUARD_FALSE_ALARM
        if not met:
            missed.append(f"n = {n}")
        tabled = "" if n in TAIL_THRESHOLDS else " (not tabled)"
        rows.append([f"{n}{tabled}", f"{looks:,}", *cells, "yes" if met else "**NO**"])
    head = ["units n", "looks", "rules 1: fires per look [95% CP]", "rules 2: fires per look [95% CP]",
            f"rules 2 upper bound <= {TAIL_GUARD_FALSE_ALARM:g}"]
    return table(head, rows), missed


# -- power and lopsided nulls ------------------------------------------------------------------------


def draw(rng: np.random.Generator, family: str, effect: float, shape: tuple[int, int]) -> np.ndarray:
    """Paired differences d (trials, units) of one noise family plus `effect` (see the module docstring)."""
    trials, n = shape
    if family in ("bimodal", "tight bimodal"):
        sd = 1.0 if family == "bimodal" else 0.3
        modes = np.where(rng.random(shape) < 0.5, -2.0, 2.0)
        return effect + (sd * rng.standard_normal(shape) + modes) / math.sqrt(4.0 + sd**2)
    if family == "mode switch":
        return effect + rng.standard_normal(shape) * np.where(rng.random(shape) < 0.1, 5.0, 1.0) / math.sqrt(3.4)
    name = LOPSIDED.get(family, family)
    return g.paired_d(rng, np.full(trials, effect), n, name)


def p_values(d: np.ndarray, level: float, looks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """(p, est, thresholds) at each look: p only where no earlier look was futile (walk_looks reads
    nothing else: a guard only stops trials earlier); thresholds from look_boundaries."""
    s = settings(level, looks, "sign_flip", 2)
    test, marks = look_test(s), [m.increment for m in look_boundaries(s)]
    est = np.stack([d[:, :n].mean(1) for n in looks], axis=1)
    p = np.ones(est.shape)
    alive = np.ones(d.shape[0], dtype=bool)
    for k, n in enumerate(looks):
        rows = np.flatnonzero(alive)
        if len(rows):
            p[rows, k] = test.p_value(d[rows, :n], 0.0, marks[k] or None)
        alive &= est[:, k] > 0.0
    return p, est, marks


def judge(rng: np.random.Generator, family: str, effect: float, trials: int) -> dict[str, dict[str, np.ndarray]]:
    """Per design: trial accepted, promoted (after the confirmation), and the guard per look."""
    d = draw(rng, family, effect, (trials, LOOKS[-1]))
    fresh = draw(rng, family, effect, (trials, CONFIRM_UNITS))
    p, est, marks = p_values(d, LEVELS.trial, LOOKS)
    cp_, cest, cmarks = p_values(fresh, LEVELS.confirm, (CONFIRM_UNITS,))
    out = {}
    for name, (test, rules) in DESIGNS.items():
        guard = look_test(settings(LEVELS.trial, LOOKS, test, rules)).guard
        fires = np.stack([np.asarray(guard(d[:, :n]), dtype=bool) for n in LOOKS], axis=1)
        _, outcome = walk_looks(p, est, 0.0, marks, fires)
        accepted = outcome == ACCEPTED
        _, conf = walk_looks(cp_, cest, 0.0, cmarks, np.asarray(guard(fresh), dtype=bool)[:, None])
        out[name] = {"accepted": accepted, "promoted": accepted & (conf == ACCEPTED), "fires": fires}
    return out


def percent(x: np.ndarray) -> str:
    k, n = int(np.count_nonzero(x)), len(x)
    low, high = clopper_pearson(k, n)
    return f"{100 * k / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def power_tables(trials: int) -> tuple[str, str, str]:
    """(guard per look at a 1 SD gain, power at 1 SD, lopsided nulls) as markdown tables."""
    rng = np.random.default_rng(SEED + 1)
    fire_rows, power_rows, lop_rows = [], [], []
    for family in (*NOISES, *LOPSIDED):
        effect = 0.0 if family in LOPSIDED else EFFECT
        out = judge(rng, family, effect, trials)
        for name, r in out.items():
            if family in LOPSIDED:
                lop_rows.append([family, name, percent(r["accepted"]), f"**{percent(r['promoted'])}**"])
                continue
            if name in list(DESIGNS)[1:]:
                fire_rows.append([family, name, *(f"{100 * r['fires'][:, k].mean():.2f}" for k in range(len(LOOKS)))])
            power_rows.append([family, name, percent(r["accepted"]), f"**{percent(r['promoted'])}**"])
    fires = table(["noise of d (1 SD gain)", "guard", *(f"fires at {n} units %" for n in LOOKS)], fire_rows, "llrrr")
    head = ["noise of d", "design", "P(trial accepts) % [95% CP]", "P(promoted) % [95% CP]"]
    return fires, table(head, power_rows, "llrr"), table(head, lop_rows, "llrr")


# -- the thresholds table ------------------------------------------------------------------------------


def threshold_table() -> None:
    """Simulate c(n), the (1 - TAIL_GUARD_DESIGN_RATE) quantile of tail_statistic under Gaussian d,
    rounded up to 2 decimals, and print it as the TAIL_THRESHOLDS literal for tail_guard.py."""
    start = time.perf_counter()
    lines = []
    for n in TABLE_NS:
        rng = np.random.default_rng([TABLE_SEED, n])
        looks = TABLE_LOOKS["small" if n <= 40 else "large"]
        t = np.concatenate([tail_statistic(x) for x in gaussian_blocks(rng, looks, n)])
        c = math.ceil(float(np.quantile(t, 1.0 - TAIL_GUARD_DESIGN_RATE)) * 100) / 100
        lines.append(f"    {n}: {c},")
        print(f"n {n}: c {c} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    print("TAIL_THRESHOLDS: Mapping[int, float] = {\n" + "\n".join(lines) + "\n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_FACTOR}x fewer looks and trials (smoke test)")
    parser.add_argument("--table", action="store_true", help="print the simulated TAIL_THRESHOLDS and stop")
    args = parser.parse_args()
    if args.table:
        threshold_table()
        return
    scale = QUICK_FACTOR if args.quick else 1
    start = time.perf_counter()
    alarms, missed = false_alarms(FALSE_ALARM_LOOKS // scale)
    fires, power, lopsided = power_tables(TRIALS // scale)
    body = (
        f"Rules 1: the guard fires when the worst paired difference lies more than 6 robust SDs (1.4826 MAD) "
        f"below the median. Rules 2: when it lies more than c(n) times max(IQR / 1.349, max(d) - median) below "
        f"the median and is a loss; c(n) is the Gaussian (1 - {TAIL_GUARD_DESIGN_RATE:g}) quantile of that "
        f"ratio (`tail_guard.TAIL_THRESHOLDS`, from `--table`), stated bound {TAIL_GUARD_FALSE_ALARM:g} "
        "per look.\n\n"
        f"## False alarms per look, Gaussian d (mean 0)\n\n{alarms}\n"
        + (f"Bound missed at {', '.join(missed)}.\n\n" if missed else "Rules 2 meets the bound at every n.\n\n")
        + f"## Where the guard fires on a {EFFECT:g} SD gain (per look, before any stopping; {TRIALS // scale:,} "
        f"trials)\n\n{fires}\n"
        f"## Power at a {EFFECT:g} SD gain\n\nTrial 1 of 20 under `campaign`: trial level {LEVELS.trial:.4f}, "
        f"looks {'/'.join(map(str, LOOKS))}, linear spending; confirmation at {LEVELS.confirm:.4f} on "
        f"{CONFIRM_UNITS} fresh units (P(promoted) includes it). {TRIALS // scale:,} trials per noise; all designs "
        f"judge the same draws.\n\n{power}\n"
        f"## Lopsided nulls, per attempt (the same attempt; mean gain 0)\n\n{lopsided}\n"
        f"Simulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    )
    save("guard_calibration" + ("-quick" if args.quick else ""), "The harmful-tail guard: rules 1 against rules 2",
         body)


if __name__ == "__main__":
    main()
