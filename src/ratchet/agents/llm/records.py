"""What the llm agent records of its model calls, and the journal it records them through.

The agent never touches the ledger: the caller hands it a `Journal` (blobs plus call records) and
writes what it is given into its own events. Every prompt and every reply is a blob, made durable
before the reply is used; the API key and the request headers are never part of either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import msgspec

from ratchet.core.budget import Charge, Reservation
from ratchet.core.payloads import ModelCalled

CallRole = Literal["strategy", "executor", "reformat", "eval", "judge"]
"""Why a call was made:
strategy  the round's strategy call, writing directives;
executor  an attempt's call turning the evidence (and a directive) into a candidate;
reformat  the one retry of an executor call whose reply did not parse or apply;
eval      the kernel's eval model answering an example under a prompt solution (never a ledger record);
judge     the kernel's judge model scoring an output for an llm_judge check (never a ledger record)."""

CallOutcome = Literal[
    "ok", "budget_refused", "rate_limited", "server_error", "client_error", "config_error", "timeout",
    "connection_error", "lost",
]
"""How a call ended:
ok                a reply was received (its content may still be unusable);
budget_refused    its worst case did not fit in a model budget: never sent;
rate_limited      429 after every retry;
server_error      5xx after every retry, or the same 5xx too many times in a row;
client_error      a 4xx other than 429 (not retried);
config_error      the contract or environment is wrong (no key, unknown model, a prompt filling the
                  context window): retrying cannot help;
timeout           the request's overall deadline passed;
connection_error  the server could not be reached after every retry;
lost              the kernel stopped during the call (found on resume): charged its worst case, and
                  the call is made again."""

Role = Literal["system", "user", "assistant"]
"""Chat message roles the agent sends."""


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def to_json(self) -> dict[str, str]:
        """{"role", "content"} as sent to the server."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class TryRecord:
    """One HTTP try of a call: the status (None when no response came), a short error text, and the
    seconds waited before the next try (0.0 for the last)."""

    status: int | None
    error: str
    waited_s: float = 0.0


@dataclass(frozen=True)
class CallRecord:
    """One model call as recorded: its slot `key` (unique in the run: attempt or round, role, try),
    its `role`, the digest and blob of the request body, how it ended (`outcome`, with `detail`
    naming what went wrong), the reply blob (the server's raw response body) when one came, the
    `finish_reason`, the usage the server reported (None when it did not), what was charged, and
    each HTTP try."""

    key: str
    role: CallRole
    request_digest: str
    request_blob: str | None
    outcome: CallOutcome
    detail: str = ""
    reply_blob: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    charged: Charge = Charge()
    tries: tuple[TryRecord, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON for a ledger event (no key, no header: there are none here)."""
        return {
            "key": self.key, "role": self.role, "request_digest": self.request_digest,
            "request_blob": self.request_blob, "outcome": self.outcome, "detail": self.detail,
            "reply_blob": self.reply_blob, "finish_reason": self.finish_reason,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "charged": self.charged.to_json(),
            "tries": [{"status": t.status, "error": t.error, "waited_s": t.waited_s} for t in self.tries],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CallRecord:
        """The inverse of `to_json`. Raises msgspec.ValidationError for data that is not a
        `model.called` payload."""
        return cls.from_payload(msgspec.convert(data, ModelCalled))

    @classmethod
    def from_payload(cls, p: ModelCalled) -> CallRecord:
        """The record of a `model.called` event."""
        tries = tuple(TryRecord(t["status"], t["error"], float(t["waited_s"])) for t in p.tries)
        return cls(
            key=p.key, role=cast(CallRole, p.role), request_digest=p.request_digest, request_blob=p.request_blob,
            outcome=cast(CallOutcome, p.outcome), detail=p.detail, reply_blob=p.reply_blob,
            finish_reason=p.finish_reason,
            input_tokens=p.input_tokens, output_tokens=p.output_tokens, charged=Charge.from_json(p.charged),
            tries=tries,
        )


class Journal(Protocol):
    """Where the agent records its calls (implemented by the loop over the run's ledger).

    put_blob: store bytes, durable (fsynced) before it returns; returns `sha256:<hex>`.
    get_blob: the bytes of a stored blob (raises the ledger's error when missing or corrupt).
    record_reservation: a call's worst case is held; recorded BEFORE the request is sent.
    record_call: a call ended (its settlement: `record.charged`); recorded before its reply is used.
    find_call: the latest record for slot `key`, or None (how a resume reuses a recorded reply).
    """

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, digest: str) -> bytes: ...

    def record_reservation(self, reservation: Reservation, request_digest: str, request_blob: str) -> None: ...

    def record_call(self, record: CallRecord) -> None: ...

    def find_call(self, key: str) -> CallRecord | None: ...
