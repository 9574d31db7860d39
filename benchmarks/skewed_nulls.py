"""Skewed nulls: how often the default gate promotes a mean-zero candidate whose paired differences
are skewed, and what a skew-robust second requirement would change.

The default test (`guarded_sign_flip`: sign-flip permutation test plus the harmful-tail guard, looks
10/20/40, linear spending, confirmation on 40 fresh units, campaign multiplicity with harmonic
weights and the online fallback) is exact only when d - m is symmetric. For each mean-zero family
below, runs of 20 attempts are simulated with the gate's own functions (gate_sim.py: sign_flip_test,
harmful_tail, boundaries, walk_looks, campaign_weight, the trial/confirmation split); every
promotion is false. Each rule is judged on the same simulated d.

Rules:
- before: `guarded_sign_flip` of gate rules 1 (sign-flip and the fixed 6-robust-SD guard);
- guard only: the sign-flip with gate rules 2's harmful-tail guard, no second requirement;
- default: `guarded_sign_flip` of gate rules 2: rules 2's guard, and Hall's skewness-corrected
  studentized test must reject too at the look's threshold (`skew.skew_corrected_p`: Hall 1992,
  JRSS-B 54:221, the monotone form of Johnson 1978, JASA 73:536; t_{n-1} reference), at every look
  and in the confirmation;
- bootstrap-t: rules 2's guard with a bootstrap-t p-value as the second requirement instead (BOOT
  resamples, Efron & Tibshirani 1993 §12.5), the alternative considered.

Also: the sample skewness G1 (ratchet.core.stats.skew.sample_skewness) each family shows over 20 and 40
units, and how often it crosses the warning threshold; and power at a 0.5 SD Gaussian gain (trial 1
of 20, confirmation included) for each rule.

    python benchmarks/skewed_nulls.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_sim as g  # noqa: E402
import numpy as np  # noqa: E402
from _common import cp, save, table  # noqa: E402

from ratchet.core.stats.multiplicity import campaign_weight  # noqa: E402
from ratchet.core.stats.skew import SKEW_MIN_UNITS, SKEW_WARN, sample_skewness, skew_corrected_p  # noqa: E402

RUNS, QUICK_RUNS = 2000, 150
ATTEMPTS = 20
POWER_TRIALS, QUICK_POWER_TRIALS = 4000, 300
GAIN = 0.5  # the power row's true mean gain, in SDs of d
BOOT = 2000  # bootstrap-t resamples: the p-value floor 1/(BOOT + 1) is below every threshold at 20 attempts
SEED = 20261202
E_HALF = math.exp(0.5)  # mean of a lognormal(0, 1)
LOGNORMAL_SKEW = (math.e + 2.0) * math.sqrt(math.e - 1.0)  # skewness of any lognormal with sigma 1


def _two_point(rng: np.random.Generator, shape: tuple[int, int], win: float, loss: float, q: float) -> np.ndarray:
    return np.where(rng.random(shape) < q, loss, win)


FAMILIES: dict[str, tuple[str, float, Callable[[np.random.Generator, tuple[int, int]], np.ndarray]]] = {
    "gaussian": ("N(0, 1) (symmetric reference)", 0.0, lambda r, s: r.normal(0.0, 1.0, s)),
    "t2": ("t(2) (symmetric, heavy-tailed reference)", 0.0, lambda r, s: r.standard_t(2, s)),
    "lognormal-left": ("e^0.5 - lognormal(0, 1): left-skewed", -LOGNORMAL_SKEW,
                       lambda r, s: E_HALF - r.lognormal(0.0, 1.0, s)),
    "lognormal-right": ("lognormal(0, 1) - e^0.5: right-skewed", LOGNORMAL_SKEW,
                        lambda r, s: r.lognormal(0.0, 1.0, s) - E_HALF),
    "exp-left": ("1 - Exp(1): left-skewed", -2.0, lambda r, s: 1.0 - r.exponential(1.0, s)),
    "exp-right": ("Exp(1) - 1: right-skewed", 2.0, lambda r, s: r.exponential(1.0, s) - 1.0),
    "gamma2-left": ("2 - Gamma(2): left-skewed", -math.sqrt(2.0), lambda r, s: 2.0 - r.gamma(2.0, 1.0, s)),
    "gamma2-right": ("Gamma(2) - 2: right-skewed", math.sqrt(2.0), lambda r, s: r.gamma(2.0, 1.0, s) - 2.0),
    "rare-noise1": ("+0.1 w.p. 0.99 / -9.9 w.p. 0.01, plus N(0, 1)", -3.46,
                    lambda r, s: _two_point(r, s, 0.1, -9.9, 0.01) + r.normal(0.0, 1.0, s)),
    "rare-noise0.1": ("+0.1 w.p. 0.99 / -9.9 w.p. 0.01, plus N(0, 0.1^2)", -9.70,
                      lambda r, s: _two_point(r, s, 0.1, -9.9, 0.01) + r.normal(0.0, 0.1, s)),
    "lopsided-5%": ("+1 w.p. 0.95 / -19 w.p. 0.05, plus N(0, 1) cut at +-4", -3.82,
                    lambda r, s: g.paired_d(r, np.zeros(s[0]), s[1], "left-5%")),
}
"""name -> (description, population skewness, sampler (rng, (rows, units)) -> mean-zero d). The
two-point families' skewness is that of the mixture with its noise (third moment over variance**1.5)."""

RULES = ("before", "guard", "default", "boot")
RULE_NAMES = {"before": "before (rules 1)", "guard": "rules 2's guard only",
              "default": "default (rules 2: guard + Hall t)", "boot": "rules 2's guard + bootstrap-t"}
SECOND = {"default": "hall", "boot": "boot"}
"""The rules with a second requirement, and which robust p-value it is."""



def boot_p(x: np.ndarray, rng_seed: int = SEED) -> np.ndarray:
    """Bootstrap-t p-value of H0: mean <= 0 per row of x (rows, n): T = sqrt(n) mean / s against
    T* = sqrt(n) (mean* - mean) / s* over BOOT resamples (the same multinomial counts for every row),
    p = (1 + #{T* >= T}) / (BOOT + 1); a resample with s* = 0 counts as T* = +inf (conservative).
    Source: Efron & Tibshirani (1993), An Introduction to the Bootstrap, §12.5."""
    rows, n = x.shape
    counts = np.random.default_rng(rng_seed).multinomial(n, np.full(n, 1.0 / n), BOOT).astype(float)
    mean = x.mean(1)
    s = x.std(1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_obs = np.where(s > 0, math.sqrt(n) * mean / s, np.where(mean > 0, np.inf, -np.inf))
    out = np.empty(rows)
    for start in range(0, rows, 2048):
        sl = slice(start, start + 2048)
        m1 = x[sl] @ counts.T / n
        m2 = (x[sl] ** 2) @ counts.T / n
        sd = np.sqrt(np.maximum(m2 - m1**2, 0.0) * n / (n - 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            t_star = np.where(sd > 1e-12 * (np.abs(x[sl]).max(1, keepdims=True) + 1e-300),
                              math.sqrt(n) * (m1 - mean[sl, None]) / sd, np.inf)
        out[sl] = (1.0 + (t_star >= t_obs[sl, None]).sum(1)) / (BOOT + 1.0)
    return out


ROBUST = {"hall": lambda x: np.asarray(skew_corrected_p(x)), "boot": boot_p}


@dataclass
class Looks:
    """p-values of a batch of trials at each look, one array per rule (what gate_sim.sequential reads):
    the sign-flip at every look a trial reaches (futility does not depend on the level), the
    robust p-values everywhere; a rule's p is the larger of the sign-flip's and its robust test's."""

    d: np.ndarray
    looks: tuple[int, ...]
    kind: str = "continuous"

    def __post_init__(self) -> None:
        base = g.LookPValues(self.d, "continuous", fixed=False, looks=self.looks)
        self.est, self.guard, self.sign_flip = base.est, base.guard, base.p
        self.guard1 = np.stack([np.asarray(g.harmful_tail(self.d[:, :n], 1), dtype=bool) for n in self.looks], axis=1)
        self.robust = {r: np.stack([f(self.d[:, :n]) for n in self.looks], axis=1) for r, f in ROBUST.items()}

    def view(self, rule: str, rows: np.ndarray) -> g.LookPValues:
        """The rule's p-values and guard for `rows`, as gate_sim.sequential(guarded=True) reads them:
        its skew_p is the rule's second requirement (zeros: none)."""
        out = g.LookPValues.__new__(g.LookPValues)
        out.d, out.kind, out.fixed, out.looks = self.d[rows], "continuous", False, self.looks
        out.p, out.est = self.sign_flip[rows], self.est[rows]
        out.guard = (self.guard1 if rule == "before" else self.guard)[rows]
        out.skew_p = self.robust[SECOND[rule]][rows] if rule in SECOND else np.zeros_like(out.p)
        return out


def campaigns(d: Looks, fresh: Looks, runs: int, attempts: int, rule: str) -> np.ndarray:
    """promoted per (run, attempt) row under `rule` (gate_sim.fallback_campaigns with the rule's p):
    attempt t's level alpha w_t (+ the level of a promoted previous attempt), split sqrt between the
    trial and its confirmation on fresh units (one look at 40)."""
    promoted = np.zeros(runs * attempts, dtype=bool)
    carried = np.zeros(runs)
    for t in range(attempts):
        rows = np.arange(runs) * attempts + t
        level = g.ALPHA * campaign_weight(t + 1, attempts) + carried
        trial, conf = g.split(level)
        accepted, _ = g.sequential(d.view(rule, rows), trial, "linear", guarded=True)
        sub = rows[accepted]
        ok = np.zeros(len(rows), dtype=bool)
        if len(sub):
            ok[accepted], _ = g.sequential(fresh.view(rule, sub), conf[accepted], "linear", guarded=True)
        promoted[rows] = ok
        carried = np.where(ok, level, 0.0)
    return promoted




def fresh_looks(fresh: np.ndarray, trial: Looks) -> Looks:
    """The confirmation's p-values, computed only for rows some rule accepts in its trial (the costly
    40-unit sign-flip); other rows stay at p = 1."""
    everything = np.arange(fresh.shape[0])
    top = g.split(np.full(len(everything), g.ALPHA))[0]  # no attempt's level exceeds alpha, carried or not
    any_trial = np.zeros(len(everything), dtype=bool)
    for rule in ("before", "guard"):  # the rules with no second requirement accept the most
        any_trial |= g.sequential(trial.view(rule, everything), top, "linear", True)[0]
    conf = Looks.__new__(Looks)
    conf.d, conf.looks, conf.kind = fresh, (g.LOOKS[-1],), "continuous"
    n = g.LOOKS[-1]
    conf.est = fresh[:, :n].mean(1)[:, None]
    conf.guard = np.asarray(g.harmful_tail(fresh[:, :n]), dtype=bool)[:, None]
    conf.guard1 = np.asarray(g.harmful_tail(fresh[:, :n], 1), dtype=bool)[:, None]
    conf.sign_flip = np.ones((fresh.shape[0], 1))
    conf.robust = {r: np.ones((fresh.shape[0], 1)) for r in ROBUST}
    idx = np.flatnonzero(any_trial)
    if len(idx):
        conf.sign_flip[idx, 0] = g.p_values(fresh[idx, :n], "continuous")
        for r, f in ROBUST.items():
            conf.robust[r][idx, 0] = f(fresh[idx, :n])
    return conf


def null_rows(rng: np.random.Generator, runs: int) -> tuple[list[list[str]], list[list[str]], dict[str, dict]]:
    """Per family: the false-promotion table rows (per attempt and per run, each rule), the skewness
    rows, and the raw counts (for the summary)."""
    rows, skew_rows, raw = [], [], {}
    for name, (label, population, sample) in FAMILIES.items():
        began = time.perf_counter()
        shape = (runs * ATTEMPTS, g.LOOKS[-1])
        d, fresh = sample(rng, shape), sample(rng, shape)
        trial = Looks(d, g.LOOKS)
        conf = fresh_looks(fresh, trial)
        cells, raw[name] = [], {}
        for rule in RULES:
            promoted = campaigns(trial, conf, runs, ATTEMPTS, rule)
            per_run = int(promoted.reshape(runs, ATTEMPTS).any(1).sum())
            raw[name][rule] = (int(promoted.sum()), per_run)
            cells += [cp(int(promoted.sum()), runs * ATTEMPTS, 1), cp(per_run, runs, 1)]
        rows.append([f"{label}", f"{population:+.2f}", *cells])
        g20 = sample_skewness(d[:, :20])
        g40 = sample_skewness(d[:, :40])
        assert isinstance(g20, np.ndarray) and isinstance(g40, np.ndarray)
        fires20, fires40 = int((np.abs(g20) > SKEW_WARN).sum()), int((np.abs(g40) > SKEW_WARN).sum())
        raw[name]["typical40"] = float(np.nanmedian(g40))
        skew_rows.append([label, f"{population:+.2f}", f"{np.nanmedian(g20):+.2f}", f"{np.nanmedian(g40):+.2f}",
                          cp(fires20, len(g20), 1), cp(fires40, len(g40), 1)])
        print(f"{name}: {time.perf_counter() - began:.0f} s", flush=True)
    return rows, skew_rows, raw


def power_rows(rng: np.random.Generator, trials: int) -> list[list[str]]:
    """P(trial 1 of 20 promotes) at a GAIN SD Gaussian gain, confirmation included, per rule."""
    d = g.paired_d(rng, np.full(trials, GAIN), g.LOOKS[-1], "gaussian")
    fresh = g.paired_d(rng, np.full(trials, GAIN), g.LOOKS[-1], "gaussian")
    trial, conf = Looks(d, g.LOOKS), None
    level = np.full(trials, g.ALPHA * campaign_weight(1, ATTEMPTS))
    first, second = g.split(level)
    out = []
    for rule in RULES:
        accepted, _ = g.sequential(trial.view(rule, np.arange(trials)), first, "linear", True)
        if conf is None:
            conf = Looks(fresh, (g.LOOKS[-1],))
        idx = np.flatnonzero(accepted)
        ok, _ = g.sequential(conf.view(rule, idx), second[idx], "linear", True)
        out.append([RULE_NAMES[rule], cp(int(ok.sum()), trials, 1)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke test)")
    args = parser.parse_args()
    runs = QUICK_RUNS if args.quick else RUNS
    start = time.perf_counter()
    rows, skew_rows, raw = null_rows(np.random.default_rng(SEED), runs)
    power = power_rows(np.random.default_rng(SEED + 1), QUICK_POWER_TRIALS if args.quick else POWER_TRIALS)
    heads = ["family (mean 0)", "skewness"]
    for rule in RULES:
        heads += [f"{RULE_NAMES[rule]}: per attempt %", f"{RULE_NAMES[rule]}: per run %"]
    body = (
        f"Every candidate has mean gain 0 (margin 0): any promotion is false. {runs:,} runs of {ATTEMPTS} "
        f"attempts per family ({runs * ATTEMPTS:,} attempts), gate.units {list(g.LOOKS)}, alpha {g.ALPHA}, "
        "campaign multiplicity (harmonic weights, online fallback), confirmation on 40 fresh units, "
        "linear spending, the harmful-tail guard on. Rates in % with two-sided 95% Clopper-Pearson "
        "intervals; *per attempt*: promoted attempts over all attempts (its interval treats the attempts "
        "of a run as independent, which they are until a promotion passes its level on); *per run*: runs "
        "that promoted anything. *Skewness*: the family's own (population) skewness. The default is exact only for "
        "symmetric d; a rule with a second requirement accepts only when the sign-flip and its test both reject.\n\n"
        "## False promotions\n\n" + table(heads, rows)
        + f"\n## Power: {GAIN} SD Gaussian gain, trial 1 of {ATTEMPTS} (confirmation included), "
        f"{QUICK_POWER_TRIALS if args.quick else POWER_TRIALS:,} trials\n\n"
        + table(["rule", "P(promoted) % [95% CP]"], power)
        + f"\n## What a trial records: sample skewness G1 (`trial.judged` data.skewness)\n\n"
        f"Median G1 over the first 20 and 40 units of each simulated trial, and how often |G1| > {SKEW_WARN} "
        f"(the warning's threshold; it warns from {SKEW_MIN_UNITS} units). On the symmetric references this "
        "is the warning's false-alarm rate. Rare-loss families usually show no loss in 40 units, so "
        "their samples look symmetric: no recorded skewness can point to them.\n\n"
        + table(["family", "skewness", "median G1, 20 units", "median G1, 40 units", "|G1| > 1 over 20 units %",
                 "|G1| > 1 over 40 units %"], skew_rows)
    )
    summary = ["", "## Raw counts (false promotions per attempt, runs that promoted)", ""]
    for name, counts in raw.items():
        summary.append(f"- {name}: " + ", ".join(f"{r} {counts[r][0]} / {counts[r][1]}" for r in RULES)
                       + f"; median G1 over 40 units {counts['typical40']:+.2f}")
    foot = f"\n\nSimulation: seed {SEED}, {time.perf_counter() - start:.0f} s.\n"
    save("skewed_nulls" + ("-quick" if args.quick else ""), "Skewed nulls: false promotions of the default test",
         body + "\n".join(summary) + foot)


if __name__ == "__main__":
    main()
