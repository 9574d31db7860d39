"""One frozen model per event kind: what each ledger event's `data` holds. Each model is the one
definition of its kind: its name (`kind`), what it records (the first paragraph of its docstring,
listed as core.events.EVENT_KINDS) and its fields.

Writers build a model and `Kernel.record` appends it: `to_data` gives the JSON object of the line
and `check_payload` refuses, before anything is written, an unknown kind, an unknown key, a missing
key or a wrong type (strict: a bool is not an int, a string is not a number; an int is accepted
where a float is declared, as JSON cannot tell 1 from 1.0). Readers get the model from
`Event.payload` (read leniently: a key an older build wrote and this one no longer does is ignored;
a key an older build did not write reads as its field's default).

A field whose default is UNSET is left out of the line when unset, and reads as UNSET from a line
without it; every other field is always written (None as null).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from ratchet.core.errors import LedgerError
from ratchet.core.vocab import JobStage, LegOutcome, RunMode, StopReason, Variant

Json = Any
"""A JSON value kept as is (plan settings, a model call's record, per-example results)."""

T = TypeVar("T")

Number = int | float
"""A JSON number as read: an int stays an int (JSON cannot tell 1 from 1.0, and a reader shows the
number as it was written)."""


EventKind = Literal[
    "run.started",
    "run.resumed",
    "attempt.started",
    "agent.launched",
    "agent.leg",
    "agent.harvested",
    "model.reserved",
    "model.called",
    "attempt.submitted",
    "attempt.gave_up",
    "trial.planned",
    "job.started",
    "job.finished",
    "trial.judged",
    "champion.promoted",
    "run.stopped",
    "run.abandoned",
    "ledger.repaired",
]
"""Every event kind, as a type (each is the `kind` of one model below; core.events checks that the
two agree)."""


class Payload(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Base of every payload. `kind`: the event kind it is the data of. Not tracked by the garbage
    collector (gc=False: a payload holds JSON values, which cannot refer back to it), so a replay
    holding 100,000 of them does not make every collection walk them."""

    kind: ClassVar[EventKind]

    def to_data(self) -> dict[str, Any]:
        """The JSON object of the event's `data`: every field but the UNSET ones, nested models
        as objects."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class TreeRefData(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A commit and its tree (40-hex git ids)."""

    commit: str
    tree: str


class RunStarted(Payload, frozen=True, kw_only=True):
    """a campaign began: run id, contract digest, baseline commit/tree, salt, limits"""

    kind: ClassVar[EventKind] = "run.started"
    ledger_format: int = 1
    """The ledger format (core.events.LEDGER_FORMAT) this run was written in; 1 when not recorded."""
    run_id: str
    contract_digest: str
    baseline: TreeRefData
    salt: str
    sandbox: str
    """The sandbox mode in force (bwrap | none)."""
    target_kind: str
    direction: str
    limits: dict[str, Number]
    """The budget limits as recorded (core.budget names -> numbers; 0: no limit)."""
    holdout_reserve: int = 0
    """Job-units kept for the final holdout measurement."""
    warnings: list[str] | None = None
    gate: dict[str, Json] | None = None
    versions: dict[str, str] | None = None
    signing_key: dict[str, Json] | None = None
    """The run's public key {"alg", "key_id", "public"} when its events are signed; None otherwise."""
    mode: RunMode | None | UnsetType = UNSET
    """compare | calibrate for a one-shot run; UNSET for a campaign."""
    examples: dict[str, Json] | None | UnsetType = UNSET
    """The examples target's fingerprint; UNSET for a benchmark."""
    job_token: str | UnsetType = UNSET
    """The name of the run's scheduler jobs (a Slurm array's --job-name, `ratchet-<12 hex>`): a
    resume re-attaches to, polls and cancels only jobs of that name, wherever the project now is;
    UNSET for the local backend, or a run recorded before the token was (its token is then
    derived from the run's jobs directory, as it was when the run was written)."""
    warm_start: dict[str, Json] | None | UnsetType = UNSET
    """What the search agent warm-starts from (loop.warm_start): {"blob", "key", "runs", "trials"};
    UNSET when the run does not warm-start (another agent, an examples target, a run recorded before
    warm starts were)."""


class RunResumed(Payload, frozen=True, kw_only=True):
    """a kernel (data.pid) resumed an interrupted run; a new wall-clock session starts"""

    kind: ClassVar[EventKind] = "run.resumed"
    pid: int


class RunAbandoned(Payload, frozen=True, kw_only=True):
    """`ratchet abandon` (data.pid) closed an unfinished run for good: stop reason abandoned"""

    kind: ClassVar[EventKind] = "run.abandoned"
    pid: int | None = None
    reason: str | None | UnsetType = UNSET


class AttemptStarted(Payload, frozen=True, kw_only=True):
    """attempt data.attempt (1-based, unique in the run) began; data.revises: the attempt whose verdict it
    revises, in the same agent session; data.worker: the worker running it; data.rebases: the accepted
    attempt whose change it re-measures on the moved champion"""

    kind: ClassVar[EventKind] = "attempt.started"
    attempt: int
    revises: int | UnsetType = UNSET
    """The attempt whose verdict this one answers: the same agent session revises its change."""
    worker: int | UnsetType = UNSET
    """Which of the run's `agent.workers` (1-based) runs this attempt; unset: the only one."""
    rebases: int | UnsetType = UNSET
    """The accepted attempt whose change this one re-measures, re-based onto a champion promoted
    after that attempt's trial was planned (no agent works in this attempt)."""


class AgentLaunched(Payload, frozen=True, kw_only=True):
    """the agent launched its own experiments (data.jobs, the launch in full as data.launch_blob;
    data.refused when the budget could not cover it and nothing ran)"""

    kind: ClassVar[EventKind] = "agent.launched"
    attempt: int
    launch: int
    """1-based within the attempt."""
    jobs: list[str]
    note: str = ""
    launch_blob: str | None | UnsetType = UNSET
    refused: str | None | UnsetType = UNSET


class AgentLeg(Payload, frozen=True, kw_only=True):
    """a command agent's CLI ran one leg (data.kind start|wake|nudge|revise, data.outcome, its prompt or wake
    message, requests, command line and output as blobs, seconds, tokens and cost where the CLI
    reported them, data.charged)"""

    kind: ClassVar[EventKind] = "agent.leg"
    attempt: int
    leg: int
    # `kind` is the event kind: the leg's kind is `leg_kind`, written under the key "kind".
    leg_kind: Literal["start", "wake", "nudge", "revise"] = msgspec.field(name="kind")
    outcome: LegOutcome
    problem: str | None = None
    message_blob: str | None = None
    requests_blob: str | None = None
    job_id: str | None = None
    state: str | None = None
    exit_code: int | None = None
    elapsed_s: Number | None = None
    session_id: str | None = None
    tokens: dict[str, Json] | None = None
    cost_usd: Number | None | UnsetType = UNSET
    """The cost in USD the CLI reported (Claude Code `total_cost_usd`); None or UNSET: none."""
    charged: dict[str, Number] | UnsetType = UNSET
    """What the leg was charged against the model budgets ({resource: amount}: `input_tokens`,
    `output_tokens`, `usd`; zeros left out), counted from `tokens` and `cost_usd`
    (`core.budget.agent_kinds.leg_charge`). UNSET: the leg's use is unknown (the CLI reported none,
    or a build before this field)."""
    argv_blob: str | None | UnsetType = UNSET
    """The CLI's command line as run (a JSON list of strings, its program as found, placeholders
    replaced); None: the leg never got that far (a channel refused before it ran); UNSET in runs
    recorded before it was."""
    stdout_blob: str | None | UnsetType = UNSET
    """The end of the leg's stdout: its last LEG_OUTPUT_CAP_BYTES bytes (agents.command.limits) as
    written; None when no output file was left (the process never started)."""
    stderr_blob: str | None | UnsetType = UNSET
    """The same for stderr."""
    stdout_bytes: int | None | UnsetType = UNSET
    """Bytes the CLI wrote to stdout in the leg (the blob holds all of them when not truncated)."""
    stderr_bytes: int | None | UnsetType = UNSET
    """Bytes the CLI wrote to stderr in the leg."""
    stdout_truncated: bool | UnsetType = UNSET
    """The leg wrote more to stdout than the cap: its blob holds only the end."""
    stderr_truncated: bool | UnsetType = UNSET
    """The same for stderr."""


class AgentHarvested(Payload, frozen=True, kw_only=True):
    """a command agent's workspace became a tree (data.use launch|submit, the paths taken, the paths
    listed but not taken, scope violations)"""

    kind: ClassVar[EventKind] = "agent.harvested"
    attempt: int
    leg: int
    use: Literal["launch", "submit"]
    tree: str | None
    taken: list[str]
    ignored: list[str]
    violations: list[str]


class ModelReserved(Payload, frozen=True, kw_only=True):
    """the llm agent's next call holds its worst case (data.key, data.charge) before it is sent"""

    kind: ClassVar[EventKind] = "model.reserved"
    key: str
    charge: dict[str, Number]
    request_digest: str
    request_blob: str


class ModelCalled(Payload, frozen=True, kw_only=True):
    """a model call ended (data.outcome, the request and reply blobs, usage, data.charged)"""

    kind: ClassVar[EventKind] = "model.called"
    key: str
    role: str
    request_digest: str
    request_blob: str | None
    outcome: str
    detail: str
    reply_blob: str | None
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    charged: dict[str, Number]
    tries: list[dict[str, Json]]


class AttemptSubmitted(Payload, frozen=True, kw_only=True):
    """the agent submitted a candidate tree with a report (data.report_blob)"""

    kind: ClassVar[EventKind] = "attempt.submitted"
    attempt: int
    tree: str | None
    summary: str
    report_blob: str | None
    params: dict[str, Json] | None
    invalid: str | None | UnsetType = UNSET
    """Why the submission holds no candidate tree (None or UNSET: it holds one)."""
    diff_blob: str | None | UnsetType = UNSET
    unresponsive: bool | UnsetType = UNSET
    """True when no candidate came because the agent's server did not answer (counts toward
    agent.max_idle_attempts); UNSET otherwise and in runs recorded before it was."""


class AttemptGaveUp(Payload, frozen=True, kw_only=True):
    """the agent gave up the attempt without a candidate (data.reason)"""

    kind: ClassVar[EventKind] = "attempt.gave_up"
    attempt: int
    reason: str
    stops_campaign: bool = True
    """The give-up ends the campaign, not only the attempt (format 1 runs: always)."""
    unresponsive: bool | UnsetType = UNSET
    """True when the agent did not work (failed to start, timed out, ended without a request after
    a reminder): counts toward agent.max_idle_attempts; UNSET otherwise and in older runs."""


class TrialPlanned(Payload, frozen=True, kw_only=True):
    """a trial's plan was compiled (stage trial | confirm | holdout, data.plan_digest)"""

    kind: ClassVar[EventKind] = "trial.planned"
    attempt: int
    trial: int
    stage: str
    plan_digest: str
    plan_blob: str
    level: Number
    margin: Number | UnsetType = UNSET
    """The margin tested as the null (always written; UNSET in runs recorded before it was)."""
    looks: list[int]
    jobs: int


class JobStarted(Payload, frozen=True, kw_only=True):
    """a job (variant x unit) started on an executor as process data.pid"""

    kind: ClassVar[EventKind] = "job.started"
    job_id: str
    attempt: int
    stage: JobStage
    variant: Variant
    unit: int
    external_id: str | None = None
    """The executor's id of the job (a pid, a Slurm job id)."""
    backend: str | None = None
    pid: int | None | UnsetType = UNSET
    """The job's process id, local backend only."""


class JobFinished(Payload, frozen=True, kw_only=True):
    """a job ended: state, metric value or reason, seconds, units charged"""

    kind: ClassVar[EventKind] = "job.finished"
    job_id: str
    attempt: int
    stage: JobStage
    variant: Variant
    unit: int
    seed: int
    state: str
    value: Number | None
    """The raw metric (a benchmark) or examples passed (an examples shard) when state is ok."""
    reason: str
    elapsed_s: Number
    cpu_s: Number
    cached: bool
    units_charged: int
    gpu_s: Number | None | UnsetType = UNSET
    """GPU seconds (benchmark jobs)."""
    tree: str | None | UnsetType = UNSET
    """The tree measured (examples shards)."""
    examples: dict[str, Json] | None | UnsetType = UNSET
    """Per-example results in compact form (examples shards)."""
    guardrails: dict[str, Number] | None | UnsetType = UNSET
    """Each guardrail's value by name when state is ok (a benchmark: the key read from the metric's JSON
    line; an examples shard: the named check's pass rate over the shard); UNSET without guardrails."""
    eval_calls: int | UnsetType = UNSET
    """Eval and judge model calls made (prompt solutions; a cached reply is not a call)."""
    eval_tokens: int | UnsetType = UNSET
    """Input plus output tokens of those calls (prompt solutions)."""
    eval_usd: Number | UnsetType = UNSET
    """Dollars of those calls, priced from the contract (prompt solutions)."""
    requeues: int | UnsetType = UNSET
    """How often the scheduler requeued the job before this end (Slurm's Restarts); UNSET when it
    was not requeued, or ran where no scheduler requeues."""


class TrialJudged(Payload, frozen=True, kw_only=True):
    """the gate's verdict on a trial stage (data.verdict, data.reason, estimate, interval)"""

    kind: ClassVar[EventKind] = "trial.judged"
    attempt: int
    stage: str
    verdict: str
    reason: str
    reason_text: str
    estimate: Number | None
    interval: list[Number] | None
    p_value: Number | None
    threshold: Number | None = None
    units: int
    look: int
    level: Number
    retry_units: list[int] = []
    p_value_kind: str | None = None
    bound: Number | None = None
    interval_kind: str | None = None
    test: str | None = None
    champion_mean: Number | None | UnsetType = UNSET
    """The champion's raw mean as measured by this stage; UNSET when it was judged without jobs."""
    candidate_mean: Number | None | UnsetType = UNSET
    champion_lcb: Number | None | UnsetType = UNSET
    """The guarding confidence bound of champion_mean (None: fewer than 2 units)."""
    candidate_lcb: Number | None | UnsetType = UNSET
    skewness: Number | None | UnsetType = UNSET
    """G1 of the deciding look's direction-normalised paired differences (stats.skew); None for
    pass/fail scores, fewer than 3 units or no spread; UNSET when judged without jobs or recorded
    before skewness was."""
    splits: dict[str, Json] | None | UnsetType = UNSET
    """Pass rates per split (the examples holdout)."""
    guardrails: list[dict[str, Json]] | UnsetType = UNSET
    """Each guardrail's result (core.guardrails.GuardrailCheck.to_json: name, allowance, estimate,
    bound, p_value, threshold, units, status, champion_mean, candidate_mean); UNSET without guardrails."""
    signature: dict[str, Json] | None | UnsetType = UNSET
    """Set by the kernel's signer (ledger.signing), never by a writer."""


class ChampionPromoted(Payload, frozen=True, kw_only=True):
    """an accepted candidate became the champion (data.commit, data.tree)"""

    kind: ClassVar[EventKind] = "champion.promoted"
    attempt: int
    commit: str
    tree: str
    estimate: Number | None
    interval: list[Number] | None
    mean: Number | None
    lcb: Number | None
    branch: str
    signature: dict[str, Json] | None | UnsetType = UNSET
    """Set by the kernel's signer (ledger.signing), never by a writer."""


class RunStopped(Payload, frozen=True, kw_only=True):
    """the campaign stopped (data.stop_reason; data.budget when budget_exhausted)"""

    kind: ClassVar[EventKind] = "run.stopped"
    stop_reason: StopReason
    budget: str | None
    detail: str | None
    signature: dict[str, Json] | None | UnsetType = UNSET
    """Set by the kernel's signer (ledger.signing), never by a writer."""
    calibration: dict[str, Json] | None | UnsetType = UNSET
    """A `ratchet calibrate` run's result (stop reason `calibrated`): the raw values per seed and
    the noise estimate (core.stats.calibration.Noise)."""


class LedgerRepaired(Payload, frozen=True, kw_only=True):
    """a torn last line (data.line) was truncated (data.truncated_bytes) on resume"""

    kind: ClassVar[EventKind] = "ledger.repaired"
    line: int
    truncated_bytes: int


MODELS: tuple[type[Payload], ...] = (
    RunStarted, RunResumed, AttemptStarted, AgentLaunched, AgentLeg, AgentHarvested, ModelReserved, ModelCalled,
    AttemptSubmitted, AttemptGaveUp, TrialPlanned, JobStarted, JobFinished, TrialJudged, ChampionPromoted,
    RunStopped, RunAbandoned, LedgerRepaired,
)
"""Every event kind's model, in the order the kinds are listed."""

PAYLOADS: Mapping[str, type[Payload]] = {model.kind: model for model in MODELS}
"""The payload model of every event kind."""


def given(value: T | None | UnsetType) -> T | None:
    """`value`, None when it is UNSET (its key was not in the line)."""
    return None if value is UNSET else value


def describe(model: type[Payload]) -> str:
    """What an event of `model`'s kind records: its docstring's first paragraph on one line."""
    return " ".join((model.__doc__ or "").split("\n\n")[0].split())


def data_keys(model: type[Payload]) -> tuple[str, ...]:
    """The keys `model` may write in an event's data, in field order."""
    return tuple(f.encode_name for f in msgspec.structs.fields(model))


def read_payload(kind: str, data: Mapping[str, Any]) -> Payload:
    """The model of an event's stored `data` (unknown keys ignored, missing optional keys read as
    their defaults). Raises msgspec.ValidationError when a key holds a wrong type or a required
    key is missing, KeyError for an unknown kind."""
    return msgspec.convert(data, PAYLOADS[kind])


def check_payload(kind: str, data: Mapping[str, Any]) -> None:
    """Refuse `data` that is not a valid payload of `kind`. Raises LedgerError
    `ledger.bad_payload` naming the kind and every problem (nothing is written then)."""
    model = PAYLOADS.get(kind)
    if model is None:
        raise LedgerError("ledger.bad_payload", f"no payload model for event kind {kind!r}")
    fields = {f.encode_name: f for f in msgspec.structs.fields(model)}
    problems = [f"{key}: unknown key" for key in data if key not in fields]
    if not problems:
        try:
            msgspec.convert(data, model)
            return
        except msgspec.ValidationError:
            pass  # named field by field below
    for name, info in fields.items():
        if name not in data:
            if info.required:
                problems.append(f"{name}: Field required")
            continue
        try:
            msgspec.convert(data[name], info.type)
        except msgspec.ValidationError as exc:
            problems.append(f"{name}: {str(exc).replace(' - at `$`', '')}")
    if problems:
        raise LedgerError("ledger.bad_payload", f"{kind} data is malformed: {'; '.join(problems)}",
                          hint="this is a bug in the writer of this event: nothing was written")
