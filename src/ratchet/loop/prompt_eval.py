"""The kernel's model calls for a prompt solution (docs/prompts.md): the eval model answering each
example of a shard under the solution's text, and the judge model of `llm_judge` checks.

Both go through the llm agent's client (`agents/llm/client.py`: retries, Retry-After, an overall
deadline per request, every failure a value), in the kernel: jobs have neither the API key nor the
network. Every reply is cached in the project's `.ratchet/cache/replies/` under the digest of
everything that shapes it (`reply_key`: the model's identity and sampling settings, the sample
index, the system text and the user message; for a judge also the rubric, the expected and the
actual output), so a champion's replies are never paid for twice and a resumed run re-asks nothing
it already has. Only replies are cached, never failures (a retry later may succeed).

`shard_work` is the in-kernel executor's Work (`compute/in_kernel.py`); `make_judge` the
PromptTarget's Judge. Effects: HTTP calls, the reply cache's files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.agents.llm.client import ChatClient
from ratchet.agents.llm.records import CallRecord, CallRole, Message
from ratchet.compute.base import JobSpec
from ratchet.compute.cache import MeasurementCache
from ratchet.compute.factory import check_compute
from ratchet.compute.in_kernel import Cancelled, InKernelExecutor, Work, WorkDone
from ratchet.core.budget import Account, Reservation
from ratchet.core.canonical import digest
from ratchet.core.contract import Contract, LlmJudgeCheck, ModelSection
from ratchet.core.jobfiles import JUDGED_NAME, STDOUT_NAME
from ratchet.ledger.rundir import RATCHET_DIR
from ratchet.targets.prompt_solution import Judge, Verdict

REPLY_CACHE_DIR = "replies"
"""Under the project's `.ratchet/cache/`: cached eval and judge replies."""

REPLY_KEY_VERSION = 1
"""Part of every reply key: a change of what a key covers starts a fresh cache."""

JUDGE_SYSTEM = (
    "You grade one answer against the expected answer, following the rubric. Reply with one JSON object "
    'and nothing else: {"pass": true or false, "reason": "one sentence"}.'
)
"""The judge model's system message (the rubric and the example go in the user message)."""

JUDGE_REASON_CHARS = 300
"""Characters of a judge's reason kept."""


@dataclass(frozen=True)
class Reply:
    """One reply as a shard record's sample: `status` ok or model_error, `output` (the content), `reason`
    (why no reply), `cached`, and `charge` (CHARGE_KEYS of prompt_solution; empty when cached)."""

    status: str
    output: str
    reason: str
    cached: bool
    charge: Mapping[str, float]


def reply_key(role: str, model: ModelSection, sample: int, system: str | None, user: str) -> str:
    """The reply cache's key: sha256 over canonical JSON of the role, the model's identity
    (ModelSection.identity: endpoint, model, sampling settings), the sample index and both messages."""
    return digest(["ratchet.reply", REPLY_KEY_VERSION, role, model.identity(), sample, system, user])


class _NoJournal:
    """The client's Journal for kernel calls: blobs kept in memory for the one call (the reply cache,
    not the ledger, keeps replies; `job.finished` records what they cost)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put_blob(self, data: bytes) -> str:
        key = digest(data.decode("utf-8", "replace"))
        self.blobs[key] = data
        return key

    def get_blob(self, key: str) -> bytes:
        return self.blobs[key]

    def record_reservation(self, reservation: Reservation, request_digest: str, request_blob: str) -> None:
        pass

    def record_call(self, record: CallRecord) -> None:
        pass

    def find_call(self, key: str) -> CallRecord | None:
        return None


class ModelCalls:
    """Cached calls to one model section (`[target.model]` or `[target.judge]`). cache: the reply
    cache (None: every reply is asked); environ: where the key is read (default os.environ)."""

    def __init__(self, model: ModelSection, cache: MeasurementCache | None, role: CallRole,
                 environ: Mapping[str, str] | None = None):
        self.model = model
        self.cache = cache
        self.role = role
        self.environ = os.environ if environ is None else environ

    def ask(self, system: str | None, user: str, sample: int = 0) -> Reply:
        """The reply to (system, user) for sample `sample`: cached, or asked now (and cached when it
        came). Never raises for a failed call: the Reply says model_error and why."""
        key = reply_key(self.role, self.model, sample, system, user)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and isinstance(hit.get("content"), str):
            return Reply("ok", hit["content"], "", True, {})
        messages = ([Message("system", system)] if system is not None else []) + [Message("user", user)]
        client = ChatClient(self.model.as_client_config(sample), Account({}), _NoJournal(), environ=self.environ)
        result = client.call(key, self.role, messages)
        charged = result.record.charged
        charge = {"eval_calls": int(charged["model_calls"]),
                  "eval_tokens": int(charged["input_tokens"] + charged["output_tokens"]), "eval_usd": charged["usd"]}
        if result.reply is None:
            return Reply("model_error", "", f"{result.record.outcome}: {result.record.detail}", False, charge)
        if self.cache is not None:
            self.cache.put(key, {"state": "ok", "content": result.reply.content,
                                 "finish_reason": result.reply.finish_reason,
                                 "input_tokens": result.record.input_tokens,
                                 "output_tokens": result.record.output_tokens})
        return Reply("ok", result.reply.content, "", False, charge)


def reply_cache(root: Path, contract: Contract) -> MeasurementCache | None:
    """The project's reply cache (None when `target.cache = false`)."""
    return MeasurementCache(root / RATCHET_DIR / "cache" / REPLY_CACHE_DIR) if contract.target.cache else None


def render(template: str, input_text: str) -> str:
    """The user message: `template` with the example's input in place of `{input}` (`{{`/`}}`: braces)."""
    return template.format(input=input_text)


def shard_work(calls: ModelCalls) -> Work:
    """The in-kernel executor's Work for prompt shards answered through `calls`: one JSON line per
    example of the shard (targets.prompt_solution.PROMPT_RECORD), in order; stops between calls
    once cancelled."""

    def work(spec: JobSpec, cancelled: Cancelled) -> WorkDone:
        try:
            shard = json.loads(spec.stdin_bytes or b"{}")
            examples, samples, template = shard["examples"], int(shard["samples"]), str(shard["template"])
            prompt, prompt_error = shard.get("prompt"), str(shard.get("prompt_error") or "")
        except (ValueError, KeyError, TypeError) as exc:
            return WorkDone(b"", f"malformed prompt shard: {exc}")
        lines = []
        for example in examples:
            if cancelled():
                break
            lines.append(_answer(calls, example, prompt, prompt_error, template, samples, cancelled))
        return WorkDone("".join(lines).encode("utf-8"))

    return work


def _answer(calls: ModelCalls, example: Mapping[str, Any], prompt: str | None, prompt_error: str, template: str,
            samples: int, cancelled: Cancelled) -> str:
    out, charge = [], {"eval_calls": 0, "eval_tokens": 0, "eval_usd": 0.0}
    for k in range(samples):
        if prompt is None:
            reply = Reply("model_error", "", f"the prompt could not be read: {prompt_error}", False, {})
        elif cancelled():
            reply = Reply("model_error", "", "cancelled", False, {})
        else:
            reply = calls.ask(prompt, render(template, example["input"]), k)
        for name in charge:
            charge[name] += reply.charge.get(name, 0)
        out.append({"status": reply.status, "output": reply.output, "reason": reply.reason, "cached": reply.cached})
    return json.dumps({"id": example["id"], "samples": out, "charge": charge}, ensure_ascii=False) + "\n"


def make_prompt_executor(contract: Contract, root: Path, jobs_dir: Path,
                         environ: Mapping[str, str] | None = None) -> InKernelExecutor:
    """The executor of a prompt solution's shards: in the kernel, `compute.max_parallel` shards at once."""
    assert contract.target.model is not None  # the contract requires it with solution_kind = "prompt"
    calls = ModelCalls(contract.target.model, reply_cache(root, contract), "eval", environ)
    return InKernelExecutor(jobs_dir, check_compute(contract.compute).count, shard_work(calls))


def judge_prompt(check: LlmJudgeCheck, input_text: str, expected: Any, actual: str) -> str:
    """The judge's user message: the rubric, then the input, expected and actual output, each fenced as data."""
    want = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
    return (f"Rubric:\n{check.rubric}\n\n<input>\n{input_text}\n</input>\n\n<expected>\n{want}\n</expected>\n\n"
            f"<answer>\n{actual}\n</answer>\n")


def parse_verdict(content: str) -> tuple[bool | None, str]:
    """(pass, reason) of a judge reply that is exactly one JSON object {"pass": bool, "reason": str}
    (surrounding whitespace and one ``` fence allowed); (None, why) for anything else."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return None, f"the judge's reply is not JSON: {content[:JUDGE_REASON_CHARS]!r}"
    if not (isinstance(obj, dict) and set(obj) == {"pass", "reason"} and isinstance(obj["pass"], bool)
            and isinstance(obj["reason"], str)):
        return None, f"the judge's reply is not {{pass: bool, reason: str}}: {content[:JUDGE_REASON_CHARS]!r}"
    return obj["pass"], obj["reason"][:JUDGE_REASON_CHARS]


def make_judge(contract: Contract, root: Path, environ: Mapping[str, str] | None = None) -> Judge | None:
    """The Judge of the contract's llm_judge checks through `[target.judge]` (None without one)."""
    section = contract.target.judge
    if section is None:
        return None
    calls = ModelCalls(section, reply_cache(root, contract), "judge", environ)

    def judge(check: LlmJudgeCheck, input_text: str, expected: Any, actual: str) -> Verdict:
        reply = calls.ask(JUDGE_SYSTEM, judge_prompt(check, input_text, expected, actual))
        if reply.status != "ok":
            return Verdict(None, f"the judge gave no reply ({reply.reason})", reply.charge)
        passed, reason = parse_verdict(reply.output)
        return Verdict(passed, reason, reply.charge)

    return judge


def prompt_record(contract: Contract) -> dict[str, Any] | None:
    """What `run.started.data.examples.prompt` records of a prompt solution (None for a script): the
    eval model's identity (ModelSection.identity), its samples, the prompt template, and the judge's
    identity with the rubrics of the llm_judge checks (None without a judge)."""
    t = contract.target
    if t.solution_kind != "prompt" or t.model is None:
        return None
    rubrics = [c.rubric for c in t.checks if isinstance(c, LlmJudgeCheck)]
    judge = {**t.judge.identity(), "rubrics": rubrics} if t.judge is not None else None
    return {"model": t.model.identity(), "samples": t.model.samples, "template": t.prompt_template, "judge": judge}


DEV_REPLY_CHARS = 2000
"""Characters of a dev reply or reason shown to an agent."""


def dev_replies(kernel: Any, attempt: int, stage: str) -> dict[str, tuple[str, str]]:
    """example id -> (the first reply, the failing checks' reasons) of the dev examples measured by
    the shards of (`attempt`, `stage`) (the champion's dev measurement), read from their job
    directories: what the llm agent is shown of the champion's dev failures. Dev examples only (the
    caller asks for a dev stage); a job directory that cannot be read gives nothing."""
    out: dict[str, tuple[str, str]] = {}
    for event in kernel.events_of("job.finished"):
        job = event.payload
        if job.attempt != attempt or job.stage != stage:
            continue
        where = kernel.run.jobs / job.job_id
        outputs, reasons = {}, {}
        try:
            for line in (where / STDOUT_NAME).read_text("utf-8", "replace").splitlines():
                record = json.loads(line)
                samples = record.get("samples") or [{}]
                outputs[record["id"]] = str(samples[0].get("output", ""))[:DEV_REPLY_CHARS]
            for line in (where / JUDGED_NAME).read_text("utf-8", "replace").splitlines():
                judged = json.loads(line)
                reasons[judged["id"]] = str(judged.get("reason") or judged.get("status"))[:DEV_REPLY_CHARS]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        out.update({i: (outputs[i], reasons.get(i, "")) for i in outputs})
    return out
