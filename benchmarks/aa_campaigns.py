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
from _common import cp, save, table  # noqa: E402

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
LOPSIDED_CAMPAIGNS, LOPSIDED_ATTEMPTS = 4000, 20
BOUNDARY = 0.5  # the min-effect boundary family: true mean gain == margin == 0.5 SD
METRIC_RANGE = (0.0, 25.0)  # declared for the betting test: d in [-25, 25] covers every lopsided d
SKEWED = {name: f"{name} (cut at -25, re-centred)" for name in
          ("lognormal-left", "lognormal-right", "exp-left", "exp-right", "gamma2-left", "gamma2-right")}
"""Skewed mean-zero nulls of skewed_nulls.FAMILIES, cut to the betting range [-25, 25] and re-centred
(a lognormal difference reaches -25 with chance about 5e-4): rows of the lopsided table."""


def skewed_d(rng: np.random.Generator, family: str, trials: int) -> np.ndarray:
    """(trials, FIXED_N) differences of a SKEWED family, clipped to [-25, 25] and shifted to mean 0
    (the clipped distribution's mean estimated once on 2,000,000 draws, seed 0)."""
    from skewed_nulls import FAMILIES

    sample = FAMILIES[family][2]
    shift = float(np.clip(sample(np.random.default_rng(0), (2000, 1000)), -25.0, 25.0).mean())
    return np.clip(sample(rng, (trials, g.FIXED_N)), -25.0, 25.0) - shift



def betting_campaigns(d: np.ndarray, fresh: np.ndarray, margin: float, shape: tuple[int, int]) -> np.ndarray:
    """The betting test (after rule, A/A: no promotion passes level on before the first false one):
    attempt t at attempt_levels' split, every look at the full level (anytime-valid), futility at
    interim looks, confirmation on fresh units. Returns promoted per (campaign, attempt) row."""
    from ratchet.core.gate import GateSettings, look_test
    from ratchet.core.gate_design import confirmation_looks
    from ratchet.core.stats.multiplicity import attempt_levels
    from ratchet.core.stats.sequential import ACCEPTED, walk_looks

    campaigns, attempts = shape
    promoted = np.zeros(campaigns * attempts, dtype=bool)

    def judge(x: np.ndarray, level: float, looks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        settings = GateSettings(looks, level, margin, "continuous", "max", 0, "betting", METRIC_RANGE)
        test = look_test(settings)
        p = np.stack([test.p_value(x[:, :n], margin, level) for n in looks], axis=1)
        est = np.stack([x[:, :n].mean(1) for n in looks], axis=1)
        look, outcome = walk_looks(p, est, margin, [level] * len(looks))
        return outcome == ACCEPTED, np.asarray(looks)[look]

    for t in range(attempts):
        rows = np.arange(campaigns) * attempts + t
        trial, conf = attempt_levels(g.ALPHA, "campaign", t + 1, attempts, ["not_promoted"] * t)
        accepted, units = judge(d[rows], trial, g.LOOKS)
        for n in np.unique(units[accepted]):
            sub = rows[accepted & (units == n)]
            promoted[sub], _ = judge(fresh[sub], conf, confirmation_looks(g.LOOKS, int(n)))
    return promoted


def lopsided_table(rng: np.random.Generator, campaigns: int) -> str:
    """P(run promotes anything) for lopsided nulls, before and after, sign-flip and betting."""
    attempts, rows = LOPSIDED_ATTEMPTS, []
    cells_of = [(family, margin) for family in ("gaussian", *g.LOPSIDED) for margin in (0.0, BOUNDARY)]
    for family, margin in [*cells_of, *((family, 0.0) for family in SKEWED)]:
        shape = (campaigns, attempts)
        effect = np.full(campaigns * attempts, margin)
        if family in SKEWED:
            d, fresh = skewed_d(rng, family, campaigns * attempts), skewed_d(rng, family, campaigns * attempts)
        else:
            d = g.paired_d(rng, effect, g.FIXED_N, family)
            fresh = g.paired_d(rng, effect, g.FIXED_N, family)
        if family == "gaussian":  # bounded like the others, for the betting test's range
            d, fresh = np.clip(d, margin - 4, margin + 4), np.clip(fresh, margin - 4, margin + 4)
        looks = g.LookPValues(d - margin, "continuous", fixed=False)  # H0 mean <= m: test d - m
        levels = np.tile(g.campaign_levels("campaign", attempts), campaigns)
        acc, units = g.sequential(looks, levels, "pocock")
        before, _ = g.confirm(fresh - margin, acc, units, levels, "continuous", g.LOOKS, "pocock", before=True)
        after, _ = g.fallback_campaigns(looks, fresh - margin, "continuous", shape, "campaign")
        bet = betting_campaigns(d, fresh, margin, shape)
        first = np.arange(campaigns) * attempts
        cells = []
        for promoted in (before, after, bet):
            runs = int(promoted.reshape(shape).any(1).sum())
            cells += [f"{100 * promoted[first].mean():.2f}", cp(runs, campaigns)]
        inside = {"sign_flip": family in ("gaussian",), "betting": True}
        family = SKEWED.get(family, family)
        rows.append(
            [family, "null (mean 0)" if margin == 0 else f"boundary (mean = margin = {margin})",
             *cells, "yes" if inside["sign_flip"] else "no", "yes"]
        )
    return table(
        ["family", "true mean", "before: P(trial 1 promotes) %", "before: P(run promotes) % [95% CP]",
         "after guarded_sign_flip: P(trial 1 promotes) %", "after guarded_sign_flip: P(run promotes) % [95% CP]",
         "after betting: P(trial 1 promotes) %", "after betting: P(run promotes) % [95% CP]",
         "inside the sign-flip's guarantee", "inside betting's guarantee"],
        rows,
    )


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
        bold = rule in ("ratchet-campaign", "keep-if-better")  # the new default and the field's
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
            before = (out["ratchet-campaign-before"].promotions > 0).mean()
            kib = (out["keep-if-better"].promotions > 0).mean()
            se = np.sqrt(max(camp * (1 - camp), 1e-12) / campaigns)
            checks.append(
                [
                    title,
                    str(attempts),
                    f"{before * 100:.2f}",
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
        + table(
            ["noise", "attempts", "before: `campaign` %", "after: `campaign` %", "keep-if-better %", "target"], checks
        )
        + "\n## Tables\n\n"
    )
    lop_campaigns = LOPSIDED_CAMPAIGNS // (10 if args.quick else 1)
    body.append(
        f"## Lopsided nulls ({lop_campaigns:,} campaigns of {LOPSIDED_ATTEMPTS} attempts per row and rule)\n\n"
        "d = +1 w.p. 1 - q and -(1 - q)/q w.p. q (left; right: the mirror) plus N(0, 1) noise truncated "
        f"to +-4, mean 0 (null) or shifted to the margin {BOUNDARY} (boundary, gate margin {BOUNDARY}); the "
        "Gaussian family clipped to +-4 around its mean. Betting declares target.metric_range = "
        f"{list(METRIC_RANGE)} (d in [-25, 25]), so the floor test (gate rules 2) runs with the floor -25. The "
        "skewed rows are the mean-zero nulls of skewed_nulls.py (lognormal(0, 1), Exp(1), Gamma(2), each "
        "direction; left = small frequent gains, rarer large losses) cut to [-25, 25] and re-centred. "
        "Before: Pocock looks, no guard, the trial's own schedule as confirmation; after: the default "
        "`guarded_sign_flip` (gate rules 2's guard) and `betting`. A family inside a test's guarantee meets "
        "alpha = 5% when its point estimate is <= 5%; families outside it get a measured rate.\n\n"
    )
    body.append(lopsided_table(np.random.default_rng(SEED + 100), lop_campaigns))
    foot = f"\nSimulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    save(
        "aa_campaigns" + ("-quick" if args.quick else ""),
        "A/A campaigns: the gate against the field's rules",
        head + "".join(body) + foot,
    )


if __name__ == "__main__":
    main()
