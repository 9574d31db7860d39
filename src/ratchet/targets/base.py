"""The Target seam: what is measured, as the one runner and the trial see it.

A target turns a stage and two trees into a `Plan` whose units are seeds (benchmark) or example
ids (examples), groups planned jobs into executor tasks (one unit per task for a benchmark, a shard
of examples for an examples target), builds each task's JobSpec, and reads a finished task back
into per-unit results. The runner (`loop/measure.py`) owns checkouts, ledger events, the cache and
cleanup; the trial (`loop/trial.py`) walks the looks. Neither asks which target it has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ratchet.compute.base import JobResult, JobSpec
from ratchet.core.contract_guardrails import GuardrailSection
from ratchet.core.plan import Plan, PlannedJob
from ratchet.core.vocab import Direction, GateTest, ScoreKind, Stage


@dataclass(frozen=True)
class UnitResult:
    """One planned job's outcome.

    value: the raw score (the metric, or 1.0 / 0.0 for a passed / failed example), None when the
    measurement failed. failed: no usable measurement (a crash, timeout or missing metric of a
    benchmark job; an examples shard lost as a whole): a failed candidate is never accepted, a failed
    champion is retried once. state: the job or metric state (examples: the example's status);
    reason: one line a user can act on. detail: the target's own record of the unit (an examples
    target's ExampleResult, with its per-check results), never recorded as is. guardrails: each
    guardrail's raw value on this unit by name (None without guardrails or when failed).
    """

    job_id: str
    variant: str
    unit: int
    value: float | None
    failed: bool
    state: str
    reason: str
    detail: Any = field(default=None, compare=False, repr=False)
    guardrails: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Task:
    """One executor job: planned jobs of one variant and one tree run as one process (a benchmark:
    exactly one unit; examples: a shard of up to DEFAULT_SHARD_SIZE examples). `job_id` names the
    job's directory and its `job.*` events."""

    job_id: str
    variant: str
    tree: str
    jobs: tuple[PlannedJob, ...]


@dataclass(frozen=True)
class TaskOutcome:
    """A task read back: one UnitResult per planned job id, and the `job.finished` data to record
    (without `attempt` and `stage`, which the runner adds)."""

    results: Mapping[str, UnitResult]
    record: Mapping[str, Any]


class Jobs(Protocol):
    """How planned jobs become executor tasks and results: what the one runner needs (a Target, or
    an agent's own experiments)."""

    kind: str
    """`benchmark` or `examples` (target.kind)."""

    exclude: tuple[str, ...]
    """Paths never written into a job's checkout."""

    def tasks(self, jobs: Sequence[PlannedJob]) -> list[Task]:
        """Group planned jobs (of one look, or a retry) into executor tasks, in run order."""
        ...

    def spec(self, task: Task, checkout: Path) -> JobSpec:
        """The JobSpec of `task`, run in `checkout` (a clean copy of `task.tree`)."""
        ...

    def read(self, task: Task, result: JobResult) -> TaskOutcome:
        """A finished task's per-unit results and its ledger record."""
        ...

    def skipped(self, task: Task, result: JobResult | None, why: str) -> TaskOutcome | None:
        """The outcome of a task the runner skipped because the candidate already failed in its look
        (state `skipped`, no measurement: its UnitResults are neither values nor failures): `result`
        is how the task ended when it had started and was cancelled (None: never started), `why` the
        reason recorded. None: this target never skips (its looks run to their end)."""
        ...

    def reuse(self, task: Task, recorded: Mapping[str, Any]) -> TaskOutcome | None:
        """The outcome recorded by a `job.finished` of this task (a resume), or None when that
        record is not for exactly this task (it must then run again)."""
        ...

    def cache_key(self, task: Task) -> str | None:
        """The measurement cache's key of `task`, or None when it must never be cached."""
        ...

    def from_cache(self, task: Task, hit: Mapping[str, Any]) -> TaskOutcome | None:
        """A cache entry as the task's outcome (charged 0 units), or None if unusable."""
        ...

    def cache_entry(self, outcome: TaskOutcome) -> dict[str, Any] | None:
        """What to keep in the cache for a fresh outcome (None: nothing)."""
        ...


class Target(Jobs, Protocol):
    """What a run measures (see the module docstring): its jobs, plus plans, looks and summaries."""

    score_kind: ScoreKind
    direction: Direction
    confirms: bool
    """Whether an accepted candidate is re-measured on fresh units before its promotion."""

    test: GateTest
    """gate.test for continuous scores (binary scores always use exact McNemar)."""

    metric_range: tuple[float, float] | None
    """target.metric_range: the range of one score (the rules-1 betting test needs it)."""

    max_unit_loss: float | None
    """The betting test's floor size, gate.max_unit_loss (default hi - lo of metric_range; None: no floor)."""

    guardrail_rules: tuple[GuardrailSection, ...]
    """The contract's [[gate.guardrails]] (empty without): what `loop.trial.guardrails_for` tests."""

    def looks(self, stage: Stage, units_used: int = 0) -> tuple[int, ...]:
        """Cumulative units per look for `stage` (a confirmation: after a trial decided on
        `units_used` units)."""
        ...

    def plan(self, stage: Stage, attempt: int, trial: int, champion_tree: str, candidate_tree: str,
             looks: Sequence[int], block: int = 0) -> Plan:
        """The stage's plan (PlanError on bad input). `block`: the promotions before the trial, the
        val block an examples trial measures (ValueError for one val does not have); a benchmark
        ignores it."""
        ...

    def trial_blocks(self) -> int | None:
        """How many promotions the trials' units have room for (examples: the val blocks), or None
        when there is no limit (a benchmark draws fresh seeds for every trial)."""
        ...

    def dev_jobs(self, attempt: int, tree: str) -> list[PlannedJob]:
        """Attempt `attempt`'s candidate `tree` measured alone on what agents may see, before its
        trial (job stage `dev`; examples: the dev split), or [] when the target has none."""
        ...

    def reserve_units(self) -> int:
        """Job-units reserved from the start for the final measurement (the holdout)."""
        ...

    def holdout_extras(self, champion_tree: str, results: Mapping[str, UnitResult],
                       measure: Callable[[list[PlannedJob]], Mapping[str, UnitResult]]) -> dict[str, Any]:
        """What the report shows beside the holdout's verdict (examples: the champion's pass rates per
        split and per check), from the holdout's results and, if needed, more jobs run through
        `measure`; {} when nothing."""
        ...

    def preflight_jobs(self, baseline_tree: str) -> list[PlannedJob]:
        """The baseline's measurement before the first attempt (stage `preflight`)."""
        ...

    def check_preflight(self, results: Sequence[UnitResult], job_dir: Path) -> None:
        """Raise MeasurementError when the preflight shows the target cannot measure at all."""
        ...

    def summary(self, values: Sequence[float]) -> tuple[float | None, float | None]:
        """(mean, guarding bound) of one side's raw scores: the bound that guards `gate.target`
        (lower for `max`, upper for `min`); None when there are too few values."""
        ...
