"""One frozen model per event kind: what each ledger event's `data` holds (docs/ledger.md).

Validated when an event is appended (`EventLog.append` calls `check_payload`): an unknown kind, an
unknown key, a missing key or a wrong type is refused before anything is written. Replay never
validates (speed): the reducer and the index read the stored JSON, whose keys are these models'
fields (a test walks the reducer's and the index's reads against them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ratchet.core.errors import LedgerError
from ratchet.core.vocab import JobStage, RunMode, StopReason, Variant

Json = Any
"""A JSON value kept as is (plan settings, a model call's record, per-example results)."""


class Payload(BaseModel):
    """Base of every payload: frozen, unknown keys refused, strict types (a bool is not an int, a
    string is not a number; an int is accepted where a float is declared, as JSON cannot tell 1 from
    1.0)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class TreeRefData(Payload):
    """A commit and its tree."""

    commit: str
    tree: str


class RunStarted(Payload):
    """A campaign began."""

    ledger_format: int
    run_id: str
    contract_digest: str
    baseline: TreeRefData
    salt: str
    sandbox: str
    target_kind: str
    direction: str
    limits: dict[str, float]
    holdout_reserve: int
    mode: RunMode | None = None
    examples: dict[str, Json] | None = None
    versions: dict[str, str] | None = None
    gate: dict[str, Json] | None = None
    warnings: list[str] | None = None
    signing_key: dict[str, Json] | None = None


class RunResumed(Payload):
    """A kernel (pid) resumed the run."""

    pid: int


class RunAbandoned(Payload):
    """An interrupted run was closed without resuming it."""

    pid: int | None = None
    reason: str | None = None


class AttemptStarted(Payload):
    """Attempt `attempt` (1-based) began."""

    attempt: int


class AgentLaunched(Payload):
    """The agent's own experiments of one launch."""

    attempt: int
    launch: int
    jobs: list[str]
    note: str
    launch_blob: str | None = None
    refused: str | None = None


class AgentLeg(Payload):
    """One leg of a command agent's CLI."""

    attempt: int
    leg: int
    kind: Literal["start", "wake", "nudge"]
    outcome: Literal["launch", "submit", "none", "channel_refused"]
    problem: str | None = None
    message_blob: str | None = None
    requests_blob: str | None = None
    job_id: str | None = None
    state: str | None = None
    exit_code: int | None = None
    elapsed_s: float | None = None
    session_id: str | None = None
    tokens: dict[str, Json] | None = None


class AgentHarvested(Payload):
    """A command agent's workspace became a tree."""

    attempt: int
    leg: int
    use: Literal["launch", "submit"]
    tree: str | None
    taken: list[str]
    ignored: list[str]
    violations: list[str]


class ModelReserved(Payload):
    """The llm agent's next call holds its worst case."""

    key: str
    charge: dict[str, float]
    request_digest: str
    request_blob: str


class ModelCalled(Payload):
    """A model call ended (agents.llm.records.CallRecord.to_json)."""

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
    charged: dict[str, float]
    tries: list[dict[str, Json]]


class AttemptSubmitted(Payload):
    """The agent submitted a candidate (or an invalid one)."""

    attempt: int
    tree: str | None
    summary: str
    report_blob: str | None
    params: dict[str, Json] | None
    invalid: str | None = None
    diff_blob: str | None = None


class AttemptGaveUp(Payload):
    """The agent gave up the attempt; `stops_campaign` when it has nothing more to propose."""

    attempt: int
    reason: str
    stops_campaign: bool = True


class TrialPlanned(Payload):
    """A stage's plan was compiled."""

    attempt: int
    trial: int
    stage: str
    plan_digest: str
    plan_blob: str
    level: float
    margin: float = 0.0
    looks: list[int]
    jobs: int


class JobStarted(Payload):
    """A job started on an executor."""

    job_id: str
    attempt: int
    stage: JobStage
    variant: Variant
    unit: int
    external_id: str | None = None
    backend: str | None = None
    pid: int | None = None


class JobFinished(Payload):
    """A job ended: its state, value or reason, seconds, units charged (examples: per-example
    results in compact form, and the tree)."""

    job_id: str
    attempt: int
    stage: JobStage
    variant: Variant
    unit: int
    seed: int
    state: str
    value: float | None
    reason: str
    elapsed_s: float
    cpu_s: float
    cached: bool
    units_charged: int
    gpu_s: float | None = None
    tree: str | None = None
    examples: dict[str, Json] | None = None


class TrialJudged(Payload):
    """The gate's verdict on one stage of a trial."""

    attempt: int
    stage: str
    verdict: str
    reason: str
    reason_text: str
    estimate: float | None
    interval: list[float] | None
    p_value: float | None
    threshold: float | None = None
    units: int
    look: int
    level: float
    retry_units: list[int] = []
    champion_mean: float | None = None
    candidate_mean: float | None = None
    champion_lcb: float | None = None
    candidate_lcb: float | None = None
    splits: dict[str, Json] | None = None
    p_value_kind: str | None = None
    bound: float | None = None
    interval_kind: str | None = None
    test: str | None = None
    signature: dict[str, Json] | None = None


class ChampionPromoted(Payload):
    """An accepted candidate became the champion."""

    attempt: int
    commit: str
    tree: str
    estimate: float | None
    interval: list[float] | None
    mean: float | None
    lcb: float | None
    branch: str
    signature: dict[str, Json] | None = None


class RunStopped(Payload):
    """The campaign stopped. calibration: a `ratchet calibrate` run's result (stop reason
    `calibrated`): seeds, the raw values per seed, the noise estimate (core.stats.calibration.Noise)."""

    stop_reason: StopReason
    budget: str | None
    detail: str | None
    signature: dict[str, Json] | None = None
    calibration: dict[str, Json] | None = None


class LedgerRepaired(Payload):
    """A torn last line was truncated on resume."""

    line: int
    truncated_bytes: int


PAYLOADS: Mapping[str, type[Payload]] = {
    "run.started": RunStarted, "run.resumed": RunResumed, "run.abandoned": RunAbandoned,
    "attempt.started": AttemptStarted, "agent.launched": AgentLaunched, "agent.leg": AgentLeg,
    "agent.harvested": AgentHarvested, "model.reserved": ModelReserved, "model.called": ModelCalled,
    "attempt.submitted": AttemptSubmitted, "attempt.gave_up": AttemptGaveUp, "trial.planned": TrialPlanned,
    "job.started": JobStarted, "job.finished": JobFinished, "trial.judged": TrialJudged,
    "champion.promoted": ChampionPromoted, "run.stopped": RunStopped, "ledger.repaired": LedgerRepaired,
}
"""The payload model of every event kind."""


def check_payload(kind: str, data: Mapping[str, Any]) -> None:
    """Refuse `data` that is not a valid payload of `kind`. Raises LedgerError
    `ledger.bad_payload` naming the kind and every problem (nothing is written then)."""
    model = PAYLOADS.get(kind)
    if model is None:
        raise LedgerError("ledger.bad_payload", f"no payload model for event kind {kind!r}")
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(data)'}: {e['msg']}" for e in exc.errors())
        raise LedgerError("ledger.bad_payload", f"{kind} data is malformed: {problems}",
                          hint="this is a bug in the writer of this event: nothing was written") from None
