"""One model call against an OpenAI-compatible chat API, budgeted, retried, deadlined, recorded.

`ChatClient.call(key, role, messages)`:
1. a recorded call under `key` is reused, never re-requested (a resume);
2. the worst case is reserved in the caller's budget `Account`; a call that does not fit is never sent;
3. the request body is stored as a blob and the reservation recorded BEFORE the request is sent;
4. 429 and 5xx (and unreachable servers) are retried with backoff, honouring `Retry-After` (seconds
   or an HTTP date, capped at `retry_max_wait_s`); other 4xx are not retried; after
   `MAX_IDENTICAL_SERVER_ERRORS` identical 5xx the call ends; every try has an overall deadline
   (`request_timeout_s`) that fires even when the server holds the connection open;
5. the reply body is stored as a blob (durable) and the call recorded before the reply is returned.

Every failure is a recorded `CallRecord` with an outcome, never an exception. The API key is read
from the environment at call time (`api_key_env`) and handed only to the SDK's Authorization
header: never to a blob, a record, a message or a log.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ratchet.agents.llm.records import CallOutcome, CallRecord, CallRole, Journal, Message, TryRecord
from ratchet.core.budget import Account, BudgetStop, Charge
from ratchet.core.budget.model import call_worst_case, priced, reserve_call
from ratchet.core.canonical import canonical_bytes, digest_bytes
from ratchet.core.contract_llm import LlmAgentConfig

MAX_IDENTICAL_SERVER_ERRORS = 3
"""Identical 5xx replies (same status, same body) in a row after which a call ends."""

BACKOFF_BASE_S = 1.0
"""First wait, seconds, before retrying without a Retry-After; doubled each try, capped."""

NEAR_CONTEXT_FRACTION = 0.9
"""A prompt using at least this share of `context_window` tokens is "near the context window"."""

BYTES_PER_TOKEN_ESTIMATE = 4.0
"""Typical UTF-8 bytes per token, to estimate a prompt's tokens when the server reports none."""

DETAIL_CAP_CHARS = 500
"""Longest error text kept from a server's reply in a record."""

NO_KEY = "none"
"""The key sent when `api_key_env = ""` (local servers need none; the SDK insists on one)."""

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "too many tokens", "prompt is too long")


@dataclass(frozen=True)
class ChatReply:
    """The usable part of a reply: the assistant's `content` ("" when none) and `finish_reason`."""

    content: str
    finish_reason: str | None


@dataclass(frozen=True)
class CallResult:
    """A call's record, its reply when one came (`record.outcome == "ok"`), and whether it was
    reused from the journal rather than requested now."""

    record: CallRecord
    reply: ChatReply | None
    reused: bool = False

    @property
    def ok(self) -> bool:
        """True when a reply came."""
        return self.reply is not None


class _Failure(Exception):
    """A try that failed: its outcome class, status, a short text, whether to retry, and the wait
    the server asked for (seconds)."""

    def __init__(self, outcome: CallOutcome, status: int | None, text: str, retry: bool,
                 retry_after_s: float | None = None):
        super().__init__(text)
        self.outcome = outcome
        self.status = status
        self.text = text
        self.retry = retry
        self.retry_after_s = retry_after_s


BUDGET_LOCK = threading.Lock()
"""Held while a call's worst case is checked and reserved, and while it is settled: the llm agents
of several workers (`agent.workers`) share one model budget (an `Account`) and call at once."""


class ChatClient:
    """Chat calls for one run: `config` ([agent.llm]), the caller's `budget` and `journal`.

    environ: where the key is read at call time (default os.environ); sleep: waits between tries
    (seconds); backoff_base_s: see BACKOFF_BASE_S.
    """

    def __init__(self, config: LlmAgentConfig, budget: Account, journal: Journal, *,
                 environ: Mapping[str, str] | None = None, sleep: Callable[[float], None] = time.sleep,
                 backoff_base_s: float = BACKOFF_BASE_S):
        self.config = config
        self.budget = budget
        self.journal = journal
        self.environ = os.environ if environ is None else environ
        self.sleep = sleep
        self.backoff_base_s = backoff_base_s

    # -- the call ----------------------------------------------------------------------------------

    def call(self, key: str, role: CallRole, messages: Sequence[Message]) -> CallResult:
        """Make (or reuse) the call in slot `key`. Never raises for a failed call: the result's
        record says how it ended. Raises only what the journal raises (the ledger is broken)."""
        found = self.journal.find_call(key)
        if found is not None and found.outcome != "lost":
            return CallResult(found, self._reply_of(found), reused=True)
        body = self.request_body(messages)
        data = canonical_bytes(body)
        request_digest = digest_bytes(data)
        with BUDGET_LOCK:  # agents of several workers share one budget: checked and held as one step
            if key in self.budget.open:  # reserved by a kernel that stopped during the call
                lost = self.budget.settle(key, None)
                self.journal.record_call(CallRecord(key, role, request_digest, None, "lost",
                                                    "the kernel stopped during this call", charged=lost.charge))
            ask = call_worst_case(self.config.price, len(data), len(messages), self.config.max_output_tokens)
            held = reserve_call(self.budget, key, ask)
            if isinstance(held, BudgetStop):
                record = CallRecord(key, role, request_digest, None, "budget_refused", f"{held.name}: {held.detail}")
                self.journal.record_call(record)
                return CallResult(record, None)
            request_blob = self.journal.put_blob(data)
            self.journal.record_reservation(held, request_digest, request_blob)
        base = CallRecord(key, role, request_digest, request_blob, "ok")
        record, reply = self._send(base, body)
        with BUDGET_LOCK:
            charged = self.budget.settle(key, self._actual(record)).charge
        record = replace(record, charged=charged)
        self.journal.record_call(record)
        return CallResult(record, reply)

    def request_body(self, messages: Sequence[Message]) -> dict[str, Any]:
        """The JSON body sent (and stored): model, messages, sampling settings. Never the key."""
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [m.to_json() for m in messages],
            "max_tokens": self.config.max_output_tokens,
            "temperature": self.config.temperature,
        }
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        return body

    def _actual(self, record: CallRecord) -> Charge | None:
        """What a finished call costs: its reported usage; nothing when it was never sent; one call
        and no tokens when the server answered with an error status; None (its worst case) when the
        server may have worked without saying how much (no usage, a timeout, a dropped connection)."""
        if record.input_tokens is not None and record.output_tokens is not None:
            return priced(self.config.price, record.input_tokens, record.output_tokens)
        if not record.tries:
            return Charge()
        if record.tries[-1].status is None or record.tries[-1].status == 200:
            return None
        return Charge.of(model_calls=1)

    # -- tries ---------------------------------------------------------------------------------------

    def _send(self, base: CallRecord, body: dict[str, Any]) -> tuple[CallRecord, ChatReply | None]:
        key_name = self.config.api_key_env
        api_key = self.environ.get(key_name) if key_name else NO_KEY
        if not api_key:
            detail = f"the environment variable {key_name} (agent.llm.api_key_env) is not set"
            return replace(base, outcome="config_error", detail=detail), None
        tries: list[TryRecord] = []
        identical = 0
        last_error: tuple[int | None, str] | None = None
        for attempt in range(self.config.max_retries + 1):
            try:
                raw = asyncio.run(self._post(body, api_key))
            except _Failure as failure:
                same = (failure.status, failure.text)
                identical = identical + 1 if same == last_error else 1
                last_error = same
                final = (not failure.retry or attempt == self.config.max_retries
                         or (failure.outcome == "server_error" and identical >= MAX_IDENTICAL_SERVER_ERRORS))
                wait = 0.0 if final else self._wait_s(attempt, failure.retry_after_s)
                tries.append(TryRecord(failure.status, failure.text, wait))
                if final:
                    return replace(base, outcome=failure.outcome, detail=failure.text, tries=tuple(tries)), None
                self.sleep(wait)
                continue
            tries.append(TryRecord(200, ""))
            return self._received(replace(base, tries=tuple(tries)), raw, len(canonical_bytes(body)))
        raise AssertionError("unreachable: the last try always returns")

    def _wait_s(self, attempt: int, retry_after_s: float | None) -> float:
        cap = self.config.retry_max_wait_s
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), cap)
        return min(self.backoff_base_s * 2**attempt, cap)

    async def _post(self, body: dict[str, Any], api_key: str) -> bytes:
        """One HTTP try under the overall deadline; the raw response body. Raises _Failure."""
        import openai

        timeout = self.config.request_timeout_s
        client = openai.AsyncOpenAI(base_url=self.config.base_url, api_key=api_key, max_retries=0, timeout=timeout)
        try:
            async with asyncio.timeout(timeout):
                raw = await client.chat.completions.with_raw_response.create(**body)
                return await raw.http_response.aread()
        except TimeoutError:
            raise _Failure("timeout", None, f"no complete reply within request_timeout_s = {timeout:g}",
                           retry=False) from None
        except openai.APITimeoutError:
            raise _Failure("timeout", None, f"the SDK timed out after {timeout:g} s", retry=False) from None
        except openai.APIStatusError as exc:
            raise self._status_failure(exc) from None
        except openai.APIConnectionError as exc:
            raise _Failure("connection_error", None, _short(f"cannot reach {self.config.base_url}: {exc}"),
                           retry=True) from None
        finally:
            await client.close()

    def _status_failure(self, exc: Any) -> _Failure:
        status = int(exc.status_code)
        text = _short(f"HTTP {status}: {_error_text(exc)}")
        after = retry_after_s(exc.response.headers.get("retry-after"), datetime.now(UTC))
        if status == 429:
            return _Failure("rate_limited", status, text, retry=True, retry_after_s=after)
        if status >= 500:
            return _Failure("server_error", status, text, retry=True, retry_after_s=after)
        if status in (401, 403):
            hint = f"the server refused the key in {self.config.api_key_env or '(no key)'}"
            return _Failure("config_error", status, f"{text} ({hint})", retry=False)
        if status == 404:
            hint = f"check agent.llm.base_url ({self.config.base_url}) and agent.llm.model ({self.config.model})"
            return _Failure("config_error", status, f"{text} ({hint})", retry=False)
        if any(w in text.lower() for w in _CONTEXT_WORDS):
            return _Failure("config_error", status, f"{text} ({self._context_hint()})", retry=False)
        return _Failure("client_error", status, text, retry=False)

    # -- the reply -----------------------------------------------------------------------------------

    def _received(self, record: CallRecord, raw: bytes, request_bytes: int) -> tuple[CallRecord, ChatReply | None]:
        """Store the reply (durable), read it, and judge a reply cut off by the context window."""
        reply_blob = self.journal.put_blob(raw)
        record = replace(record, reply_blob=reply_blob)
        parsed = parse_reply(raw)
        if parsed is None:
            return replace(record, outcome="server_error", detail="the reply is not a chat completion"), None
        reply, usage = parsed
        record = replace(record, finish_reason=reply.finish_reason, input_tokens=usage[0], output_tokens=usage[1])
        if not reply.content.strip() and reply.finish_reason == "length":
            prompt = usage[0] if usage[0] is not None else int(request_bytes / BYTES_PER_TOKEN_ESTIMATE)
            if prompt >= NEAR_CONTEXT_FRACTION * self.config.context_window:
                detail = (f"the reply is empty and was cut off (finish_reason = length) with a prompt of "
                          f"about {prompt} tokens: {self._context_hint()}")
                return replace(record, outcome="config_error", detail=detail), None
        return record, reply

    def _context_hint(self) -> str:
        return (f"the prompt nearly fills the model's context window (agent.llm.context_window = "
                f"{self.config.context_window}, max_output_tokens = {self.config.max_output_tokens}); "
                "set context_window to the server's real context length (vLLM --max-model-len, Ollama "
                "num_ctx) or lower max_output_tokens")

    def _reply_of(self, record: CallRecord) -> ChatReply | None:
        if record.outcome != "ok" or record.reply_blob is None:
            return None
        parsed = parse_reply(self.journal.get_blob(record.reply_blob))
        return parsed[0] if parsed else None


def parse_reply(raw: bytes) -> tuple[ChatReply, tuple[int | None, int | None]] | None:
    """(reply, (prompt_tokens, completion_tokens)) from a chat-completions response body, or None
    when it is not one. Usage counts are None when the server did not report them."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    if not isinstance(content, str):
        return None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    counts = tuple(v if isinstance(v, int) and v >= 0 else None
                   for v in (usage.get("prompt_tokens"), usage.get("completion_tokens")))
    return ChatReply(content, finish if isinstance(finish, str) else None), (counts[0], counts[1])


def retry_after_s(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110
    §10.2.3), relative to `now` (timezone-aware); None when absent or unreadable. Never negative."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _error_text(exc: Any) -> str:
    """The server's error message: `error.message` or `message` of a JSON body, else the SDK's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        if inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", "") or exc)


def _short(text: str) -> str:
    return text if len(text) <= DETAIL_CAP_CHARS else text[: DETAIL_CAP_CHARS - 1] + "…"
