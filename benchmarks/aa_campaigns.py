"""A/A campaigns: what each rule promotes when no candidate is better than the champion.

Campaigns of 20 and 100 attempts in which every candidate has the champion's distribution, under
Gaussian noise, heavy-tailed noise (t, 2 d.f.) and binary pass/fail on a fixed set of 200 examples.
Ratchet's gate (`campaign` and `trial` multiplicity, looks 10/20/40, confirmation) and the field's
rules judge the same simulated scores (see gate_sim.py for the model and the rules).

    python benchmarks/aa_campaigns.py [--quick]
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

CAMPAIGNS = {20: 4000, 100: 2000}
"""Simulated campaigns per campaign length: a probability's SE is <= 0.8 point (20 attempts) and
<= 1.1 points (100 attempts), <= 0.5 point near 5%."""
QUICK = {20: 400, 100: 200}
DISTRIBUTIONS = {
    "gaussian": "Gaussian noise",
    "t2": "heavy-tailed noise (t, 2 d.f.)",
    "binary": "binary pass/fail, 200 examples, p_j ~ U(0.2, 0.95)",
}
SEED = 8


def rows_for(out: dict[str, g.RuleOutcome], attempts: int, binary: bool) -> list[list[str]]:
    """One table row per rule: P(any) %, false promotions per 100 attempts, true drift, claimed
    gain (SDs of d, or pass-rate points for binary), job-units per attempt."""
    scale = 100.0 if binary else 1.0
    rows = []
    for rule, o in out.items():
        any_p = (o.promotions > 0).astype(float)
        p, p_se = g.mean_se(any_p * 100)
        f, f_se = g.mean_se(o.false / attempts * 100)
        drift, drift_se = g.mean_se(o.true_gain * scale)
        claim, claim_se = g.mean_se(o.claimed * scale)
        units = float(np.mean(o.job_units)) / attempts
        name = g.RULE_NAMES[rule]
        bold = rule in ("ratchet-campaign", "keep-if-better")
        rows.append(
            [
                f"**{name}**" if bold else name,
                f"**{g.fmt(p, p_se, 2)}**" if bold else g.fmt(p, p_se, 2),
                g.fmt(f, f_se, 2),
                g.fmt(drift, drift_se, 3),
                g.fmt(claim, claim_se, 3),
                f"{units:.1f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer campaigns (smoke test)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else CAMPAIGNS
    rng = np.random.default_rng(SEED)
    body, checks = [], []
    start = time.perf_counter()
    for dist, title in DISTRIBUTIONS.items():
        for attempts, campaigns in sizes.items():
            out = g.run_rules(rng, np.zeros((campaigns, attempts)), dist)
            unit = "pass-rate points" if dist == "binary" else "SDs of d"
            body.append(f"### {title}, {attempts} attempts ({campaigns:,} campaigns)\n\n")
            body.append(
                table(
                    [
                        "rule",
                        "P(run promotes anything) %",
                        "false promotions / 100 attempts",
                        f"true drift ({unit})",
                        f"claimed gain ({unit})",
                        "job-units / attempt",
                    ],
                    rows_for(out, attempts, dist == "binary"),
                )
            )
            body.append("\n")
            camp = (out["ratchet-campaign"].promotions > 0).mean()
            kib = (out["keep-if-better"].promotions > 0).mean()
            se = np.sqrt(max(camp * (1 - camp), 1e-12) / campaigns)
            checks.append(
                [
                    title,
                    str(attempts),
                    f"{camp * 100:.2f} ± {se * 100:.2f}",
                    f"{kib * 100:.1f}",
                    "met" if camp <= g.ALPHA + 2 * se else "MISSED",
                ]
            )
    head = (
        "Every candidate has the champion's distribution: any promotion is false. Mean ± one standard "
        "error over the simulated campaigns. *True drift*: the final champion's true mean minus the "
        "baseline's (0 by construction under A/A: a promoted A/A candidate is no better and no worse). "
        "*Claimed gain*: what the rule itself reports as the improvement: Ratchet's holdout estimate "
        "(final champion against the baseline on 40 fresh units, only when something was promoted), "
        "keep-if-better's and the threshold rule's final recorded score minus the baseline's, the "
        "paired-0.05 loop's sum of the estimates it promoted on. Continuous units are SDs of the paired "
        "difference d (= metric units; the metric's mean is 100, so the 0.5% threshold is 0.5 SD of d). "
        "Job-units: one run of one variant on one unit (binary: on one example); Ratchet's holdout "
        "(80 job-units once per run that promoted) is not included.\n\n"
        "## Target: under `campaign`, P(A/A run promotes anything) <= alpha = 0.05\n\n"
        + table(["noise", "attempts", "Ratchet `campaign` %", "keep-if-better %", "target"], checks)
        + "\n## Tables\n\n"
    )
    foot = f"\nSimulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    save(
        "aa_campaigns" + ("-quick" if args.quick else ""),
        "A/A campaigns: the gate against the field's rules",
        head + "".join(body) + foot,
    )


if __name__ == "__main__":
    main()
