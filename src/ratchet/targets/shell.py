"""Shell-command tasks: one planned job per executor job, `/bin/sh -c COMMAND` in a clean checkout
with the unit's seed in `target.seed_env`, the metric read from the last JSON line of stdout.

The benchmark target (`benchmark.BenchmarkTarget`) is this plus plans and looks; an agent's own
experiments (`Launch`) are this with a command per job and no cache.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ratchet.compute.base import ArtifactSpec, JobResult, JobSpec, Resources, SandboxSpec
from ratchet.compute.cache import cache_key
from ratchet.compute.env import job_env
from ratchet.compute.job_programs import checkout_command
from ratchet.core.plan import PlannedJob
from ratchet.core.vocab import MeasurementState
from ratchet.targets.base import Task, TaskOutcome, UnitResult
from ratchet.targets.metric import MetricReading, parse_metric
from ratchet.targets.suite import SuiteMember, split_suite, suite_command

STDERR_LINE_CHARS = 200
"""Characters of each stderr line quoted in a failed job's reason."""

STDERR_TAIL_LINES = 6
"""Last lines of a failed job's stderr quoted in its reason (a Python traceback's error and the
lines that lead to it)."""


def stderr_excerpt(stderr_tail: str) -> str:
    """The last STDERR_TAIL_LINES non-blank lines of `stderr_tail`, each cut to STDERR_LINE_CHARS,
    joined by newlines ("" when there are none)."""
    lines = [line[:STDERR_LINE_CHARS] for line in stderr_tail.strip().splitlines() if line.strip()]
    return "\n".join(lines[-STDERR_TAIL_LINES:])


def read_guardrails(stdout: str, keys: Sequence[str]) -> tuple[dict[str, float] | None, MetricReading | None]:
    """Each guardrail key's value from the metric's JSON line of `stdout` (targets.metric.parse_metric):
    ({key: value}, None), or (None, the first key's failed reading) when a key is missing or not a
    finite number (a failed measurement, never a pass). (None, None) without keys."""
    if not keys:
        return None, None
    values = {}
    for key in keys:
        reading = parse_metric(stdout, key)
        if reading.state != "ok" or reading.value is None:
            return None, reading
        values[key] = reading.value
    return values, None


def read_suite(pieces: tuple[list[str], list[int | None]], suite: Sequence[SuiteMember],
               guards: dict[str, float]) -> tuple[dict[str, float] | None, MetricReading | None]:
    """Each suite member's metric from its piece of the job's stdout (targets.suite.split_suite), added
    to `guards` under the member's name: (guards, None), or (None, why) for the first member that
    exited non-zero or printed no finite metric (a failed measurement, never a pass)."""
    outputs, status = pieces
    for i, m in enumerate(suite, start=1):
        if status[i] != 0:
            ended = "did not finish" if status[i] is None else f"exited {status[i]}"
            return None, MetricReading("no_metric", None, f"{m.name!r}: suite member `{m.command}` {ended}")
        reading = parse_metric(outputs[i], m.metric)
        if reading.state != "ok" or reading.value is None:
            return None, MetricReading(reading.state, None, f"{m.name!r}: suite member: {reading.reason}")
        guards[m.name] = reading.value
    return guards, None


@dataclass(frozen=True)
class Measurement:
    """One shell job's outcome as recorded in its `job.finished` event.

    state: a JobState, or no_metric | bad_metric when the job ended ok without a usable metric.
    value: the metric (raw, not direction-normalized) when state is ok. units_charged: job-units
    charged to the budget (0 for a cached measurement). guardrails: each guardrail key's value read
    from the same JSON line as the metric (None without guardrails; a key missing or not finite makes
    the job a failed measurement, state no_metric / bad_metric).
    """

    job_id: str
    variant: str
    unit: int
    seed: int
    state: MeasurementState
    value: float | None
    reason: str
    elapsed_s: float
    cpu_s: float
    cached: bool
    units_charged: int
    gpu_s: float = 0.0
    guardrails: dict[str, float] | None = None

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Measurement:
        """Rebuild from a `job.finished` event's data (resume: finished jobs are never re-run; a
        record without `gpu_s` used none)."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k not in ("gpu_s", "guardrails")},
                   gpu_s=data.get("gpu_s") or 0.0, guardrails=data.get("guardrails"))

    def unit_result(self) -> UnitResult:
        """As the trial sees it: failed unless ok with a finite value; a skipped job is neither a
        value nor a failure (not measured)."""
        ok = self.state == "ok" and self.value is not None and math.isfinite(self.value)
        return UnitResult(self.job_id, self.variant, self.unit, self.value if ok else None,
                          not ok and self.state != "skipped", self.state, self.reason,
                          guardrails=self.guardrails if ok else None)


class ShellJobs:
    """Runs planned jobs as shell commands (see the module docstring).

    command / timeout_s: the default command and per-job timeout; commands: job_id -> (command,
    timeout_s) overriding them (an agent's experiments; never cached). metric: the JSON key read
    from stdout (None: only the exit state counts). cache: whether measurements may be cached.
    envs: job_id -> extra variables Ratchet sets for that job (`SWEEP_INDEX` of an agent's array).
    artifacts: job_id -> the files the executor collects from that job's checkout when it ends.
    groups: job_id -> (group, cap): at most `cap` jobs of that group run at once
    (`JobSpec.group_max_parallel`; an agent's launch with `--concurrency`). guardrails: further keys
    read from the metric's JSON line ([[gate.guardrails]]); each must be there and finite. suite:
    further commands run after the primary in the same job ([[target.suite]], targets.suite), each
    member's metric read as the guardrail of its name. background: the jobs
    are an agent's experiments, started after waiting gate measurements (`JobSpec.background`).
    """

    def __init__(self, *, command: str, metric: str | None, seed_env: str, timeout_s: float, kind: str,
                 sandbox: SandboxSpec, exclude: Sequence[str] = (), cache: bool = True,
                 commands: Mapping[str, tuple[str, float]] | None = None,
                 envs: Mapping[str, Mapping[str, str]] | None = None, resources: Resources | None = None,
                 artifacts: Mapping[str, ArtifactSpec] | None = None,
                 groups: Mapping[str, tuple[str, int]] | None = None, guardrails: Sequence[str] = (),
                 suite: Sequence[SuiteMember] = (), background: bool = False):
        self.command = command
        self.guardrails = tuple(guardrails)
        self.suite = tuple(suite)
        self.background = background
        self.metric = metric
        self.seed_env = seed_env
        self.timeout_s = timeout_s
        self.kind = kind
        self.sandbox = sandbox
        self.exclude = tuple(exclude)
        self.cacheable = cache and commands is None
        self.commands = dict(commands or {})
        self.envs = dict(envs or {})
        self.resources = resources or Resources()
        self.artifacts = dict(artifacts or {})
        self.groups = dict(groups or {})

    def tasks(self, jobs: Sequence[PlannedJob]) -> list[Task]:
        """One task per planned job, same id."""
        return [Task(job.job_id, job.variant, job.tree, (job,)) for job in jobs]

    def _env(self, job: PlannedJob) -> dict[str, str]:
        return job_env(self.seed_env, job.seed, job.job_id, job.variant, str(job.unit), self.envs.get(job.job_id),
                       sandbox=self.sandbox)

    def _command(self, job: PlannedJob) -> tuple[str, float]:
        """The job's command and timeout in seconds (an agent's experiment has its own)."""
        return self.commands.get(job.job_id, (self.command, self.timeout_s))

    def spec(self, task: Task, checkout: Path) -> JobSpec:
        """`/bin/sh -c COMMAND` in `checkout` with the job's allow-listed environment (a first word
        relative to the project that the checkout lacks run from the project: `checkout_command`)."""
        job = task.jobs[0]
        command, timeout_s = self._command(job)
        command = checkout_command(command, checkout, self.sandbox.project_file)
        if self.suite and job.job_id not in self.commands:  # an agent's own experiment runs its command alone
            members = [replace(m, command=checkout_command(m.command, checkout, self.sandbox.project_file))
                       for m in self.suite]
            command = suite_command(command, self.seed_env, members)
            timeout_s += sum(m.timeout_s for m in self.suite)
        group, cap = self.groups.get(job.job_id, (None, None))
        return JobSpec(job_id=job.job_id, argv=("/bin/sh", "-c", command), workdir=checkout, env=self._env(job),
                       timeout_s=timeout_s, resources=self.resources, sandbox=self.sandbox,
                       artifacts=self.artifacts.get(job.job_id), group=group, group_max_parallel=cap,
                       background=self.background)

    def read(self, task: Task, result: JobResult) -> TaskOutcome:
        """The metric from the job's stdout (its last JSON line), or why there is none."""
        job = task.jobs[0]
        state: MeasurementState = result.state
        value: float | None = None
        guards: dict[str, float] | None = None
        reason = result.reason
        if result.state == "ok" and self.metric:
            # The metric is on the LAST JSON line: past the output cap the file holds only the start,
            # so read the kept tail instead.
            capped = result.stdout_truncated or result.stdout_path is None
            stdout = result.stdout_tail if capped or result.stdout_path is None else \
                result.stdout_path.read_text("utf-8", errors="replace")
            pieces = split_suite(stdout, len(self.suite)) if self.suite else None
            primary = pieces[0][0] if pieces else stdout
            reading = parse_metric(primary, self.metric, result.stderr_tail)
            state, value, reason = reading.state, reading.value, reading.reason
            guards, failure = read_guardrails(primary, self.guardrails) if state == "ok" else (None, None)
            if failure is None and pieces is not None and state == "ok":
                guards, failure = read_suite(pieces, self.suite, guards or {})
            if failure is not None:
                state, value, reason = failure.state, None, f"guardrail {failure.reason}"
        elif result.state != "ok" and result.stderr_tail.strip():
            reason = f"{reason}; stderr (last lines):\n{stderr_excerpt(result.stderr_tail)}"
        # GPU seconds settle the reservation made at the timeout: a kill's grace past it is not charged.
        gpu_s = min(result.elapsed_s, self._command(job)[1]) * self.resources.gpus
        m = Measurement(job.job_id, job.variant, job.unit, job.seed, state, value, reason,
                        result.elapsed_s, result.cpu_s, False, 1, gpu_s, guards if state == "ok" else None)
        return self._outcome(m)

    def skipped(self, task: Task, result: JobResult | None, why: str) -> TaskOutcome:
        """A skipped job (state `skipped`, no value): charged one job-unit and its seconds when it had
        started and was stopped, nothing when it never started."""
        job = task.jobs[0]
        ran = result is not None and result.elapsed_s > 0
        elapsed, cpu = (result.elapsed_s, result.cpu_s) if result is not None and ran else (0.0, 0.0)
        gpu_s = min(elapsed, self._command(job)[1]) * self.resources.gpus
        m = Measurement(job.job_id, job.variant, job.unit, job.seed, "skipped", None, why, elapsed, cpu, False,
                        1 if ran else 0, gpu_s)
        return self._outcome(m)

    @staticmethod
    def _outcome(m: Measurement) -> TaskOutcome:
        record = {name: getattr(m, name) for name in Measurement.__dataclass_fields__}  # flat: no deep copy
        if m.guardrails is None:
            record.pop("guardrails")  # optional in job.finished: absent without guardrails
        return TaskOutcome({m.job_id: m.unit_result()}, record)

    def reuse(self, task: Task, recorded: Mapping[str, Any]) -> TaskOutcome | None:
        """The recorded measurement (None when the record is malformed)."""
        try:
            return self._outcome(Measurement.from_record(recorded))
        except (KeyError, TypeError):
            return None

    def cache_key(self, task: Task) -> str | None:
        """The digest of everything that affects the measurement; None for an agent's experiments."""
        if not self.cacheable:
            return None
        job = task.jobs[0]
        return cache_key(
            tree=job.tree, command=self.command, seed=job.seed, seed_env=self.seed_env,
            env_set_by_ratchet=self._env(job), sandbox_mode=self.sandbox.mode, network=self.sandbox.network,
            timeout_s=self.timeout_s, resources=self.resources, kind=self.kind,
            metric=",".join([self.metric or "", *self.guardrails,
                             *(f"{m.name}={m.metric}@{m.seed_env}:{m.command}" for m in self.suite)]),
        )

    def from_cache(self, task: Task, hit: Mapping[str, Any]) -> TaskOutcome | None:
        """A cached ok measurement (0 units charged)."""
        job = task.jobs[0]
        if not isinstance(hit.get("value"), int | float):
            return None
        guards = hit.get("guardrails")
        if self.guardrails and not (isinstance(guards, Mapping) and set(self.guardrails) <= set(guards)):
            return None
        values = {k: float(guards[k]) for k in self.guardrails} if isinstance(guards, Mapping) and self.guardrails \
            else None
        m = Measurement(job.job_id, job.variant, job.unit, job.seed, "ok", float(hit["value"]),
                        "cached measurement", float(hit.get("elapsed_s", 0.0)), 0.0, True, 0, 0.0, values)
        return self._outcome(m)

    def cache_entry(self, outcome: TaskOutcome) -> dict[str, Any] | None:
        """Only ok measurements are cached."""
        r = outcome.record
        if r.get("state") != "ok" or r.get("cached"):
            return None
        entry = {"state": "ok", "value": r["value"], "elapsed_s": r["elapsed_s"]}
        return entry | ({"guardrails": r["guardrails"]} if r.get("guardrails") else {})
