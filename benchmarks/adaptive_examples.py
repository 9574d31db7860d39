"""Adaptive agents against the examples gate: P(the run promotes a null), before and after.

An examples target's units are pass/fail examples split into dev / val / test; there is no
confirmation (no fresh val examples exist), so what an agent is shown of val is what it can overfit.
This script runs two adaptive agents against the gate under two measurement designs and counts the
runs that promote a candidate no better than the champion on the population.

The gate is Ratchet's own code, batched over runs: `stats.per_look.LookTest("binary", ...)` (exact
McNemar, margin 0) at each look of `gate.units` clamped to the val size (`targets.examples.clamp_looks`),
thresholds from `gate.look_boundaries` (linear spending), attempt t's level from
`stats.multiplicity.attempt_levels(alpha, "campaign", t, T, history, confirm=False)`, futility at
interim looks and the verdict from `stats.sequential.walk_looks`.

The model (one run; every quantity independent across runs):
- population: examples drawn i.i.d.; the champion passes each with probability P0 = 0.7 (its
  population pass rate); dev and val are independent samples of n_dev and n_val examples.
- a candidate is an answer vector; a null perturbation (`Model`) changes each answer with a
  probability that may depend on whether it is right, and a changed answer is right with a
  probability that may depend on whether it was, such that the expected pass rate stays P0 (on the
  population, and composed any number of times: correctness is a two-state Markov chain with
  stationary P0). Three models, each with 6% of examples discordant per perturbation:
  - `touch` ("random null perturbations"): each answer changed w.p. TOUCH = 0.1 whether right or
    not; a changed wrong answer becomes right, a changed right answer becomes wrong w.p. 3/7;
  - `independent`: each answer changed w.p. 1/7 to an alternative right w.p. P0 independently of
    the champion's;
  - `flip` (binary labels, every change flips correctness): wrong answers flipped w.p. 0.1, right
    ones w.p. 0.043. Here how often perturbations change an answer says how likely it is wrong, so a
    combination of perturbations can be truly better (or worse) than the champion on the
    population: each boosting final's exact population gain is computed (`final_gain`), and only
    finals with gain <= 0 count as nulls (a promoted better final is not a false promotion).
- an agent knows its answers and the champion's (so which examples each candidate changed), not
  which are right.

Designs (what a trial measures, what the agent is shown):
- before (today): every trial measures the whole val set in its own random order (looks =
  gate.units clamped to n_val); the agent sees each attempt's val pass rate over the units its
  trial used (`candidate_mean`) and its verdict.
- after: the agent sees each candidate's dev pass rate and of val only whether it was promoted; val
  is cut into n_val // looks[-1] disjoint blocks of looks[-1] examples; trials up to the first
  promotion use block 1 (in their own random order), each promotion moves to the next block, and
  with none left no val trial runs.
- fresh (reference, not a design Ratchet can run): every trial measures looks[-1] fresh examples of
  the population; the agent sees the pass rate over the units used, as before.
A run stops counting at its first false promotion, hence in the null campaigns after-trials all
use block 1 and every history is `not_promoted`.

Agents (T attempts):
- boosting attack (Blum & Hardt 2015, "The Ladder: A Reliable Leaderboard for Machine Learning
  Competitions", ICML, the boosting attack): T - k null perturbations of the champion (probes),
  each shown score s_i; vote w_i = sign(s_i - mean s) (above average +1, below -1). Then k final
  candidates: per example, where the net vote of the probes that changed it is >= tau, the answer
  of the best-scoring probe among them (`flip`: they all give the same answer), elsewhere the
  champion's: Blum & Hardt's majority vote of the above-average probes, restricted to the examples
  the probes changed (a plain per-example majority of answers would return the champion's, since
  each probe keeps 90% of them). tau: the smallest net vote >= 1 at which the final changes at most
  FINAL_SHARE = 20% of the dev examples (the agent sees dev). Final 1 uses every probe, finals
  2..k a random FINAL_SUBSET = 75% of them. Before it votes on val pass rates, after on dev ones.
- hill climbing: attempt t submits a null perturbation of the best-seen candidate (the champion at
  first) and keeps it as best-seen when its shown score beats the best shown so far.
Under `touch` and `independent` every candidate is an exact null: perturbations of a null are
nulls, and a final's choice on a population example depends on which probes changed it, which
says nothing of which answer is right.

Cost in power: T = 20 attempts of a non-adaptive agent, each candidate a perturbation of the current
champion that is +GOOD_GAIN points of pass rate better with probability GOOD_SHARE (its wrong
answers flipped more often), otherwise a null with `flip`'s changes of correctness (the agent does
not adapt, so which answers changed plays no part); promotions and the true gain kept, before
against after (after: at most n_val // looks[-1] promotions).

    python benchmarks/adaptive_examples.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import clopper_pearson, save, table  # noqa: E402
from scipy.stats import binom  # noqa: E402

from ratchet.core.gate import GateSettings, look_boundaries  # noqa: E402
from ratchet.core.stats.multiplicity import attempt_levels  # noqa: E402
from ratchet.core.stats.per_look import LookTest  # noqa: E402
from ratchet.core.stats.sequential import ACCEPTED, walk_looks  # noqa: E402
from ratchet.targets.examples import clamp_looks  # noqa: E402

ALPHA = 0.05
P0 = 0.7  # the champion's population pass rate
TOUCH = 0.10  # `touch`: a null perturbation changes each answer with this probability
FLIP_WRONG = 0.10  # `flip`: a null perturbation flips a wrong answer with this probability
FLIP_RIGHT = FLIP_WRONG * (1 - P0) / P0  # ... and a right one with this: the pass rate stays P0
REPLACE = 0.6 * TOUCH / (2 * P0 * (1 - P0))  # `independent`: the same expected discordant share as `touch`
FINAL_SHARE = 0.2  # a boosting final changes at most this share of examples (the most voted for)
FINAL_SUBSET = 0.75  # boosting finals 2..k vote over this share of the probes, drawn per final
NULL_TOLERANCE = 1e-12  # a final whose exact population gain is at most this is a null (rounding)
GOOD_SHARE, GOOD_GAIN = 0.2, 0.05  # power campaign: P(a candidate is better), its gain in pass rate
POWER_ATTEMPTS = 20
SEED = 20
RUNS = 2000
"""Runs per cell: an after rate of 1% has its 95% CP upper bound near 1.5%, one of 4% near 4.9%, so
any after rate up to ~4% can show its upper bound at or below alpha = 5%."""
QUICK_RUNS = 40
ATTEMPTS = (20, 100)  # campaign lengths T of the null campaigns
QUICK_ATTEMPTS = (6, 10)  # --quick: short campaigns, so the smoke test takes seconds
CHUNK = 1000  # runs simulated at once (memory: the boosting probes hold (CHUNK, T, n_dev + n_val) bools)


@dataclass(frozen=True)
class Setting:
    """Split sizes and gate.units of one examples target."""

    name: str
    n_dev: int
    n_val: int
    units: tuple[int, ...]

    @property
    def looks(self) -> tuple[int, ...]:
        """gate.units clamped to the val size, as the examples target does."""
        return clamp_looks(self.units, self.n_val)

    @property
    def blocks(self) -> int:
        """Disjoint val blocks of looks[-1] examples (after): the most promotions a run can make."""
        return self.n_val // self.looks[-1]


SETTINGS = (
    Setting("dev 300, val 200, gate.units (50, 100, 180)", 300, 200, (50, 100, 180)),
    Setting("dev 300, val 200, gate.units (10, 20, 40) (the contract's default units)", 300, 200, (10, 20, 40)),
)
DESIGNS = ("before", "after", "fresh")
AGENTS = {"boost-1": "boosting attack, k = 1", "boost-5": "boosting attack, k = 5", "hill": "hill climbing"}


# -- the gate, batched over runs -------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def thresholds(level: float, looks: tuple[int, ...]) -> tuple[float, ...]:
    """Each look's p-value threshold for a binary trial at `level`, margin 0 (gate.look_boundaries)."""
    return tuple(m.increment for m in look_boundaries(GateSettings(looks, level, 0.0, "binary", "max", 0)))


@functools.lru_cache(maxsize=1024)
def null_level(attempt: int, attempts: int) -> float:
    """Attempt `attempt`'s trial level when no earlier attempt promoted (no confirmation)."""
    history = ["not_promoted"] * (attempt - 1)
    return attempt_levels(ALPHA, "campaign", attempt, attempts, history, confirm=False).trial  # type: ignore[arg-type]


def judge(d: np.ndarray, looks: tuple[int, ...], levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gate's verdict on each row of d (runs, >= looks[-1]): paired pass/fail differences in
    {-1, 0, 1}, in the trial's unit order, at the row's level (0: no trial). Returns (accepted,
    units used) per row. p-values are computed only where walk_looks can read them."""
    accepted = np.zeros(len(d), dtype=bool)
    units = np.zeros(len(d), dtype=np.int64)
    for level in np.unique(levels[levels > 0]):
        rows = np.flatnonzero(levels == level)
        x, marks = d[rows], thresholds(float(level), looks)
        test = LookTest("binary", "guarded_sign_flip", float(level), looks[-1], 0)
        est = np.stack([x[:, :n].mean(1) for n in looks], axis=1)
        p = np.ones(est.shape)
        open_ = np.ones(len(rows), dtype=bool)
        for k, n in enumerate(looks):
            idx = np.flatnonzero(open_)
            if len(idx):
                p[idx, k] = test.p_value(x[idx, :n], 0.0, marks[k] or None)
            open_ &= (p[:, k] > marks[k]) & (est[:, k] > 0.0)  # accepted or futile rows stop here
        look, outcome = walk_looks(p, est, 0.0, marks)
        accepted[rows] = outcome == ACCEPTED
        units[rows] = np.asarray(looks)[look]
    return accepted, units


# -- the model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """How a null perturbation changes answers, per example: an answer is changed with probability
    touch_right (it was right) or touch_wrong (wrong); a changed answer is right with probability
    stays_right (it was right) or becomes_right (wrong). Null: P0 * touch_right * (1 - stays_right)
    == (1 - P0) * touch_wrong * becomes_right, so the expected pass rate stays P0."""

    name: str
    touch_right: float
    touch_wrong: float
    stays_right: float
    becomes_right: float
    text: str

    @property
    def fix(self) -> float:
        """P(a wrong answer becomes right) per perturbation."""
        return self.touch_wrong * self.becomes_right

    @property
    def brk(self) -> float:
        """P(a right answer becomes wrong) per perturbation."""
        return self.touch_right * (1 - self.stays_right)


MODELS = (
    Model("touch", TOUCH, TOUCH, 1 - (1 - P0) / P0, 1.0,
          "each answer changed w.p. 0.1 whether right or not; a changed wrong answer becomes right, a changed "
          "right one wrong w.p. 3/7"),
    Model("independent", REPLACE, REPLACE, P0, P0,
          "each answer changed w.p. 1/7 whether right or not, to an alternative right w.p. 0.7 "
          "independently of the champion's"),
    Model("flip", FLIP_RIGHT, FLIP_WRONG, 0.0, 1.0,
          "binary answers: a wrong answer flipped w.p. 0.1, a right one w.p. 0.043 (how often an answer "
          "changes says how likely it is wrong)"),
)
for _m in MODELS:
    assert abs(P0 * _m.brk - (1 - P0) * _m.fix) < 1e-12, f"{_m.name} is not a null perturbation"


def perturb(rng: np.random.Generator, x: np.ndarray, model: Model) -> tuple[np.ndarray, np.ndarray]:
    """A null perturbation of answers whose correctness is x (bool, any shape): (changed, new x)."""
    u = rng.random(x.shape, dtype=np.float32)
    touch = np.where(x, np.float32(model.touch_right), np.float32(model.touch_wrong))
    changed = u < touch
    # given u < touch, u / touch is uniform: one draw decides both the change and its correctness
    right = u < touch * np.where(x, np.float32(model.stays_right), np.float32(model.becomes_right))
    return changed, np.where(changed, right, x)


def after_steps(rng: np.random.Generator, c: np.ndarray, steps: np.ndarray, model: Model) -> np.ndarray:
    """Correctness on population examples (champion's c, (runs, n)) of a candidate `steps` (runs,)
    null perturbations away from the champion, from the closed form of the two-state Markov chain
    of correctness (stationary P0, eigenvalue 1 - fix - brk)."""
    right = P0 + (c - P0) * (1.0 - model.fix - model.brk) ** steps[:, None].astype(float)
    return rng.random(c.shape) < right


def net_votes(changed: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Per example, the net vote of the probes that changed it: changed (runs, probes, n), votes
    (runs, probes) in {-1, 0, 1}. Returns (runs, n) ints."""
    net = np.zeros((changed.shape[0], changed.shape[2]), dtype=np.int32)
    for i in range(changed.shape[1]):
        net += changed[:, i] * votes[:, i, None].astype(np.int32)
    return net


def vote_threshold(net_dev: np.ndarray) -> np.ndarray:
    """Per run, the smallest net vote tau >= 1 at which a final changes at most FINAL_SHARE of the dev
    examples: the agent's calibration, on examples it sees (net_dev: (runs, n_dev))."""
    top = int(net_dev.max(initial=1)) + 1
    taus = np.arange(1, top + 1)
    share = (net_dev[:, None, :] >= taus[None, :, None]).mean(2)  # (runs, taus)
    return taus[np.argmax(share <= FINAL_SHARE, axis=1)]


def combine(c: np.ndarray, changed: np.ndarray, px: np.ndarray, votes: np.ndarray, scores: np.ndarray,
            tau: np.ndarray) -> np.ndarray:
    """A boosting final's correctness on examples whose champion correctness is c (runs, n): where the
    net vote of the probes that changed an example is >= tau (runs,), the answer of the best-scoring
    probe among them (`flip`: they all give the same answer), elsewhere the champion's. changed, px:
    the probes' changes and correctness (runs, probes, n); votes, scores: (runs, probes)."""
    adopt = net_votes(changed, votes) >= tau[:, None]
    best = np.full(c.shape, -np.inf)
    out = c.copy()
    for i in range(changed.shape[1]):
        take = adopt & changed[:, i] & (votes[:, i, None] != 0) & (scores[:, i, None] > best)
        out = np.where(take, px[:, i], out)
        best = np.where(take, scores[:, i, None], best)
    return out


@functools.cache
def _adopt_chance(plus: int, minus: int, rate: float, tau: int) -> float:
    """P(Bin(plus, rate) - Bin(minus, rate) >= tau), tau >= 1."""
    below = np.cumsum(binom.pmf(np.arange(minus + 1), minus, rate))  # P(B <= b)
    a = np.arange(tau, plus + 1)
    return float(np.sum(binom.pmf(a, plus, rate) * below[np.minimum(a - tau, minus)]))


def final_gain(model: Model, votes: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Exact population gain in pass rate of boosting finals with these votes (runs, probes) and
    thresholds (runs,): a population example takes a probe's answer when the net vote of the probes
    that changed it is >= tau, each probe having changed it with probability touch_wrong (champion
    wrong) or touch_right (right), the answer taken being right w.p. becomes_right / stays_right.
    0 whenever touch_right == touch_wrong (which answers change says nothing of which are right)."""
    plus, minus = (votes > 0).sum(1), (votes < 0).sum(1)
    return np.array([(1 - P0) * model.becomes_right * _adopt_chance(int(a), int(b), model.touch_wrong, int(t))
                     - P0 * (1 - model.stays_right) * _adopt_chance(int(a), int(b), model.touch_right, int(t))
                     for a, b, t in zip(plus, minus, tau, strict=True)])


# -- one null campaign -----------------------------------------------------------------------------


@dataclass
class World:
    """One chunk of runs: the champion's correctness on dev then val (runs, n_dev + n_val)."""

    setting: Setting
    model: Model
    design: str
    attempts: int
    rng: np.random.Generator
    c: np.ndarray

    def trial_units(self, x: np.ndarray, fresh: Callable[[np.ndarray], np.ndarray]):
        """The units one trial of candidates with correctness x (runs, n_dev + n_val) measures, in
        its order: (champion's, candidate's correctness), each (runs, looks[-1] or n_val); fresh(c)
        gives the candidates' correctness on population examples whose champion correctness is c."""
        s, rng = self.setting, self.rng
        if self.design == "fresh":
            c = rng.random((len(x), s.looks[-1])) < P0
            return c, fresh(c)
        pool = slice(s.n_dev, s.n_dev + (s.n_val if self.design == "before" else s.looks[-1]))
        order = np.argsort(rng.random((len(x), pool.stop - pool.start), dtype=np.float32), axis=1)
        return np.take_along_axis(self.c[:, pool], order, axis=1), np.take_along_axis(x[:, pool], order, axis=1)

    def measure(self, x: np.ndarray, fresh: Callable[[np.ndarray], np.ndarray], attempt: int,
                units: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Attempt `attempt`'s trial of candidates x (see trial_units; `units` when already drawn).
        Returns (accepted, the score the agent is shown) per run."""
        c, cand = units if units is not None else self.trial_units(x, fresh)
        level = np.full(len(x), null_level(attempt, self.attempts))
        accepted, used = judge(cand.astype(np.int8) - c, self.setting.looks, level)
        if self.design == "after":
            return accepted, x[:, : self.setting.n_dev].mean(1)
        passes = np.cumsum(cand, axis=1)[np.arange(len(x)), used - 1]
        return accepted, passes / used


@dataclass
class FinalDiagnostics:
    """Boosting final 1, per run: its mean paired difference on the units its trial measures (all
    looks[-1] of them), and whether one trial of it at level ALPHA (the run's whole level, as if it
    were the only attempt) would accept it."""

    unit_gain: np.ndarray
    accepted_at_alpha: np.ndarray
    better_promoted: np.ndarray
    """Per run: some final whose population gain is > 0 was accepted (not a false promotion)."""


def boosting(w: World, k: int) -> tuple[np.ndarray, np.ndarray, FinalDiagnostics]:
    """The boosting attack with k finals. Returns (promoted a null: a probe, or a final whose
    population gain is <= 0, per run; population gain of each final in pass rate (runs, k);
    diagnostics of final 1)."""
    runs, probes, dev, looks = len(w.c), w.attempts - k, w.setting.n_dev, w.setting.looks
    changed = np.empty((runs, probes, w.c.shape[1]), dtype=bool)
    px = np.empty_like(changed)
    scores = np.empty((runs, probes))
    promoted = np.zeros(runs, dtype=bool)
    better = np.zeros(runs, dtype=bool)
    for i in range(probes):
        changed[:, i], px[:, i] = perturb(w.rng, w.c, w.model)
        accepted, scores[:, i] = w.measure(px[:, i], lambda c: perturb(w.rng, c, w.model)[1], i + 1)
        promoted |= accepted
    votes = np.sign(scores - scores.mean(1, keepdims=True)).astype(np.int8)
    gains = np.zeros((runs, k))
    for m in range(k):
        v = votes if m == 0 else np.where(w.rng.random(votes.shape) < FINAL_SUBSET, votes, 0).astype(np.int8)
        tau = vote_threshold(net_votes(changed[:, :, :dev], v))
        x = combine(w.c, changed, px, v, scores, tau)

        def fresh(c: np.ndarray, v: np.ndarray = v, tau: np.ndarray = tau) -> np.ndarray:
            ch, cx = perturb(w.rng, np.broadcast_to(c[:, None, :], (len(c), probes, c.shape[1])), w.model)
            return combine(c, ch, cx, v, scores, tau)

        units = w.trial_units(x, fresh)
        accepted, _ = w.measure(x, fresh, probes + m + 1, units)
        gains[:, m] = final_gain(w.model, v, tau)
        promoted |= accepted & (gains[:, m] <= NULL_TOLERANCE)  # a better final's promotion is not false
        better |= accepted & (gains[:, m] > NULL_TOLERANCE)
        if m == 0:
            d = units[1][:, : looks[-1]].astype(np.int8) - units[0][:, : looks[-1]]
            first = (d.mean(1), judge(d, looks, np.full(runs, ALPHA))[0])
    return promoted, gains, FinalDiagnostics(*first, better)


def hill_climb(w: World) -> np.ndarray:
    """The hill-climbing agent. Returns promoted anything per run."""
    runs = len(w.c)
    best, best_score = w.c.copy(), np.full(runs, -np.inf)
    steps = np.zeros(runs, dtype=np.int64)
    promoted = np.zeros(runs, dtype=bool)
    for t in range(w.attempts):
        _, x = perturb(w.rng, best, w.model)
        accepted, shown = w.measure(x, lambda c, n=steps + 1: after_steps(w.rng, c, n, w.model), t + 1)
        promoted |= accepted
        better = shown > best_score
        best = np.where(better[:, None], x, best)
        best_score = np.where(better, shown, best_score)
        steps += better
    return promoted


@dataclass
class CellResult:
    """One null-campaign cell: runs that promoted a null; for boosting, each final's population gain
    (runs, k) and final 1's diagnostics (None for hill climbing)."""

    hits: int
    gains: np.ndarray | None = None
    final: FinalDiagnostics | None = None


def null_cell(cell: tuple[int, int, int, str, str, int, int]) -> CellResult:
    """One cell: (index, setting index, model index, design, agent, T, runs), seeded by its index."""
    index, s, m, design, agent, attempts, runs = cell
    setting, model = SETTINGS[s], MODELS[m]
    rng = np.random.default_rng([SEED, index])
    hits, gains, diags = 0, [], []
    for start in range(0, runs, CHUNK):
        n = min(CHUNK, runs - start)
        c = rng.random((n, setting.n_dev + setting.n_val)) < P0
        w = World(setting, model, design, attempts, rng, c)
        if agent == "hill":
            promoted = hill_climb(w)
        else:
            promoted, g, diag = boosting(w, int(agent.split("-")[1]))
            gains.append(g)
            diags.append(diag)
        hits += int(promoted.sum())
    if agent == "hill":
        return CellResult(hits)
    final = FinalDiagnostics(*(np.concatenate([getattr(d, f) for d in diags])
                               for f in ("unit_gain", "accepted_at_alpha", "better_promoted")))
    return CellResult(hits, np.concatenate(gains), final)


def run_cells(cells: list[tuple[int, int, int, str, str, int, int]], parallel: bool) -> list[CellResult]:
    """null_cell over every cell, on every CPU this process may use when `parallel`."""
    if not parallel or workers() == 1:
        return [null_cell(c) for c in cells]
    import multiprocessing as mp

    order = sorted(cells, key=lambda c: -c[5])  # the longest campaigns first
    with mp.get_context("fork").Pool(workers()) as pool:
        results = pool.map(null_cell, order, chunksize=1)
    by_index = {c[0]: r for c, r in zip(order, results, strict=True)}
    return [by_index[c[0]] for c in cells]


def workers() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# -- the power campaign ------------------------------------------------------------------------------


@dataclass
class PowerOutcome:
    """Per run: promotions, false ones (null candidates), the champion's true gain kept (pass rate)."""

    promotions: np.ndarray
    false: np.ndarray
    gain: np.ndarray


def power_campaign(rng: np.random.Generator, setting: Setting, design: str, runs: int) -> PowerOutcome:
    """T = POWER_ATTEMPTS attempts, each a perturbation of the current champion (val only: the agent
    is not adaptive), better by GOOD_GAIN w.p. GOOD_SHARE (wrong answers flipped at FLIP_WRONG +
    GOOD_GAIN / (1 - p), capped at 1), else a `flip` null; levels from attempt_levels with each
    run's history (a promotion passes its level on)."""
    looks, n_val, attempts = setting.looks, setting.n_val, POWER_ATTEMPTS
    size = looks[-1]
    c = rng.random((runs, n_val)) < P0  # the current champion's correctness on val
    p = np.full(runs, P0)  # its population pass rate
    block = np.zeros(runs, dtype=np.int64)
    history: list[list[str]] = [[] for _ in range(runs)]
    out = PowerOutcome(np.zeros(runs, np.int64), np.zeros(runs, np.int64), np.zeros(runs))
    for t in range(1, attempts + 1):
        good = rng.random(runs) < GOOD_SHARE
        wrong = np.where(good, np.minimum(1.0, FLIP_WRONG + GOOD_GAIN / (1 - p)), FLIP_WRONG)
        right = FLIP_WRONG * (1 - p) / p
        gain = (1 - p) * (wrong - FLIP_WRONG)
        x = c ^ (rng.random(c.shape) < np.where(c, right[:, None], wrong[:, None]))
        live = np.ones(runs, dtype=bool) if design == "before" else block < setting.blocks
        levels = np.array([attempt_levels(ALPHA, "campaign", t, attempts, h, confirm=False).trial  # type: ignore[arg-type]
                           if ok else 0.0 for h, ok in zip(history, live, strict=True)])
        if design == "before":
            cols = np.argsort(rng.random((runs, n_val)), axis=1)
        else:
            start = np.minimum(block, setting.blocks - 1)[:, None] * size
            cols = start + np.argsort(rng.random((runs, size)), axis=1)
        d = np.take_along_axis(x, cols, 1).astype(np.int8) - np.take_along_axis(c, cols, 1)
        accepted, _ = judge(d, looks, levels)
        c = np.where(accepted[:, None], x, c)
        p = p + accepted * gain
        block += accepted
        out.promotions += accepted
        out.false += accepted & ~good
        out.gain += accepted * gain
        for r in range(runs):
            history[r].append("promoted" if accepted[r] else "not_promoted" if live[r] else "unspent")
    return out


# -- tables ------------------------------------------------------------------------------------------



def rate(successes: int, n: int) -> str:
    """`rate % [low, high]` in percent with its 95% CP interval."""
    low, high = clopper_pearson(successes, n)
    return f"{100 * successes / n:.2f} [{100 * low:.2f}, {100 * high:.2f}]"


def mean_se(values: np.ndarray, scale: float = 1.0, digits: int = 2) -> str:
    """`mean ± standard error` of values * scale."""
    v = np.asarray(values, dtype=float) * scale
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
    return f"{v.mean():.{digits}f} ± {se:.{digits}f}"


def null_tables(runs: int, attempts_list: tuple[int, ...], parallel: bool) -> tuple[list[str], list[str], str]:
    """One markdown table per setting of the null campaigns, the after cells whose upper CP bound
    exceeds alpha, and the table of boosting final 1's diagnostics."""
    keys = [(s, m, agent, attempts, design) for s in range(len(SETTINGS)) for m in range(len(MODELS))
            for agent in AGENTS for attempts in attempts_list for design in DESIGNS]
    cells = [(i, s, m, design, agent, attempts, runs) for i, (s, m, agent, attempts, design) in enumerate(keys)]
    results = dict(zip(keys, run_cells(cells, parallel), strict=True))
    tables, over, diag_rows = [], [], []
    for s, setting in enumerate(SETTINGS):
        rows = []
        for m, model in enumerate(MODELS):
            for agent, agent_name in AGENTS.items():
                for attempts in attempts_list:
                    cell = {d: results[(s, m, agent, attempts, d)] for d in DESIGNS}
                    hits = {d: cell[d].hits for d in DESIGNS}
                    high = clopper_pearson(hits["after"], runs)[1]
                    if high > ALPHA:
                        over.append(f"{setting.name}, {model.name}, {agent_name}, T = {attempts}: "
                                    f"after {rate(hits['after'], runs)}")
                    gain = "0 (exact)"
                    if agent != "hill" and model.touch_right != model.touch_wrong:
                        gain = "; ".join(
                            f"{d} {100 * g.mean():.2f} (max {100 * g.max():.2f}), {int(f.better_promoted.sum())} "
                            "runs" for d in ("before", "after")
                            if (g := cell[d].gains) is not None and (f := cell[d].final) is not None)
                    rows.append([model.name, agent_name, str(attempts), rate(hits["before"], runs),
                                 rate(hits["after"], runs), "yes" if high <= ALPHA else "**NO**",
                                 rate(hits["fresh"], runs), f"{runs:,}", gain])
                    if agent == "boost-1":
                        finals = [cell[d].final for d in DESIGNS]
                        diag_rows.append(
                            [setting.name, model.name, str(attempts)]
                            + [mean_se(f.unit_gain, 100.0) for f in finals if f is not None]
                            + [rate(int(f.accepted_at_alpha.sum()), runs) for f in finals if f is not None]
                        )
        tables.append(
            f"### {setting.name}; looks {setting.looks}, {setting.blocks} val block(s) after\n\n"
            + table(["answers", "agent", "T", "before: P(run promotes a null) % [95% CP]",
                     "after: P(run promotes a null) % [95% CP]", "after: upper CP <= 5%",
                     "fresh val per trial (reference) % [95% CP]", "runs per cell",
                     "boosting finals' population gain, points: mean (max), runs that promoted one with gain > 0"],
                    rows, "lllrrrrrr")
        )
    diag = table(["setting", "answers", "T", *(f"{d}: gain on its trial's units (points)" for d in DESIGNS),
                  *(f"{d}: P(accepted at level {ALPHA}) % [95% CP]" for d in DESIGNS)], diag_rows, "lll" + "r" * 6)
    return tables, over, diag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few short runs per cell (smoke test)")
    args = parser.parse_args()
    runs = QUICK_RUNS if args.quick else RUNS
    began = time.perf_counter()
    body, over, diag = null_tables(runs, QUICK_ATTEMPTS if args.quick else ATTEMPTS, parallel=True)
    power_rows = []
    for setting in SETTINGS:
        for design in ("before", "after"):
            o = power_campaign(np.random.default_rng([SEED, 10_000, len(power_rows)]), setting, design, runs)
            power_rows.append([setting.name, design, mean_se(o.promotions), mean_se(o.promotions - o.false),
                               rate(int((o.false > 0).sum()), runs), mean_se(o.gain, 100.0), f"{runs:,}"])
    took = time.perf_counter() - began
    verdict = ("Every after rate's upper 95% CP bound is at or below alpha = 5%." if not over else
               "After rates whose upper 95% CP bound exceeds alpha = 5%: " + "; ".join(over) + ".")
    head = (
        "P(run promotes a null): the share of runs that promote a candidate whose expected pass rate on the "
        "population is at most the champion's (every candidate, except `flip` boosting finals with a positive "
        "exact gain, which are not counted); the gate promises <= alpha = 5% (`campaign` multiplicity, no "
        "confirmation, exact McNemar looks, linear spending, futility at interim looks). Champion pass rate "
        f"{P0}; each null perturbation leaves 6% of examples discordant. Model, agents and designs: the "
        "docstring of `benchmarks/adaptive_examples.py`. *before*: every trial measures all of val, the agent "
        "sees val pass rates; *after*: the agent sees dev pass rates, trials use one val block until a "
        "promotion; *fresh*: every trial measures fresh population examples (a reference no examples target "
        "can offer). A boosting final is attempt T - k + 1..T, whose level is alpha w_t with harmonic weights "
        f"(attempt 100 of 100: {null_level(100, 100):.1e}; attempt 20 of 20: {null_level(20, 20):.1e}). "
        "Intervals: two-sided 95% Clopper-Pearson over the runs.\n\n"
        f"**{verdict}**\n\n## Null campaigns\n\n"
    )
    power = (
        f"## Cost in power: {POWER_ATTEMPTS} attempts, {GOOD_SHARE:.0%} of candidates +{100 * GOOD_GAIN:.0f} points\n\n"
        "A non-adaptive agent; each candidate perturbs the current champion, better by 5 points of pass "
        "rate with probability 0.2 (capped where the champion has too few wrong answers left), a null "
        "otherwise. After: at most one promotion per val block. Mean ± one standard error per run.\n\n"
        + table(["setting", "design", "promotions / run", "true promotions / run",
                 "P(run promotes a null) % [95% CP]", "true gain kept (points)", "runs"], power_rows, "llrrrrr")
    )
    diagnostics = (
        "\n## Boosting final 1, judged alone\n\n"
        "The boosting attack's first final (k = 1): its mean paired difference on the looks[-1] units its "
        "trial measures (0 on the population) and how often one trial of it at level 0.05, the run's whole "
        "level, would accept it, as if it were the run's only attempt; not a rule Ratchet runs, a measure of "
        "how much the final learned of the units that judge it. Mean ± one standard error.\n\n"
        + diag
    )
    foot = f"\nSimulation: seed {SEED}, {runs:,} runs per cell, {took:.0f} s.\n"
    save("adaptive_examples" + ("-quick" if args.quick else ""),
         "Adaptive agents against the examples gate: before and after",
         head + "\n".join(body) + "\n" + power + diagnostics + foot)


if __name__ == "__main__":
    main()
