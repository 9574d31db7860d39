"""Plans: a trial compiled into its deterministic, content-addressed list of jobs (docs/gate.md).

Pure: the same inputs give byte-identical canonical JSON and the same digest. Unit seeds derive
from the campaign seed, the run's random salt, the stage and the trial index through SHA-256 (never
the clock), so agents cannot predict them from the contract and every stage and trial draws a
fresh stream. Within each unit the two variants run in an order drawn from the same stream, so
drifting machine load does not favour one side.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ratchet.core.canonical import CanonicalError, canonical_bytes, digest
from ratchet.core.errors import PlanError
from ratchet.core.stats.sequential import validate_looks
from ratchet.core.vocab import STAGES, Stage, Variant


@dataclass(frozen=True)
class UnitDraw:
    """One unit of a plan as its target drew it: `seed` (the seed env value), `order` (0: the
    champion runs first within the unit's pair, 1: the candidate), `key` (the example id of an
    examples target; None for a benchmark, whose unit is its seed)."""

    seed: int
    order: int
    key: str | None = None
PLAN_FORMAT = "ratchet.plan.v1"
SEED_MASK = 0x7FFF_FFFF  # unit seeds are 31-bit non-negative ints: safe for any seed_env consumer
_TREE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # git SHA-1 or SHA-256 object names
_RETRY_SUFFIX = re.compile(r"-r\d+$")

NO_ATTEMPT = 0
"""The attempt number of plans and jobs that belong to no attempt (the preflight, the holdout, a
calibration); attempts are numbered from 1."""


@dataclass(frozen=True)
class PlannedJob:
    """One job of a plan: one variant on one unit.

    job_id: filename-safe, unique in the run (`a0007-trial-u012-candidate`; a champion retry adds
    `-r1`); tree: the variant's git tree hash; unit: 0-based index in the plan; seed: the unit's
    seed (31-bit); order: 0 runs first within the unit's pair, 1 second; look: 0-based index of the
    first look that includes this unit; key: the example id of an examples target's unit (None for
    a benchmark: absent from the JSON, so benchmark plans keep their digests).
    """

    job_id: str
    variant: Variant
    tree: str
    unit: int
    seed: int
    order: int
    look: int
    key: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON object with the fields above (`key` only when set)."""
        out: dict[str, Any] = {
            "job_id": self.job_id,
            "variant": self.variant,
            "tree": self.tree,
            "unit": self.unit,
            "seed": self.seed,
            "order": self.order,
            "look": self.look,
        }
        if self.key is not None:
            out["key"] = self.key
        return out


@dataclass(frozen=True)
class Plan:
    """The jobs a trial needs, with the digest of its canonical JSON.

    stage: trial, confirm or holdout (holdout: champion_tree is the baseline's tree, candidate_tree
    the final champion's); attempt: the attempt it belongs to (0 for the holdout); trial: the
    trial's 1-based index (0 for the holdout); looks: cumulative units per look; units: the unit
    seeds (benchmark) or example ids (examples), len == looks[-1]; jobs: two per unit in run order;
    target: plain JSON settings of the measurement (command, metric, timeout_s, ...); digest:
    `sha256:<hex>` of the canonical JSON of everything else.
    """

    stage: Stage
    attempt: int
    trial: int
    champion_tree: str
    candidate_tree: str
    looks: tuple[int, ...]
    units: tuple[int | str, ...]
    jobs: tuple[PlannedJob, ...]
    target: Mapping[str, Any] = field(hash=False)
    digest: str

    def body(self) -> dict[str, Any]:
        """The JSON object the digest covers (everything but the digest)."""
        return {
            "format": PLAN_FORMAT,
            "stage": self.stage,
            "attempt": self.attempt,
            "trial": self.trial,
            "champion_tree": self.champion_tree,
            "candidate_tree": self.candidate_tree,
            "looks": list(self.looks),
            "units": list(self.units),
            "jobs": [job.to_json() for job in self.jobs],
            "target": _thaw(self.target),
        }

    def to_json(self) -> dict[str, Any]:
        """The plan as a plain JSON object: `body()` plus `digest`."""
        return {**self.body(), "digest": self.digest}

    def canonical_bytes(self) -> bytes:
        """RFC 8785 bytes of `to_json()`: what the ledger stores as the plan's blob."""
        return canonical_bytes(self.to_json())

    def jobs_for_look(self, look: int) -> tuple[PlannedJob, ...]:
        """The jobs first needed at `look` (0-based), in run order."""
        return tuple(job for job in self.jobs if job.look == look)

    @property
    def gate_seed(self) -> int:
        """The seed of the gate's Monte Carlo p-values: the first unit's seed, or the trial index
        when units are example ids."""
        first = self.units[0] if self.units else 0
        return first if isinstance(first, int) else self.trial

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """Rebuild a plan from `to_json()` output. Raises PlanError `plan.bad_json` (missing or
        malformed fields) or `plan.digest_mismatch` (the content does not match its digest).
        """
        try:
            if data.get("format") != PLAN_FORMAT:
                raise ValueError(f"format {data.get('format')!r}")
            jobs = tuple(PlannedJob(**job) for job in data["jobs"])
            plan = cls(
                data["stage"],
                int(data["attempt"]),
                int(data["trial"]),
                data["champion_tree"],
                data["candidate_tree"],
                tuple(data["looks"]),
                tuple(data["units"]),
                jobs,
                _freeze(data["target"]),
                "",
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanError("plan.bad_json", f"not a plan: {exc}") from exc
        _check_consistent(plan)
        actual = digest(plan.body())
        if actual != data.get("digest"):
            raise PlanError(
                "plan.digest_mismatch",
                f"plan digest {data.get('digest')!r} does not match its content ({actual})",
            )
        return replace(plan, digest=actual)


def _check_consistent(plan: Plan) -> None:
    """Refuse a plan whose parts disagree (e.g. read back from JSON): PlanError with a `plan.` code."""
    looks = validate_looks(plan.looks)
    _check_tree(plan.champion_tree, "champion tree")
    _check_tree(plan.candidate_tree, "candidate tree")
    if plan.stage not in STAGES:
        raise PlanError("plan.bad_stage", f"stage must be one of {sorted(STAGES)}, got {plan.stage!r}")
    if len(set(plan.units)) != len(plan.units):
        raise PlanError(
            "plan.duplicate_units", f"the {plan.stage} plan of trial {plan.trial} repeats a unit seed"
        )
    if len(plan.units) != looks[-1] or len(plan.jobs) != 2 * looks[-1]:
        raise PlanError(
            "plan.bad_json", f"{len(plan.units)} units and {len(plan.jobs)} jobs for looks {list(looks)}"
        )


def _freeze(target: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of plain JSON settings; raises PlanError `plan.bad_target` otherwise."""
    if not isinstance(target, Mapping):
        raise PlanError(
            "plan.bad_target", f"target must be a mapping of settings, got {type(target).__name__}"
        )
    try:
        plain = json.loads(canonical_bytes(dict(target)))
    except CanonicalError as exc:
        raise PlanError("plan.bad_target", f"target settings are not plain JSON: {exc.message}") from exc
    return MappingProxyType(plain)


def _thaw(target: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(canonical_bytes(dict(target)))


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PlanError("plan.bad_index", f"{name} must be an integer >= {low}, got {value!r}")
    return value


def _check_stream(campaign_seed: int, run_salt: str, stage: str, trial_index: int) -> None:
    if isinstance(campaign_seed, bool) or not isinstance(campaign_seed, int):
        raise PlanError("plan.bad_seed", f"campaign seed must be an integer, got {campaign_seed!r}")
    if not isinstance(run_salt, str) or not run_salt:
        raise PlanError(
            "plan.missing_salt",
            "the run's salt is missing: unit seeds would be predictable",
            hint="the run directory keeps a random salt; pass it",
        )
    if stage not in STAGES:
        raise PlanError("plan.bad_stage", f"stage must be one of {sorted(STAGES)}, got {stage!r}")
    _check_int(trial_index, "trial index", 0)


def _unit_draws(
    campaign_seed: int, run_salt: str, stage: str, trial_index: int, n: int
) -> list[tuple[int, int]]:
    """n (seed, order) pairs: seed from 31 bits, order from the 32nd bit of SHA-256 of the stream key.

    A seed already drawn in this stream is skipped (the counter moves on), so seeds are distinct.
    """
    draws: list[tuple[int, int]] = []
    seen: set[int] = set()
    counter = 0
    # The key is canonical_bytes([..., counter]): its prefix is encoded once, a non-negative
    # integer's canonical form is its decimal digits.
    head = canonical_bytes(["ratchet.unit", campaign_seed, run_salt, stage, trial_index])[:-1] + b","
    while len(draws) < n:
        key = head + b"%d]" % counter
        word = int.from_bytes(hashlib.sha256(key).digest()[:4], "big")
        counter += 1
        if word & SEED_MASK not in seen:
            seen.add(word & SEED_MASK)
            draws.append((word & SEED_MASK, word >> 31))
    return draws


def unit_seeds(campaign_seed: int, run_salt: str, stage: Stage, trial_index: int, n: int) -> tuple[int, ...]:
    """n distinct unit seeds (31-bit non-negative ints) for one stage of one trial.

    Derived from SHA-256 of the canonical JSON of (campaign_seed, run_salt, stage, trial_index, i),
    never the clock: deterministic, unpredictable without the run's salt, and a fresh stream for
    every (stage, trial_index). Raises PlanError `plan.bad_seed`, `plan.missing_salt`,
    `plan.bad_stage`, `plan.bad_index`.
    """
    _check_stream(campaign_seed, run_salt, stage, trial_index)
    _check_int(n, "n", 0)
    return tuple(seed for seed, _ in _unit_draws(campaign_seed, run_salt, stage, trial_index, n))


def _check_tree(tree: object, name: str) -> str:
    if not isinstance(tree, str) or not _TREE.fullmatch(tree):
        raise PlanError(
            "plan.missing_tree",
            f"{name} is not a git tree hash: {tree!r}",
            hint="40 (SHA-1) or 64 (SHA-256) lowercase hex digits",
        )
    return tree


def _jobs(
    attempt: int,
    stage: str,
    trees: Mapping[str, str],
    draws: Sequence[UnitDraw],
    looks: tuple[int, ...],
) -> tuple[PlannedJob, ...]:
    jobs = []
    for index, draw in enumerate(draws):
        look = next(k for k, n in enumerate(looks) if index < n)
        pair: tuple[Variant, Variant] = ("champion", "candidate") if draw.order == 0 else ("candidate", "champion")
        for order, variant in enumerate(pair):
            job_id = f"a{attempt:04d}-{stage}-u{index:03d}-{variant}"
            jobs.append(PlannedJob(job_id, variant, trees[variant], index, draw.seed, order, look, draw.key))
    return tuple(jobs)


def seed_draws(campaign_seed: int, run_salt: str, stage: Stage, trial: int, n: int) -> tuple[UnitDraw, ...]:
    """A benchmark's n units for one stage of one trial: distinct 31-bit seeds and a pair order,
    both from the SHA-256 stream of (campaign_seed, run_salt, stage, trial) (see unit_seeds).
    Raises PlanError like unit_seeds."""
    _check_stream(campaign_seed, run_salt, stage, trial)
    _check_int(n, "n", 0)
    return tuple(UnitDraw(seed, bit) for seed, bit in _unit_draws(campaign_seed, run_salt, stage, trial, n))


def compile_plan(
    *,
    stage: Stage,
    attempt: int,
    trial: int,
    champion_tree: str,
    candidate_tree: str,
    target: Mapping[str, Any],
    looks: Sequence[int],
    campaign_seed: int = 0,
    run_salt: str = "",
    draws: Sequence[UnitDraw] | None = None,
) -> Plan:
    """Compile a trial (or its confirmation, or the holdout) into its plan.

    draws: the units as the target drew them (examples: one per example id, in look order); None:
    a benchmark's `seed_draws(campaign_seed, run_salt, stage, trial, looks[-1])`. jobs: for each
    unit in order, both variants, in the unit's drawn order. A candidate tree equal to the
    champion's is allowed here (no_change is decided before planning). Raises PlanError:
    `plan.no_units` (no looks), `plan.bad_looks`, `plan.missing_tree`, `plan.duplicate_units`,
    `plan.bad_target`, `plan.bad_stage`, `plan.bad_index`, `plan.bad_seed`, `plan.missing_salt`.
    """
    values = validate_looks(looks)
    trees = {
        "champion": _check_tree(champion_tree, "champion tree"),
        "candidate": _check_tree(candidate_tree, "candidate tree"),
    }
    if stage not in STAGES:
        raise PlanError("plan.bad_stage", f"stage must be one of {sorted(STAGES)}, got {stage!r}")
    _check_int(trial, "trial index", 0)
    _check_int(attempt, "attempt", 0)
    if draws is None:
        draws = seed_draws(campaign_seed, run_salt, stage, trial, values[-1])
    if len(draws) != values[-1]:
        raise PlanError("plan.bad_json", f"{len(draws)} units drawn for looks {list(values)}")
    units = tuple(d.key if d.key is not None else d.seed for d in draws)
    if len(set(units)) != len(units):
        raise PlanError("plan.duplicate_units", f"the {stage} plan of trial {trial} repeats a unit")
    plan = Plan(
        stage,
        attempt,
        trial,
        trees["champion"],
        trees["candidate"],
        values,
        units,
        _jobs(attempt, stage, trees, draws, values),
        _freeze(target),
        "",
    )
    return replace(plan, digest=digest(plan.body()))


def retry_job(job: PlannedJob, n: int) -> PlannedJob:
    """The n-th retry (n >= 1) of a champion job: same tree, unit, seed and order, id suffixed `-r<n>`.

    Only champion jobs are retried (a failing candidate is rejected). Raises PlanError `plan.bad_retry`.
    """
    if job.variant != "champion":
        raise PlanError(
            "plan.bad_retry", f"job {job.job_id} is a candidate job; only champion jobs are retried"
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PlanError("plan.bad_retry", f"retry number must be an integer >= 1, got {n!r}")
    return replace(job, job_id=f"{_RETRY_SUFFIX.sub('', job.job_id)}-r{n}")
