"""Power and cost of one trial: fixed-n (40 units) against Ratchet's sequential looks (10, 20, 40).

For candidates whose true gain is 0, 0.25, 0.5 and 1 SD of the paired difference d (Gaussian
noise; d = candidate - champion on one seed has SD 1), at the level trial 1 of a 20-attempt
campaign gets under `campaign` and at 0.05. Three designs judge the same simulated scores (and the
same fresh units), each followed by a confirmation on fresh units: fixed-n (one look at 40, then a
confirmation of 40 at the same level), before (looks 10/20/40, Pocock spending, confirmation with
the looks (n, later looks) at the same level) and after (the attempt's level split between trial
and confirmation, linear spending, the guarded sign-flip, confirmation in one look of 40).

    python benchmarks/power_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_sim as g  # noqa: E402
import numpy as np  # noqa: E402
from _common import save, table  # noqa: E402

EFFECTS = (0.0, 0.25, 0.5, 1.0)
TRIALS = 10_000
"""Simulated trials per effect: SE of a probability <= 0.5 point."""
QUICK_TRIALS = 1000
SEED = 9
SAVING_TARGET = 0.30  # job-units per trial at least 30% below fixed-n (effects 0 and 1 SD)
POWER_GAP_TARGET = 5.0  # points


def simulate(
    rng: np.random.Generator, effect: float, trials: int
) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Per (level name, design): accepted, promoted, job-units per trial."""
    effects = np.full(trials, effect)
    d = g.paired_d(rng, effects, g.FIXED_N, "gaussian")
    fresh = g.paired_d(rng, effects, g.FIXED_N, "gaussian")
    looks = g.LookPValues(d, "continuous", fixed=True)
    out = {}
    for name, level in LEVELS.items():
        levels = np.full(trials, level)
        acc, units = g.sequential(looks, levels, "pocock")
        prom, confirm_units = g.confirm(fresh, acc, units, levels, "continuous", g.LOOKS, "pocock", before=True)
        out[(name, "sequential")] = {"accepted": acc, "promoted": prom, "units": 2 * (units + confirm_units)}
        trial, conf = g.split(levels)
        acc, units = g.sequential(looks, trial, "linear", g.GUARDED)
        prom, confirm_units = g.confirm(fresh, acc, units, conf, "continuous", g.LOOKS, "linear", g.GUARDED)
        out[(name, "after")] = {"accepted": acc, "promoted": prom, "units": 2 * (units + confirm_units)}
        acc = g.fixed_n(looks, levels, "pocock")
        units = np.full(trials, g.FIXED_N)
        prom, confirm_units = g.confirm(fresh, acc, units, levels, "continuous", (g.FIXED_N,))
        out[(name, "fixed-n")] = {"accepted": acc, "promoted": prom, "units": 2 * (units + confirm_units)}
    return out


LEVELS = {
    f"campaign, trial 1 of 20 ({g.campaign_levels('campaign', 20)[0]:.4f})": float(
        g.campaign_levels("campaign", 20)[0]
    ),
    "0.05": 0.05,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer trials (smoke test)")
    args = parser.parse_args()
    trials = QUICK_TRIALS if args.quick else TRIALS
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    rows, checks = [], []
    for effect in EFFECTS:
        out = simulate(rng, effect, trials)
        for name in LEVELS:
            fixed, seq = out[(name, "fixed-n")], out[(name, "sequential")]
            saving = 1 - seq["units"].mean() / fixed["units"].mean()
            gap = (seq["promoted"].mean() - fixed["promoted"].mean()) * 100
            gap_se = (seq["promoted"].astype(float) - fixed["promoted"]).std(ddof=1) / np.sqrt(trials) * 100
            after = out[(name, "after")]
            designs = (
                ("fixed-n 40", fixed),
                ("before: looks 10/20/40, Pocock, confirmation at the same level", seq),
                ("after: looks 10/20/40, linear, level split with the confirmation", after),
            )
            for design, r in designs:
                p, p_se = g.mean_se(r["promoted"] * 100.0)
                a, _ = g.mean_se(r["accepted"] * 100.0)
                u, _ = g.mean_se(r["units"])
                extra = ["", ""]
                if r is not fixed:
                    diff = r["promoted"].astype(float) - fixed["promoted"]
                    extra = [
                        f"{r['units'].mean() / fixed['units'].mean() - 1:+.0%}",
                        f"{diff.mean() * 100:+.1f} ± {diff.std(ddof=1) / np.sqrt(trials) * 100:.1f}",
                    ]
                bold = r is after
                rows.append(
                    [
                        f"{effect:g}",
                        name,
                        design,
                        f"{a:.1f}",
                        f"**{g.fmt(p, p_se)}**" if bold else g.fmt(p, p_se),
                        f"**{u:.1f}**" if bold else f"{u:.1f}",
                        *extra,
                    ]
                )
            if effect in (0.0, 1.0):
                checks.append(
                    [
                        f"{effect:g}",
                        name,
                        "job-units >= 30% below fixed-n",
                        f"{saving:.0%} below",
                        "met" if saving >= SAVING_TARGET else "MISSED",
                    ]
                )
            if effect > 0:
                checks.append(
                    [
                        f"{effect:g}",
                        name,
                        "power within 5 points of fixed-n",
                        f"{gap:+.1f} ± {gap_se:.1f} points",
                        "met" if gap >= -POWER_GAP_TARGET else "MISSED",
                    ]
                )
    head = (
        f"{trials:,} simulated trials per effect (standard error of a probability <= "
        f"{100 * 0.5 / np.sqrt(trials):.1f} points; the two designs share every draw, so their difference is "
        "more precise than either). Effects are in SDs of the paired difference d (Gaussian noise, "
        "SD(d) = 1; each variant's run noise has SD 1/sqrt(2)). *P(trial accepts)*: the trial alone; "
        "*P(promotion)*: after the confirmation on fresh units (at effect 0: the false-promotion rate per "
        "trial). *Job-units per trial*: 2 per unit (champion and candidate), the confirmation included.\n\n"
        "## Targets\n\n"
        + table(["effect (SD of d)", "level", "target", "measured", ""], checks)
        + "\n## Power and cost\n\n"
        + table(
            [
                "effect (SD of d)",
                "level",
                "design",
                "P(trial accepts) %",
                "P(promotion) %",
                "job-units / trial",
                "job-units vs fixed-n",
                "power vs fixed-n (points)",
            ],
            rows,
        )
    )
    foot = f"\nSimulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    save(
        "power_cost" + ("-quick" if args.quick else ""),
        "Power and cost per trial: fixed-n against sequential looks",
        head + foot,
    )


if __name__ == "__main__":
    main()
