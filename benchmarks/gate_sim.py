"""The simulated world of the gate benchmarks: scores, Ratchet's gate, and the field's rules.

Ratchet's rules call Ratchet's own code: `ratchet.core.stats.paired` (sign_flip_test on a 2-D batch,
binary_margin_test, i.e. exact McNemar at margin 0), `ratchet.core.stats.sequential` (boundaries,
walk_looks), `ratchet.core.stats.multiplicity.trial_level` and `ratchet.core.gate_design.confirmation_looks`: the
batched path tests/core/stats/test_simulation.py checks against `ratchet.core.gate.decide`. The field's
rules are a few lines each over the same simulated scores.

The model (one unit = one seed; direction max):
    score(variant, seed) = MU + true mean of the variant + seed effect + run noise
- seed effect ~ N(0, SEED_SD), shared by every variant measured on that seed (a paired design
  cancels it, an unpaired comparison does not);
- run noise: Gaussian with SD 1/sqrt(2), or t with 2 d.f. scaled by 1/sqrt(2) (infinite variance:
  "SD" then means this scale), fixed per (variant, seed): runs are deterministic given the seed,
  like the digits benchmark, so re-running the champion on the same seed repeats its score;
- so the paired difference d = candidate - champion on one seed has SD 1 (Gaussian). Every effect
  and every gain below is in SDs of d, which are also metric units here.
- binary: a fixed set of N_EXAMPLES examples, example j passed with probability p_j ~ U(0.2, 0.95)
  on every run (a sampling model or agent: each run is a fresh draw). A variant's true score is
  its expected pass rate mean_j p_j; an A/A candidate has the same p_j, so it cannot drift.

Rules, for attempt t of a campaign of T attempts:
- ratchet before (campaign | trial; the rule before issues 14-15): fresh units every trial, looks
  LOOKS with the trial's level (trial_level(ALPHA, multiplicity, t, T)), Pocock spending, the plain
  sign-flip; an accepted trial that used n units is re-measured on fresh units with the looks
  (n, later looks) at the same level and promoted only if that accepts. 2 job-units per unit,
  confirmation included.
- ratchet after (the rule now): attempt t's level from multiplicity.attempt_level (online fallback),
  split between the trial and the confirmation (multiplicity.attempt_levels), linear spending, the
  guarded sign-flip (continuous), confirmation in one look of LOOKS[-1] fresh units
  (gate_design.confirmation_looks).
- keep-if-better (autoresearch-style): the candidate runs once (its own seed); promoted if its
  score beats the champion's recorded single score, which it then replaces. 1 job-unit.
- threshold 0.5%: champion and candidate run on one shared seed (the same for the whole
  campaign); promoted if the candidate's score is >= 0.5% above the champion's. 2 job-units.
- paired 0.05: the same paired test as the gate on FIXED_N fresh units, at 0.05 for every trial,
  no multiplicity control, no confirmation. 2 job-units per unit.
(binary: a "run" of the field's rules covers all N_EXAMPLES examples, 1 job-unit per example and
variant; Ratchet's units are examples drawn from the set.)
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per worker process: no oversubscription

import numpy as np  # noqa: E402

from ratchet.core.gate_design import confirmation_looks  # noqa: E402
from ratchet.core.stats.multiplicity import CONFIRM_SHARE, campaign_weight, trial_level  # noqa: E402
from ratchet.core.stats.paired import binary_margin_test, sign_flip_test  # noqa: E402
from ratchet.core.stats.sequential import ACCEPTED, boundaries, walk_looks  # noqa: E402
from ratchet.core.stats.skew import skew_corrected_p  # noqa: E402
from ratchet.core.stats.tail_guard import harmful_tail  # noqa: E402

ALPHA = 0.05
GUARDED = True  # the after rule runs `guarded_sign_flip` (the default test): the harmful-tail guard applies
LOOKS = (10, 20, 40)
FIXED_N = 40
MU = 100.0  # the metric's mean: the relative threshold of 0.5% is then 0.5 SD of d
SEED_SD = 1.0
NOISE_SCALE = 1 / math.sqrt(2)  # per-run noise: d = e_candidate - e_champion has SD 1 (Gaussian)
THRESHOLD_REL = 0.005
N_EXAMPLES = 200
MC_SEED = 20240601  # seeds the sign-flip Monte Carlo beyond 20 units (the gate uses the unit seed)
RULES = (
    "ratchet-campaign-before",
    "ratchet-campaign",
    "ratchet-trial-before",
    "ratchet-trial",
    "keep-if-better",
    "threshold-0.5%",
    "paired-0.05",
)
RULE_NAMES = {
    "ratchet-campaign-before": "before: Ratchet, `campaign` (harmonic levels, trial and confirmation at each, Pocock)",
    "ratchet-campaign": "after: Ratchet, `campaign` (split level, online fallback, linear spending)",
    "ratchet-trial-before": "before: Ratchet, `trial` (alpha for trial and confirmation each, Pocock)",
    "ratchet-trial": "after: Ratchet, `trial` (alpha split between trial and confirmation, linear spending)",
    "keep-if-better": "keep-if-better, one run each",
    "threshold-0.5%": "one shared seed, promote at >= 0.5% gain",
    "paired-0.05": "paired test at 0.05, 40 units, no multiplicity, no confirmation",
}


# -- p-values, in parallel -------------------------------------------------------------------------

_POOL = None
_CHUNK = 1024  # trials per task


def _p_chunk(args: tuple[np.ndarray, str]) -> np.ndarray:
    d, kind = args
    if kind == "binary":
        return np.asarray(binary_margin_test((d > 0).sum(1), (d < 0).sum(1), d.shape[1], 0.0), dtype=float)
    return np.asarray(sign_flip_test(d, 0.0, MC_SEED), dtype=float)


def workers() -> int:
    """Worker processes for p-values: the CPUs this process may use."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def p_values(d: np.ndarray, kind: str) -> np.ndarray:
    """One-sided p-values of H0: mean(d) <= 0 for each row of d (trials, units), by the gate's test:
    sign-flip (continuous) or exact McNemar (binary; d in {-1, 0, 1})."""
    global _POOL
    if d.shape[0] == 0:
        return np.ones(0)
    if kind == "binary" or d.shape[0] <= _CHUNK or workers() == 1:
        return _p_chunk((d, kind))
    if _POOL is None:
        import multiprocessing as mp

        _POOL = mp.get_context("fork").Pool(workers())
    chunks = [(d[i : i + _CHUNK], kind) for i in range(0, d.shape[0], _CHUNK)]
    return np.concatenate(_POOL.map(_p_chunk, chunks))


# -- Ratchet's gate, batched ----------------------------------------------------------------------


def thresholds(level: float, looks: Sequence[int], kind: str, spending: str = "linear") -> list[float]:
    """Each look's p-value threshold for a trial at `level` (stats.sequential.boundaries)."""
    return [m.increment for m in boundaries(level, looks, kind, 0.0, spending)]  # type: ignore[arg-type]


@dataclass
class LookPValues:
    """p-values of a batch of trials at each of `looks`, computed only where some rule can read them:
    look 1 for all, later looks only for trials not futile before (futility does not depend on the
    level), and FIXED_N for all when `fixed` (the fixed-n designs read it). d: (trials, >= looks[-1])."""

    d: np.ndarray
    kind: str
    fixed: bool = True
    looks: tuple[int, ...] = LOOKS
    p: np.ndarray = field(init=False)
    est: np.ndarray = field(init=False)
    guard: np.ndarray = field(init=False)
    skew_p: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        d = self.d
        self.est = np.stack([d[:, :n].mean(1) for n in self.looks], axis=1)
        self.guard = np.stack([np.asarray(harmful_tail(d[:, :n]), dtype=bool) for n in self.looks], axis=1)
        self.skew_p = (np.stack([np.asarray(skew_corrected_p(d[:, :n])) for n in self.looks], axis=1)
                       if self.kind == "continuous" else np.zeros((d.shape[0], len(self.looks))))
        self.p = np.ones((d.shape[0], len(self.looks)))
        alive = np.ones(d.shape[0], dtype=bool)
        for k, n in enumerate(self.looks):
            need = alive | (self.fixed and n == FIXED_N)
            rows = np.flatnonzero(need)
            self.p[rows, k] = p_values(d[rows, :n], self.kind)
            alive &= self.est[:, k] > 0.0


def sequential(
    p: LookPValues, levels: np.ndarray, spending: str = "linear", guarded: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(accepted, units) per trial under looks p.looks at each trial's level (walk_looks per level);
    guarded: `guarded_sign_flip` as gate rules 2 judge it: the harmful-tail guard applies, and Hall's
    skew-corrected t must reject too (p = the larger of the two)."""
    accepted = np.zeros(len(levels), dtype=bool)
    units = np.zeros(len(levels), dtype=np.int64)
    for level in np.unique(levels):
        rows = np.flatnonzero(levels == level)
        marks = thresholds(float(level), p.looks, p.kind, spending)
        pv = np.maximum(p.p[rows], p.skew_p[rows]) if guarded else p.p[rows]
        look, outcome = walk_looks(pv, p.est[rows], 0.0, marks, p.guard[rows] if guarded else None)
        accepted[rows] = outcome == ACCEPTED
        units[rows] = np.asarray(p.looks)[look]
    return accepted, units


def fixed_n(p: LookPValues, levels: np.ndarray, spending: str = "linear") -> np.ndarray:
    """accepted per trial with one look at FIXED_N units at each trial's level."""
    k = p.looks.index(FIXED_N)
    accepted = np.zeros(len(levels), dtype=bool)
    for level in np.unique(levels):
        rows = np.flatnonzero(levels == level)
        _, outcome = walk_looks(
            p.p[rows, k : k + 1], p.est[rows, k : k + 1], 0.0, thresholds(float(level), (FIXED_N,), p.kind, spending)
        )
        accepted[rows] = outcome == ACCEPTED
    return accepted


def confirmation_looks_before(looks: Sequence[int], units_used: int) -> tuple[int, ...]:
    """The confirmation's looks before issue 14: the trial's own units, then the later looks."""
    return (units_used, *(n for n in looks if n > units_used))


def confirm(
    d_fresh: np.ndarray,
    accepted: np.ndarray,
    units: np.ndarray,
    levels: np.ndarray,
    kind: str,
    looks: Sequence[int] = LOOKS,
    spending: str = "linear",
    guarded: bool = False,
    before: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Confirmation: each accepted trial that used `units` units of the design `looks` is re-measured
    on fresh units (its row of d_fresh) at its level, as a trial of its own, with the looks
    `ratchet.core.gate_design.confirmation_looks(looks, units)` (one look at looks[-1]), or with
    `before`, the rule before: (units, later looks), futility at their interim looks.
    Returns (promoted, confirmation units) per trial; both 0 where the trial was not accepted."""
    promoted = np.zeros(len(accepted), dtype=bool)
    used = np.zeros(len(accepted), dtype=np.int64)
    for n in np.unique(units[accepted]):
        rows = np.flatnonzero(accepted & (units == n))
        conf = confirmation_looks_before(looks, int(n)) if before else confirmation_looks(tuple(looks), int(n))
        conf_p = LookPValues(d_fresh[rows], kind, False, conf)
        promoted[rows], used[rows] = sequential(conf_p, levels[rows], spending, guarded)
    return promoted, used


def split(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(trial, confirmation) levels of attempts whose level is `levels` (multiplicity.attempt_levels)."""
    return levels ** (1.0 - CONFIRM_SHARE), levels**CONFIRM_SHARE


def fallback_campaigns(
    looks: LookPValues, fresh: np.ndarray, kind: str, shape: tuple[int, int], multiplicity: str
) -> tuple[np.ndarray, np.ndarray]:
    """The rule after issue 15, attempt by attempt (vectorised over campaigns): the level of attempt t
    is multiplicity.attempt_level (online fallback: a promotion passes its level on), split between
    trial and confirmation, linear spending. Rows of looks / fresh are (campaign, attempt) flattened.
    Returns (promoted, job-units) per row."""
    campaigns, attempts = shape
    promoted = np.zeros(campaigns * attempts, dtype=bool)
    job_units = np.zeros(campaigns * attempts, dtype=np.int64)
    carried = np.zeros(campaigns)
    for t in range(attempts):
        rows = np.arange(campaigns) * attempts + t
        if multiplicity == "trial":
            level = np.full(campaigns, ALPHA)
        else:
            level = ALPHA * campaign_weight(t + 1, attempts) + carried
        trial, conf = split(level)
        sub = LookPValues.__new__(LookPValues)
        sub.d, sub.kind, sub.fixed, sub.looks = looks.d[rows], looks.kind, False, looks.looks
        sub.p, sub.est, sub.guard, sub.skew_p = looks.p[rows], looks.est[rows], looks.guard[rows], looks.skew_p[rows]
        guarded = GUARDED and kind == "continuous"  # binary scores keep their exact tests, no guard
        accepted, units = sequential(sub, trial, "linear", guarded)
        conf_levels = np.where(accepted, conf, 1.0)
        prom, conf_units = confirm(fresh[rows], accepted, units, conf_levels, kind, LOOKS, "linear", guarded)
        promoted[rows], job_units[rows] = prom, 2 * (units + conf_units)
        carried = np.where(prom, level, 0.0)
    return promoted, job_units


def campaign_levels(multiplicity: str, attempts: int) -> np.ndarray:
    """The level of trials 1..attempts (stats.multiplicity.trial_level, alpha ALPHA)."""
    return np.array([trial_level(ALPHA, multiplicity, t, attempts) for t in range(1, attempts + 1)])  # type: ignore[arg-type]


# -- the world -------------------------------------------------------------------------------------


def noise(rng: np.random.Generator, shape: tuple[int, ...], distribution: str) -> np.ndarray:
    """Per-run noise: Gaussian or t(2), scale NOISE_SCALE."""
    if distribution == "gaussian":
        return rng.normal(0.0, NOISE_SCALE, shape)
    return NOISE_SCALE * rng.standard_t(2, shape)


LOPSIDED = {"left-5%": (0.05, 1.0), "left-10%": (0.10, 1.0), "right-5%": (0.05, -1.0), "right-10%": (0.10, -1.0)}
"""Lopsided nulls (issue 14): d = s * (+1 w.p. 1 - q, -(1 - q)/q w.p. q) + noise, mean 0; s = +1 wins a
little on most units and loses a lot on a few (left-skewed), s = -1 the mirror (right-skewed)."""
LOPSIDED_NOISE_CAP = 4.0  # the N(0, 1) noise of a lopsided null is truncated to +-4 SD (a bounded metric)


def paired_d(rng: np.random.Generator, effect: np.ndarray, n: int, distribution: str) -> np.ndarray:
    """Paired differences on n fresh seeds per trial: effect + e_candidate - e_champion (the seed
    effect cancels), or effect + a lopsided null (LOPSIDED). effect: (trials,) true mean gain."""
    shape = (len(effect), n)
    if distribution in LOPSIDED:
        q, sign = LOPSIDED[distribution]
        base = np.where(rng.random(shape) < q, -(1 - q) / q, 1.0) * sign
        return effect[:, None] + base + np.clip(rng.normal(0.0, 1.0, shape), -LOPSIDED_NOISE_CAP, LOPSIDED_NOISE_CAP)
    return effect[:, None] + noise(rng, shape, distribution) - noise(rng, shape, distribution)


def example_probs(rng: np.random.Generator) -> np.ndarray:
    """Per-example pass probabilities of the fixed example set."""
    return rng.uniform(0.2, 0.95, N_EXAMPLES)


def binary_d(rng: np.random.Generator, probs: np.ndarray, trials: int, n: int) -> np.ndarray:
    """Paired pass/fail differences (candidate - champion, in {-1, 0, 1}) of an A/A trial on n
    distinct examples drawn from the set (both variants pass example j with probability p_j)."""
    out = np.empty((trials, n), dtype=np.int8)
    for start in range(0, trials, 4096):
        rows = min(4096, trials - start)
        if n < len(probs):
            p = probs[np.argpartition(rng.random((rows, len(probs))), n, axis=1)[:, :n]]
        else:
            p = np.broadcast_to(probs, (rows, len(probs)))
        out[start : start + rows] = (rng.random(p.shape) < p).astype(np.int8) - (rng.random(p.shape) < p)
    return out


# -- campaigns ---------------------------------------------------------------------------------------


@dataclass
class RuleOutcome:
    """Per campaign: promotions, false promotions (of candidates with no real gain), the final
    champion's true gain over the baseline, the gain the rule itself claims, job-units spent."""

    promotions: np.ndarray
    false: np.ndarray
    true_gain: np.ndarray
    claimed: np.ndarray
    job_units: np.ndarray


def ratchet_campaigns(
    rng: np.random.Generator, effects: np.ndarray, distribution: str, probs: np.ndarray | None = None
) -> dict[str, RuleOutcome]:
    """Ratchet (campaign and trial multiplicity) and the paired-0.05 rule on the same draws.

    effects: (campaigns, attempts) true gain of each candidate over the champion it faces (SDs of
    d). Paired rules judge each trial on its own fresh units, so trials are independent given the
    effects and the whole campaign is one batch. binary: A/A only (effects all 0), probs given.
    """
    campaigns, attempts = effects.shape
    flat = effects.reshape(-1)
    kind = "binary" if distribution == "binary" else "continuous"
    if kind == "binary":
        assert probs is not None and not flat.any(), "binary campaigns are A/A only"
        d = binary_d(rng, probs, len(flat), FIXED_N)
        fresh = binary_d(rng, probs, len(flat), FIXED_N)
        d_full = binary_d(rng, probs, len(flat), N_EXAMPLES)
    else:
        d = paired_d(rng, flat, FIXED_N, distribution)
        fresh = paired_d(rng, flat, FIXED_N, distribution)
        d_full = d
    looks = LookPValues(d, kind, fixed=kind != "binary")
    out = {}
    for multiplicity in ("campaign", "trial"):
        levels = np.tile(campaign_levels(multiplicity, attempts), campaigns)
        accepted, units = sequential(looks, levels, "pocock")
        promoted, confirm_units = confirm(fresh, accepted, units, levels, kind, LOOKS, "pocock", before=True)
        job_units = 2 * (units + confirm_units)
        out[f"ratchet-{multiplicity}-before"] = _paired_outcome(
            rng,
            promoted,
            flat,
            fresh,
            units,
            job_units,
            (campaigns, attempts),
            distribution,
            probs,
            holdout=True,
        )
        promoted, job_units = fallback_campaigns(looks, fresh, kind, (campaigns, attempts), multiplicity)
        out[f"ratchet-{multiplicity}"] = _paired_outcome(
            rng,
            promoted,
            flat,
            fresh,
            units,
            job_units,
            (campaigns, attempts),
            distribution,
            probs,
            holdout=True,
        )
    n_full = d_full.shape[1]
    p_full = looks.p[:, LOOKS.index(FIXED_N)] if kind != "binary" else p_values(d_full, kind)
    promoted = p_full <= ALPHA
    units = np.full(len(flat), n_full)
    out["paired-0.05"] = _paired_outcome(
        rng,
        promoted,
        flat,
        d_full,
        units,
        2 * units,
        (campaigns, attempts),
        distribution,
        probs,
        holdout=False,
    )
    return out


def _paired_outcome(
    rng, promoted, flat, d_used, units, job_units, shape, distribution, probs, holdout
) -> RuleOutcome:
    """Campaign totals of a paired rule. claimed: Ratchet's headline is the holdout (the final
    champion against the baseline on FIXED_N fresh units, only when something was promoted); the
    paired-0.05 loop claims the sum of the estimates it promoted on."""
    campaigns, attempts = shape
    promoted2 = promoted.reshape(shape)
    gains = flat.reshape(shape)
    true_gain = (gains * promoted2).sum(1)
    if holdout:
        if distribution == "binary":
            noise_mean = binary_d(rng, probs, campaigns, FIXED_N).mean(1)
        else:
            noise_mean = paired_d(rng, np.zeros(campaigns), FIXED_N, distribution).mean(1)
        claimed = np.where(promoted2.any(1), true_gain + noise_mean, 0.0)
    else:  # every trial used all of d_used's units
        per_trial = np.zeros(len(flat))
        per_trial[promoted] = d_used[promoted].mean(1)
        claimed = per_trial.reshape(shape).sum(1)
    return RuleOutcome(
        promoted2.sum(1),
        (promoted2 & (gains == 0)).sum(1),
        true_gain,
        claimed,
        job_units.reshape(shape).sum(1),
    )


def record_campaigns(
    rng: np.random.Generator, effects: np.ndarray, distribution: str, probs: np.ndarray | None = None
) -> dict[str, RuleOutcome]:
    """keep-if-better and threshold-0.5%: the champion's recorded single score is what a candidate
    must beat, so they are simulated attempt by attempt (vectorised over campaigns)."""
    campaigns, attempts = effects.shape
    out = {}
    for rule in ("keep-if-better", "threshold-0.5%"):
        true = np.zeros(campaigns)
        shared = rng.normal(0.0, SEED_SD, campaigns) if rule == "threshold-0.5%" else None
        score = _single_scores(rng, true, distribution, probs, shared)
        start = score.copy()
        promotions = np.zeros(campaigns, dtype=np.int64)
        false = np.zeros(campaigns, dtype=np.int64)
        for t in range(attempts):
            cand_true = true + effects[:, t]
            cand = _single_scores(rng, cand_true, distribution, probs, shared)
            win = cand > score if rule == "keep-if-better" else cand >= score * (1 + THRESHOLD_REL)
            promotions += win
            false += win & (effects[:, t] == 0)
            true = np.where(win, cand_true, true)
            score = np.where(win, cand, score)
        per_attempt = (1 if rule == "keep-if-better" else 2) * (N_EXAMPLES if distribution == "binary" else 1)
        out[rule] = RuleOutcome(
            promotions, false, true, score - start, np.full(campaigns, per_attempt * attempts)
        )
    return out


def _single_scores(rng, true, distribution, probs, shared) -> np.ndarray:
    """One run's score per campaign. Continuous: MU + true + seed effect + noise (the shared seed's
    effect for the threshold rule, a fresh seed otherwise). Binary: the pass rate on the whole set
    (true is 0 for A/A; each example j passes with p_j)."""
    n = len(true)
    if distribution == "binary":
        return (rng.random((n, len(probs))) < probs).mean(1)  # the pass rate on the set
    seed = shared if shared is not None else rng.normal(0.0, SEED_SD, n)
    return MU + true + seed + noise(rng, (n,), distribution)


def run_rules(rng: np.random.Generator, effects: np.ndarray, distribution: str) -> dict[str, RuleOutcome]:
    """Every rule on one set of campaigns (effects: (campaigns, attempts))."""
    probs = example_probs(rng) if distribution == "binary" else None
    out = ratchet_campaigns(rng, effects, distribution, probs)
    out.update(record_campaigns(rng, effects, distribution, probs))
    return {rule: out[rule] for rule in RULES}


def mean_se(values: np.ndarray) -> tuple[float, float]:
    """Mean and its standard error."""
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values))) if len(
        values
    ) > 1 else 0.0


def fmt(mean: float, se: float, digits: int = 1) -> str:
    """`mean ± se` with `digits` decimals."""
    return f"{mean:.{digits}f} ± {se:.{digits}f}"
