"""One line of the ledger `runs/<run_id>/events.jsonl`: its fields, the closed list of event kinds,
the Event it reads as, and the errors a line can raise.

A line is one canonical JSON object (RFC 8785) `{"seq", "ts", "kind", "prev", "data"}` followed by
"\\n": `seq` contiguous from 0, `ts` an ISO-8601 UTC string given by the caller, `prev` the digest
of the previous line's bytes (without its newline; `GENESIS_PREV` for seq 0), `kind` one of
EVENT_KINDS. Pure: no file is touched here (verify.py checks lines, events.py reads and writes the
file).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ratchet.core.canonical import canonical_bytes
from ratchet.core.errors import LedgerError

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

EVENT_KINDS: Mapping[str, str] = {
    "run.started": "a campaign began: run id, contract digest, baseline commit/tree, salt, limits",
    "run.resumed": "a kernel (data.pid) resumed an interrupted run; a new wall-clock session starts",
    "attempt.started": "attempt data.attempt (1-based, unique in the run) began",
    "agent.launched": "the agent launched its own experiments (data.jobs, the launch in full as data.launch_blob; "
                      "data.refused when the budget could not cover it and nothing ran)",
    "agent.leg": "a command agent's CLI ran one leg (data.kind start|wake|nudge, data.outcome, its prompt or wake "
                 "message and requests as blobs, seconds, tokens where the CLI reported them)",
    "agent.harvested": "a command agent's workspace became a tree (data.use launch|submit, the paths taken, "
                       "the paths listed but not taken, scope violations)",
    "model.reserved": "the llm agent's next call holds its worst case (data.key, data.charge) before it is sent",
    "model.called": "a model call ended (data.outcome, the request and reply blobs, usage, data.charged)",
    "attempt.submitted": "the agent submitted a candidate tree with a report (data.report_blob)",
    "attempt.gave_up": "the agent gave up the attempt without a candidate (data.reason)",
    "trial.planned": "a trial's plan was compiled (stage trial | confirm | holdout, data.plan_digest)",
    "job.started": "a job (variant x unit) started on an executor as process data.pid",
    "job.finished": "a job ended: state, metric value or reason, seconds, units charged",
    "trial.judged": "the gate's verdict on a trial stage (data.verdict, data.reason, estimate, interval)",
    "champion.promoted": "an accepted candidate became the champion (data.commit, data.tree)",
    "run.stopped": "the campaign stopped (data.stop_reason; data.budget when budget_exhausted)",
    "run.abandoned": "`ratchet abandon` (data.pid) closed an unfinished run for good: stop reason abandoned",
    "ledger.repaired": "a torn last line (data.line) was truncated (data.truncated_bytes) on resume",
}
"""Every event kind, with one line saying what it records. Closed: any other kind is malformed."""

assert set(get_args(EventKind)) == set(EVENT_KINDS)

LEDGER_FORMAT = 3
"""The ledger format this build writes (`run.started` data.ledger_format; a run without it is format
1). A change to what events mean or hold bumps it; RESUMABLE_FORMATS says which this build resumes.

1: no recorded preflight, examples plans of their own format, every
   give-up ending the campaign.
2: the preflight recorded (stage `preflight`), examples plans as `Plan`s over example ids, give-ups
   ending only their attempt (`stops_campaign`), agent legs and model calls recorded.
3: budget charges (`model.reserved.charge`, `model.called.charged`) keyed by resource name
   (`model_calls`, `input_tokens`, `output_tokens`, `usd`; zeros left out) where format 2 wrote
   `calls` and every key."""

RESUMABLE_FORMATS: frozenset[int] = frozenset({2, 3})
"""Formats this build resumes: format 2 reads the same but for its charges' `calls` key, which
`core.budget.Charge.from_json` reads too."""

GENESIS_PREV = "sha256:" + "0" * 64
"""The `prev` of the event with seq 0."""

LINE_FIELDS = frozenset({"seq", "ts", "kind", "prev", "data"})
"""The keys of one event line, exactly."""

TORN_HINT = (
    "an explicit `ratchet run --resume RUN_ID` truncates the torn line and records a ledger.repaired event"
)
TAMPER_HINT = "events.jsonl was changed after it was written; restore it from a backup or start a new run"


class LedgerLineError(LedgerError):
    """A LedgerError about one line of events.jsonl; `line` is its 1-based line number."""

    def __init__(self, code: str, message: str, line: int, hint: str | None = None):
        super().__init__(code, message, hint)
        self.line = line


@dataclass(frozen=True)
class Event:
    """One verified ledger event. `digest` is `sha256:<hex>` of its line's bytes (no newline);
    `data` is the parsed JSON object exactly as stored (treat it as read-only)."""

    seq: int
    ts: str
    kind: EventKind
    prev: str
    data: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class Torn:
    """A torn last line: 1-based `line`, byte `offset` where it starts, `length` bytes to drop."""

    line: int
    offset: int
    length: int


def format_ts(now: str | dt.datetime) -> str:
    """`now` as an ISO-8601 UTC string; a str is checked and returned as is.

    Raises ValueError for an unparsable string, a naive datetime or a non-UTC offset.
    """
    if isinstance(now, dt.datetime):
        if now.utcoffset() is None:
            raise ValueError("ledger timestamps need a timezone-aware datetime")
        return now.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    parsed = dt.datetime.fromisoformat(now)
    if parsed.utcoffset() != dt.timedelta(0):
        raise ValueError(f"ledger timestamp {now!r} is not UTC")
    return now


def encode_event(seq: int, ts: str, kind: str, prev: str, data: Mapping[str, Any]) -> bytes:
    """The canonical bytes of one event line, without the trailing newline. Raises CanonicalError."""
    return canonical_bytes({"seq": seq, "ts": ts, "kind": kind, "prev": prev, "data": data})

