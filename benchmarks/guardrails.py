"""Guardrails (docs/gate.md, Guardrails): the promise kept at a guardrail's boundary, and the power a
guardrail that does not regress costs.

The gate's own batched walk (`core.guardrails.decide_batch`, the twin of `gate.decide`) judges
simulated trials with looks (10, 20, 40), linear spending and the default test (guarded sign-flip,
gate rules 2). Units: every paired difference is in SDs of its own distribution (SD 1).

1. Type-I error at the boundary: the primary gains 3 SD (always significant) while the guardrail's
   mean paired change is exactly -allowance (allowance 0.5): the share of trials promoted, with a
   95% Clopper-Pearson interval, at levels 0.05 and 0.01, for Gaussian, Laplace and skewed
   (centred gamma, shape 4, either tail) guardrail changes, and for a pass/fail guardrail
   (a check passing 80% of examples, allowance 0.1: 15% of examples lose the check, 5% gain it).
2. Power: the primary gains delta SD, the guardrail's change is N(0, 1) and the allowance 1 SD
   (and 0.5 SD, for comparison): the share promoted with the guardrail against without it.

    python benchmarks/guardrails.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import cp, save, table  # noqa: E402

from ratchet.core.gate import GateSettings  # noqa: E402
from ratchet.core.guardrails import Guardrail, decide_batch  # noqa: E402

SEED = 32
LOOKS = (10, 20, 40)
LEVELS = (0.05, 0.01)
NULL_TRIALS, QUICK_NULL_TRIALS = 4_000, 400
POWER_TRIALS, QUICK_POWER_TRIALS = 2_000, 200
ALLOWANCE = 0.5
DELTAS = (0.3, 0.5, 0.8)
POWER_ALLOWANCES = (1.0, 0.5)


def settings(level: float, guardrails: tuple[Guardrail, ...], seed: int) -> GateSettings:
    """The trial's gate settings: continuous primary, margin 0, the default test and spending."""
    return GateSettings(looks=LOOKS, level=level, margin=0.0, kind="continuous", direction="max", seed=seed,
                        guardrails=guardrails)


def changes(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Guardrail changes with mean 0 and SD 1 of the named shape."""
    if shape == "gaussian":
        return rng.normal(0.0, 1.0, size)
    if shape == "laplace":
        return rng.laplace(0.0, 1.0 / np.sqrt(2.0), size)
    gamma = (rng.gamma(4.0, 0.5, size) - 2.0)  # mean 0, SD 1, skewness +1
    return gamma if shape == "right-skewed" else -gamma


def promoted(rng: np.random.Generator, d: np.ndarray, level: float, guard: Guardrail | None, change: np.ndarray,
             seed: int) -> float:
    """Share of trials promoted: primary differences d (trials, n); the guardrail's champion scores
    N(0, 1) plus `change` (trials, n) for the candidate; no guardrail when `guard` is None."""
    trials, n = d.shape
    if guard is None:
        empty = np.zeros((trials, 0, n))
        return float((decide_batch(d, empty, empty, settings(level, (), seed))[1] == 1).mean())
    champ = rng.normal(0.0, 1.0, (trials, 1, n))
    cand = champ + change[:, None, :]
    return float((decide_batch(d, champ, cand, settings(level, (guard,), seed))[1] == 1).mean())


def binary_promoted(rng: np.random.Generator, trials: int, level: float) -> float:
    """Share promoted with a pass/fail guardrail losing exactly its allowance 0.1 (p01 0.15, p10 0.05)."""
    n = LOOKS[-1]
    d = rng.normal(3.0, 1.0, (trials, n))
    champ = (rng.random((trials, 1, n)) < 0.8).astype(float)
    lose = rng.random((trials, 1, n)) < 0.15 / 0.8  # 15% of examples: the champion passes, the candidate fails
    gain = rng.random((trials, 1, n)) < 0.05 / 0.2  # 5%: the reverse; mean change 0.05 - 0.15 = -0.1
    cand = np.where(champ == 1, np.where(lose, 0.0, 1.0), np.where(gain, 1.0, 0.0))
    guard = Guardrail("check", "max", 0.1, "binary")
    look, outcome = decide_batch(d, champ, cand, settings(level, (guard,), int(rng.integers(2**31))))
    return float((outcome == 1).mean())


def null_rows(rng: np.random.Generator, trials: int) -> list[list[str]]:
    """Table 1: promotion at the guardrail's boundary."""
    rows = []
    guard = Guardrail("g", "max", ALLOWANCE)
    for shape in ("gaussian", "laplace", "right-skewed", "left-skewed", "pass/fail"):
        row = [shape]
        for level in LEVELS:
            if shape == "pass/fail":
                rate = binary_promoted(rng, trials, level)
            else:
                d = rng.normal(3.0, 1.0, (trials, LOOKS[-1]))
                change = changes(rng, shape, (trials, LOOKS[-1])) - ALLOWANCE
                rate = promoted(rng, d, level, guard, change, int(rng.integers(2**31)))
            row.append(cp(round(rate * trials), trials))
        rows.append(row)
    return rows


def power_rows(rng: np.random.Generator, trials: int) -> list[list[str]]:
    """Table 2: power with and without a guardrail that does not regress."""
    rows = []
    for level in LEVELS:
        for delta in DELTAS:
            d = rng.normal(delta, 1.0, (trials, LOOKS[-1]))  # the same trials with and without the guardrail
            change = rng.normal(0.0, 1.0, (trials, LOOKS[-1]))
            seed = int(rng.integers(2**31))
            without = promoted(rng, d, level, None, change, seed)
            row = [f"{level}", f"{delta}", f"{100 * without:.1f}"]
            for a in POWER_ALLOWANCES:
                with_ = promoted(rng, d, level, Guardrail("g", "max", a), change, seed)
                row += [f"{100 * with_:.1f}", f"{with_ / without:.3f}" if without else "-"]
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer trials (smoke test)")
    args = parser.parse_args()
    null_trials = QUICK_NULL_TRIALS if args.quick else NULL_TRIALS
    power_trials = QUICK_POWER_TRIALS if args.quick else POWER_TRIALS
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    nulls = null_rows(rng, null_trials)
    power = power_rows(rng, power_trials)
    took = time.perf_counter() - start
    body = [
        f"Looks {LOOKS}, linear spending, gate.test `guarded_sign_flip` (gate rules 2), margin 0. Paired "
        "differences in SDs of their own distribution (SD 1).\n\n",
        f"## 1. Promotion when the guardrail loses exactly its allowance\n\nThe primary gains 3 SD (always "
        f"significant); the guardrail's mean change is -{ALLOWANCE} SD, its allowance {ALLOWANCE} SD (pass/fail: a "
        "check passing 80% of examples, 15% of examples losing it and 5% gaining it, allowance 0.1). "
        f"{null_trials:,} trials per cell, % promoted [95% Clopper-Pearson]. The promise: at most the level "
        "(for the sign-flip test: when the change is symmetric about its mean; the skewed rows show the skew "
        "correction's reach).\n\n",
        table(["guardrail change", *[f"level {lv}" for lv in LEVELS]], nulls),
        "\n## 2. Power kept by a guardrail that does not regress\n\nThe primary gains delta SD; the guardrail's "
        f"change is N(0, 1). {power_trials:,} trials per cell, % promoted, and the ratio to the power without "
        "the guardrail (the same simulated trials with and without it).\n\n",
        table(["level", "delta (SD)", "without", "allowance 1 SD", "ratio", "allowance 0.5 SD", "ratio"], power),
        f"\nRun time {took:.0f} s.\n",
    ]
    save("guardrails-quick" if args.quick else "guardrails",
         "Guardrails: promotion at the allowance and the power kept", "".join(body))


if __name__ == "__main__":
    main()
