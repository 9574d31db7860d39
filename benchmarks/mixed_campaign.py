"""A mixed campaign: 10% of candidates carry a real gain, the rest none.

Each attempt's candidate is, with probability REAL_SHARE, better than the champion it faces by a
gain drawn uniformly from GAIN_RANGE SDs of the paired difference d (Gaussian noise, SD(d) = 1);
otherwise it has the champion's distribution. Gains add up: promoting a real candidate raises the
champion's true mean by its gain, promoting any other changes nothing. Every rule judges the same
candidates (see gate_sim.py for the model and the rules).

    python benchmarks/mixed_campaign.py [--quick]
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

REAL_SHARE = 0.10
GAIN_RANGE = (0.25, 1.0)
CAMPAIGNS = {20: 2000, 100: 1000}
QUICK = {20: 200, 100: 100}
SEED = 10


def effects_for(rng: np.random.Generator, campaigns: int, attempts: int) -> np.ndarray:
    """(campaigns, attempts) true gains: REAL_SHARE of them uniform in GAIN_RANGE, the rest 0."""
    real = rng.random((campaigns, attempts)) < REAL_SHARE
    return np.where(real, rng.uniform(*GAIN_RANGE, (campaigns, attempts)), 0.0)


def rows_for(out: dict[str, g.RuleOutcome], effects: np.ndarray) -> list[list[str]]:
    """One row per rule: promotions, false ones, FDR (mean false-discovery proportion), the final
    champion's true gain and its share of what was on offer, the claimed gain, job-units."""
    attempts = effects.shape[1]
    offered = effects.sum(1)
    rows = []
    for rule, o in out.items():
        fdp = np.where(o.promotions > 0, o.false / np.maximum(o.promotions, 1), 0.0)
        fdr, fdr_se = g.mean_se(fdp * 100)
        pooled = o.false.sum() / max(o.promotions.sum(), 1) * 100
        gain, gain_se = g.mean_se(o.true_gain)
        claim, claim_se = g.mean_se(o.claimed)
        share = o.true_gain.sum() / offered.sum() * 100
        bold = rule == "ratchet-campaign"
        rows.append(
            [
                f"**{g.RULE_NAMES[rule]}**" if bold else g.RULE_NAMES[rule],
                f"{o.promotions.mean():.2f}",
                f"{(o.promotions - o.false).mean():.2f}",
                f"{o.false.mean():.2f}",
                f"**{g.fmt(fdr, fdr_se)}**" if bold else g.fmt(fdr, fdr_se),
                f"{pooled:.1f}",
                f"**{g.fmt(gain, gain_se, 2)}**" if bold else g.fmt(gain, gain_se, 2),
                f"{share:.0f}%",
                g.fmt(claim, claim_se, 2),
                f"{o.job_units.mean() / attempts:.1f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer campaigns (smoke test)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else CAMPAIGNS
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    body = []
    for attempts, campaigns in sizes.items():
        effects = effects_for(rng, campaigns, attempts)
        out = g.run_rules(rng, effects, "gaussian")
        offered = effects.sum(1).mean()
        body.append(
            f"### {attempts} attempts ({campaigns:,} campaigns; on offer: {(effects > 0).sum(1).mean():.1f} "
            f"real candidates worth {offered:.2f} SD of d per campaign)\n\n"
        )
        body.append(
            table(
                [
                    "rule",
                    "promotions / run",
                    "real",
                    "false",
                    "FDR % (mean FDP)",
                    "false share of all promotions %",
                    "final true gain (SD of d)",
                    "of the gain on offer",
                    "claimed gain (SD of d)",
                    "job-units / attempt",
                ],
                rows_for(out, effects),
            )
        )
        body.append("\n")
    head = (
        f"{REAL_SHARE:.0%} of candidates carry a real gain, uniform "
        f"in {GAIN_RANGE[0]}-{GAIN_RANGE[1]} SD of the "
        "paired difference d (Gaussian noise, SD(d) = 1); the others "
        "have the champion's distribution. Mean ± one "
        "standard error over the simulated campaigns. *FDR*: the "
        "mean over runs of false promotions / promotions "
        "(0 for a run without promotions); the next column pools "
        "all runs. *Final true gain*: the final champion's "
        "true mean minus the baseline's, the sum of the real gains "
        "the rule promoted. *Claimed gain*: what the rule "
        "reports (Ratchet: its holdout estimate; keep-if-better "
        "and the threshold rule: the final recorded score "
        "minus the baseline's; paired-0.05: the sum of its promoted estimates).\n\n"
    )
    foot = f"\nSimulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    save(
        "mixed_campaign" + ("-quick" if args.quick else ""),
        "A mixed campaign: real gains among null candidates",
        head + "".join(body) + foot,
    )


if __name__ == "__main__":
    main()
