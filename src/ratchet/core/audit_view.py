"""What `ratchet verify` reads from a run's events: the one place its checks read event payloads
(core.payloads; an event whose data does not read as its model raises LedgerError
`ledger.malformed`).

Pure: takes verified events, touches nothing. The checks are in core/audit.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from ratchet.core.events import Event
from ratchet.core.payloads import (
    AgentLeg,
    AttemptStarted,
    AttemptSubmitted,
    ChampionPromoted,
    JobFinished,
    ModelCalled,
    ModelReserved,
    RunStarted,
    TrialJudged,
    TrialPlanned,
    given,
)


@dataclass(frozen=True)
class Planned:
    """One `trial.planned`: where it is (`seq`) and what it recorded (None when absent). `margin`
    is None for runs recorded before the margin was."""

    seq: int
    attempt: Any
    trial: Any
    stage: Any
    plan_digest: Any
    plan_blob: Any
    level: Any
    margin: Any
    looks: Any


@dataclass(frozen=True)
class Judged:
    """One `trial.judged`: its `seq`, (attempt, stage) and the recorded decision fields."""

    seq: int
    attempt: Any
    stage: Any
    payload: TrialJudged

    def get(self, key: str) -> Any:
        """The recorded value of the field `key` (None when the line leaves it out)."""
        return given(getattr(self.payload, key))

    def has(self, key: str) -> bool:
        """The line holds the field `key` (a field left out reads as UNSET)."""
        return getattr(self.payload, key) is not UNSET


@dataclass(frozen=True)
class Submitted:
    """One `attempt.submitted`: the candidate tree and the blobs of its report and diff."""

    seq: int
    attempt: Any
    tree: Any
    report_blob: Any
    diff_blob: Any


@dataclass(frozen=True)
class Promoted:
    """One `champion.promoted`."""

    seq: int
    attempt: Any
    tree: Any
    estimate: Any


@dataclass(frozen=True)
class Finished:
    """One `job.finished`: job id, (attempt, stage), variant, units charged, cached, and the example
    ids it measured (None for a benchmark job)."""

    seq: int
    job_id: Any
    attempt: Any
    stage: Any
    units_charged: Any
    cached: Any
    examples: tuple[str, ...] | None
    payload: JobFinished


@dataclass
class RunView:
    """A run's events as the checks read them (see `read_view`). `started`: the run.started data
    ({} when the first event is not one); `champion_at`: (seq, champion tree) after the baseline
    and each promotion, in order; `blob_refs`: (seq, key path, digest) of every `*_blob` value;
    `model_events`: every `model.reserved` and `model.called`, in ledger order; `legs`: every
    `agent.leg`, in ledger order."""

    events: Sequence[Event]
    started: RunStarted | None
    planned: list[Planned] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    submitted: dict[Any, Submitted] = field(default_factory=dict)
    promoted: list[Promoted] = field(default_factory=list)
    finished: list[Finished] = field(default_factory=list)
    attempts_started: list[tuple[int, Any]] = field(default_factory=list)
    blob_refs: list[tuple[int, str, str]] = field(default_factory=list)
    champion_at: list[tuple[int, Any]] = field(default_factory=list)
    model_events: list[Event] = field(default_factory=list)
    legs: list[Event] = field(default_factory=list)
    _first_judged: dict[tuple[str, str], Judged] = field(default_factory=dict)
    _first_planned: dict[tuple[str, str], Planned] = field(default_factory=dict)

    @property
    def mode(self) -> str | None:
        """run.started's `mode` (`compare` for `ratchet compare`; None for a campaign)."""
        return given(self.started.mode) if self.started is not None else None

    @property
    def gate(self) -> dict[str, Any] | None:
        """The gate design run.started recorded (`gate_design.gate_design`), None when absent."""
        return self.started.gate if self.started is not None else None

    @property
    def salt(self) -> str | None:
        """The run's salt as run.started recorded it."""
        return self.started.salt if self.started is not None else None

    @property
    def baseline_tree(self) -> str | None:
        """The baseline's tree as run.started recorded it."""
        return self.started.baseline.tree if self.started is not None else None

    @property
    def limits(self) -> Mapping[str, Any]:
        """run.started's budget limits."""
        return self.started.limits if self.started is not None else {}

    @property
    def sandbox(self) -> str | None:
        """The sandbox mode run.started recorded."""
        return self.started.sandbox if self.started is not None else None

    @property
    def target_kind(self) -> str | None:
        """The target kind run.started recorded."""
        return self.started.target_kind if self.started is not None else None

    @property
    def signing_key(self) -> Mapping[str, Any] | None:
        """run.started's {"alg", "key_id", "public"} of the project key, or None (an unsigned run)."""
        return self.started.signing_key if self.started is not None else None

    @property
    def examples_fingerprint_blob(self) -> Any:
        """The examples split's fingerprint blob (examples targets), or None."""
        examples = given(self.started.examples) if self.started is not None else None
        return (examples or {}).get("fingerprint_blob")

    def champion_before(self, seq: int) -> Any:
        """The champion's tree just before event `seq`."""
        tree = None
        for at, champion in self.champion_at:
            if at >= seq:
                break
            tree = champion
        return tree

    def judged_for(self, attempt: Any, stage: Any) -> Judged | None:
        """The first `trial.judged` of (attempt, stage), or None."""
        return self._first_judged.get(_key(attempt, stage))

    def planned_for(self, attempt: Any, stage: Any) -> Planned | None:
        """The first `trial.planned` of (attempt, stage), or None."""
        return self._first_planned.get(_key(attempt, stage))

    def index(self) -> None:
        """Index the first judged and planned event of each (attempt, stage) (read_view calls it)."""
        for j in reversed(self.judged):
            self._first_judged[_key(j.attempt, j.stage)] = j
        for p in reversed(self.planned):
            self._first_planned[_key(p.attempt, p.stage)] = p


def _key(attempt: Any, stage: Any) -> tuple[str, str]:
    """A hashable key for (attempt, stage) whatever their recorded types."""
    return repr(attempt), repr(stage)


def _blob_refs(seq: int, value: Any, path: str) -> Iterator[tuple[int, str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(item, str) and str(key).endswith("_blob"):
                yield seq, where, item
            else:
                yield from _blob_refs(seq, item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _blob_refs(seq, item, f"{path}[{i}]")


def read_view(events: Sequence[Event]) -> RunView:
    """Read the events the checks need, in one pass. Raises LedgerError `ledger.malformed` for an
    event whose data does not read as its model."""
    first = events[0].payload if events else None
    view = RunView(events, first if isinstance(first, RunStarted) else None)
    view.champion_at.append((-1, view.baseline_tree))
    for e in events:
        d = e.payload
        if e.kind not in _FLAT_KINDS:  # job events (most of a ledger) hold no blob reference
            view.blob_refs.extend(_blob_refs(e.seq, e.data, ""))  # every `*_blob` key, as the line holds it
        if isinstance(d, JobFinished):
            examples = given(d.examples)
            view.finished.append(Finished(e.seq, d.job_id, d.attempt, d.stage, d.units_charged, d.cached,
                                          tuple(examples) if examples is not None else None, d))
        elif isinstance(d, TrialPlanned):
            view.planned.append(Planned(e.seq, d.attempt, d.trial, d.stage, d.plan_digest, d.plan_blob, d.level,
                                        given(d.margin), d.looks))
        elif isinstance(d, TrialJudged):
            view.judged.append(Judged(e.seq, d.attempt, d.stage, d))
        elif isinstance(d, AttemptSubmitted):
            view.submitted.setdefault(d.attempt, Submitted(e.seq, d.attempt, d.tree, d.report_blob,
                                                           given(d.diff_blob)))
        elif isinstance(d, ChampionPromoted):
            view.promoted.append(Promoted(e.seq, d.attempt, d.tree, d.estimate))
            view.champion_at.append((e.seq, d.tree))
        elif isinstance(d, AttemptStarted):
            view.attempts_started.append((e.seq, d.attempt))
        elif isinstance(d, ModelReserved | ModelCalled):
            view.model_events.append(e)
        elif isinstance(d, AgentLeg):
            view.legs.append(e)
    view.index()
    return view


_FLAT_KINDS = frozenset({"job.started", "job.finished"})
"""Kinds whose data reference no blob: not walked for `*_blob` keys."""
