"""The llm agent (`agent.kind = "llm"`): a model behind an OpenAI-compatible API proposes one
candidate per attempt.

An attempt: (optionally) the round's strategy call writes `directives` directives, one per attempt
of the round; the executor call reads the evidence (and the attempt's directive) and replies with
edit blocks (repository targets) or the whole solution file (examples targets); a reply that does
not parse or apply gets one reformat retry with the errors; the edits become a candidate tree built
on the champion's. Every call goes through the `ChatClient` (budgeted, recorded, reused on resume),
so a resumed attempt proposes exactly what the first run proposed without asking the model again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ratchet.agents.base import Action, Agent, AgentContext, GiveUp, LaunchResult, Submit
from ratchet.agents.llm.briefing import ContextEvidence, Evidence, in_flight_summaries
from ratchet.agents.llm.client import CallResult, ChatClient
from ratchet.agents.llm.edits import ParsedReply, Scope, apply_edit_blocks, parse_edit_blocks, parse_solution
from ratchet.agents.llm.prompts import PromptBuilder, load_templates
from ratchet.agents.llm.records import Journal, Message
from ratchet.agents.view import ListingTrees
from ratchet.core.budget import BUDGET_NAMES, Account, BudgetStop
from ratchet.core.budget.model import smallest_call_refusal
from ratchet.core.contract import Contract
from ratchet.core.contract_llm import LlmAgentConfig
from ratchet.workspace.trees import EXEC_MODE, FILE_MODE

MAX_FILES_SHOWN = 200
"""Files in scope read into a prompt at most (the rest are not listed)."""

NO_REPLY_OUTCOMES = ("connection_error", "timeout", "server_error")
"""Call outcomes that mean the server did not answer usefully after every retry (refused or dropped
connections, no reply in time, 5xx): an attempt failed by one is `unresponsive` and counts toward
`agent.max_idle_attempts` (a configuration error stops the run at once instead: `_fatal`)."""

BUDGET_STOP_PREFIX = "budget_exhausted:"
"""A GiveUp reason starting with this names the model budget that stopped the agent (also in
`LlmAgent.stopped_by_budget`), so the loop records stop reason `budget_exhausted` with that name."""


class Directive(BaseModel):
    """One directive of a strategy call: what the evidence shows, why a change should help, what to
    try. Becomes one attempt."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    observation: str = ""
    hypothesis: str = ""
    try_: str = Field(default="", alias="try")

    def text(self) -> str:
        """The directive as the executor reads it."""
        return f"Observation: {self.observation}\nHypothesis: {self.hypothesis}\nTry: {self.try_}"


def parse_directives(reply: str, count: int) -> list[Directive]:
    """Up to `count` directives from a strategy reply: a JSON array (in a ```json block or bare);
    items that are not objects are skipped. Empty when nothing parses."""
    block = re.search(r"```(?:json)?\s*\n(.*?)```", reply, re.DOTALL)
    text = block.group(1) if block else reply[reply.find("[") : reply.rfind("]") + 1]
    try:
        items = json.loads(text)
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        try:
            directive = Directive.model_validate(item)
        except ValidationError:
            continue
        if directive.try_ or directive.hypothesis:
            out.append(directive)
    return out[:count]


def llm_config(contract: Contract) -> LlmAgentConfig:
    """`[agent.llm]` of `contract`. Raises ValueError when the section is absent."""
    if contract.agent.llm is None:
        raise ValueError("the llm agent needs an [agent.llm] section")
    return contract.agent.llm


class LlmAgent(Agent):
    """The Agent protocol over a chat model.

    contract: the run's contract (`agent.llm` required); trees: the agent's view of the repository
    (hidden paths absent); client: the run's ChatClient; prompts: the PromptBuilder; evidence: the
    loop's view of the run (default: what the AgentContext carries).
    `stopped_by_budget`: the model budget's BudgetStop that ended the campaign, once one has.
    """

    def __init__(self, contract: Contract, trees: ListingTrees, client: ChatClient, prompts: PromptBuilder,
                 evidence: Evidence | None = None):
        self.contract = contract
        self.config: LlmAgentConfig = llm_config(contract)
        self.trees = trees
        self.client = client
        self.prompts = prompts
        self.evidence = evidence if evidence is not None else ContextEvidence()

    @classmethod
    def build(cls, contract: Contract, root: Path, trees: ListingTrees, budget: Account, journal: Journal,
              evidence: Evidence | None = None) -> LlmAgent:
        """The agent for `contract` in project `root`, reading its prompt overrides from `root`.
        Raises ContractError `contract.prompt_unreadable`, ValueError without [agent.llm]."""
        config = llm_config(contract)
        scope = Scope(tuple(contract.scope.allowed), contract.protected_paths, contract.hidden_paths)
        prompts = PromptBuilder(load_templates(config.prompts, root), config, contract.target, scope)
        return cls(contract, trees, ChatClient(config, budget, journal), prompts, evidence)

    def budget_stop(self) -> BudgetStop | None:
        """The model budget that forbids even the smallest call now, or None: the loop checks this
        before starting an attempt (stop reason `budget_exhausted`, the budget named, its arithmetic
        the stop's detail)."""
        return smallest_call_refusal(self.client.budget, self.config.price, self.config.max_output_tokens)

    # -- the protocol ----------------------------------------------------------------------------

    def start(self, ctx: AgentContext) -> Action:
        """One attempt: strategy (when due), executor call, at most one reformat retry, candidate."""
        directive, notes = "", list[str]()
        if self.config.strategy:
            directive, stop = self._directive(ctx, notes)
            if stop is not None:
                return stop
        messages = self._executor_messages(ctx, directive)
        first = self.client.call(f"attempt-{ctx.attempt}/executor", "executor", messages)
        if first.reply is None:
            return self._failed(first, directive)
        reply = first.reply.content
        parsed, files, errors = self._read_reply(ctx, reply, first.reply.finish_reason)
        if errors:
            retry = self.client.call(f"attempt-{ctx.attempt}/reformat", "reformat",
                                     self.prompts.reformat(messages, reply, errors))
            if retry.reply is None:
                return self._failed(retry, directive, parsed)
            parsed, files, errors = self._read_reply(ctx, retry.reply.content, retry.reply.finish_reason)
        report = self._report(parsed, directive, notes)
        summary = parsed.summary or f"llm attempt {ctx.attempt}"
        if errors:
            why = "the model's reply could not be used after one reformat retry: " + "; ".join(errors)
            return Submit(None, report, summary, invalid=why[:2000])
        tree = self.trees.overlay_tree(ctx.champion_tree, files)
        return Submit(tree=tree, report=report, summary=summary)

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        """The llm agent never launches experiments of its own."""
        return GiveUp("the llm agent does not launch experiments")

    # -- steps ---------------------------------------------------------------------------------

    def _scope_files(self, tree: str) -> list[tuple[str, bytes]]:
        """The regular files of `tree` the model may change (and so must see), in path order."""
        scope = self.prompts.scope
        paths = [e.path for e in self.trees.ls_tree(tree)
                 if e.mode in (FILE_MODE, EXEC_MODE) and scope.refusal(e.path) is None]
        out = []
        for path in sorted(paths)[:MAX_FILES_SHOWN]:
            data = self.trees.read_blob(tree, path)
            if data is not None:
                out.append((path, data))
        return out

    def _executor_messages(self, ctx: AgentContext, directive: str) -> list[Message]:
        champion = self.evidence.champion(ctx)
        attempts = [*self.evidence.attempts(ctx), *in_flight_summaries(ctx)]  # siblings' in flight: `pending`
        if self.contract.target.kind == "examples":
            solution = self.trees.read_blob(ctx.champion_tree, self.contract.target.solution or "")
            return self.prompts.examples(solution, champion, attempts, self.evidence.dev_failures(ctx), directive)
        return self.prompts.repository(self._scope_files(ctx.champion_tree), champion, attempts, directive)

    def _read_reply(self, ctx: AgentContext, reply: str,
                    finish_reason: str | None) -> tuple[ParsedReply, dict[str, bytes], list[str]]:
        """(parsed reply, files to overlay, errors) for one reply."""
        target = self.contract.target
        if target.kind == "examples":
            solution = target.solution or ""
            parsed = parse_solution(reply, solution)
            files = {solution: parsed.solution.encode("utf-8")} if parsed.solution is not None else {}
            refusal = self.prompts.scope.refusal(solution) if files else None
            errors = list(parsed.errors) + ([refusal] if refusal else [])
        else:
            parsed = parse_edit_blocks(reply)
            files, apply_errors = apply_edit_blocks(
                parsed.blocks, lambda path: self.trees.read_blob(ctx.champion_tree, path), self.prompts.scope)
            errors = list(parsed.errors) + apply_errors
        if errors and finish_reason == "length":
            errors.append(f"the reply was cut off at max_output_tokens ({self.config.max_output_tokens}): "
                          "make it shorter (fewer, smaller blocks)")
        return parsed, files, errors

    def _directive(self, ctx: AgentContext, notes: list[str]) -> tuple[str, Action | None]:
        """The directive of this attempt from its round's strategy call (made by the round's first
        attempt; reused from the journal by the others)."""
        count = self.config.directives
        first = (ctx.attempt - 1) // count * count + 1
        earlier = [a for a in self.evidence.attempts(ctx) if a.attempt < first]
        messages = self.prompts.strategy(self._scope_files(ctx.champion_tree), self.evidence.champion(ctx),
                                         earlier, count)
        result = self.client.call(f"round-{(first - 1) // count + 1}/strategy", "strategy", messages)
        if result.reply is None:
            stop = self._fatal(result)
            if stop is not None:
                return "", stop
            notes.append(f"The strategy call failed ({result.record.outcome}: {result.record.detail}); "
                         "this attempt ran without a directive.")
            return "", None
        directives = parse_directives(result.reply.content, count)
        index = ctx.attempt - first
        if index >= len(directives):
            notes.append(f"The strategy call gave {len(directives)} usable directives; this attempt (number "
                         f"{index + 1} of its round) ran without one.")
            return "", None
        return directives[index].text(), None

    def _fatal(self, result: CallResult) -> GiveUp | None:
        """A GiveUp for failures retrying cannot fix (a model budget spent, a configuration error)."""
        record = result.record
        if record.outcome == "budget_refused":
            name, _, detail = record.detail.partition(": ")
            if name in BUDGET_NAMES:
                self.stopped_by_budget = BudgetStop(name, detail, forecast=detail.startswith("forecast"))
            return GiveUp(f"{BUDGET_STOP_PREFIX}{name}: the next model call does not fit in budget.{name}")
        if record.outcome == "config_error":
            return GiveUp(f"the model cannot be used as configured: {record.detail}")
        return None

    def _failed(self, result: CallResult, directive: str, parsed: ParsedReply | None = None) -> Action:
        """The attempt's action after a failed call: GiveUp when fatal, else an invalid candidate."""
        stop = self._fatal(result)
        if stop is not None:
            return stop
        record = result.record
        why = f"model call {record.key} failed ({record.outcome}): {record.detail}"
        report = self._report(parsed, directive, [why])
        summary = parsed.summary if parsed and parsed.summary else f"model call failed ({record.outcome})"
        return Submit(None, report, summary, invalid=why[:2000], unresponsive=record.outcome in NO_REPLY_OUTCOMES)

    def _report(self, parsed: ParsedReply | None, directive: str, notes: Sequence[str]) -> str:
        parts = [parsed.report if parsed and parsed.report else "(the model wrote no report)"]
        if directive:
            parts.append("Directive (from the round's strategy call):\n" + directive)
        parts += list(notes)
        return "\n\n".join(parts)
