"""The prompts the model reads, built from templates (package data, overridable from the contract by
`[agent.llm.prompts]`) and the evidence the model may see.

Repository targets: the files in scope within a context budget (large files truncated, head and
tail kept, with a note), the champion's figures, the history of attempts. Examples targets: the
whole solution file, the champion's failures on the dev split (capped in number and size), the
history. Everything quoted from the project or the run is fenced as data. Templates use `$name`
placeholders (`string.Template`), so braces in code need no escaping.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from ratchet.agents.llm.briefing import AttemptSummary, ChampionFigures, DevFailure
from ratchet.agents.llm.edits import Scope
from ratchet.agents.llm.records import Message
from ratchet.core.contract import TargetSection
from ratchet.core.contract_llm import PROMPT_KINDS, LlmAgentConfig, LlmPrompts
from ratchet.core.errors import ContractError

FIT_BYTES_PER_TOKEN = 3.0
"""Bytes per token assumed when fitting a prompt into the context window (code and prose run about
3-4 bytes per token; the lower figure keeps the prompt inside the window)."""

FIT_SHARE = 0.9
"""Share of (context_window - max_output_tokens) a prompt may fill."""

MIN_FILE_SHOWN_BYTES = 400
"""Below this share a truncated file shows nothing but its note."""

MAX_HISTORY_SHOWN = 30
"""Most recent attempts shown in a prompt."""

MAX_DEV_FAILURES_SHOWN = 8
"""Dev failures shown in an examples prompt."""

MAX_FAILURE_FIELD_CHARS = 600
"""Characters kept of a dev failure's input, expected or actual output."""

TEMPLATE_NAMES = (*PROMPT_KINDS, "reformat")


@dataclass(frozen=True)
class Templates:
    """The prompt templates by name: system, repository, examples, strategy, reformat."""

    texts: Mapping[str, str]

    def render(self, name: str, **values: object) -> str:
        """Template `name` with `$placeholders` filled (unknown ones left as written)."""
        return Template(self.texts[name]).safe_substitute({k: str(v) for k, v in values.items()})


def load_templates(prompts: LlmPrompts, root: Path) -> Templates:
    """The built-in templates with the contract's overrides (files relative to `root`) read in.
    Raises ContractError `contract.prompt_unreadable` naming the file and key."""
    package = resources.files("ratchet.agents.llm") / "templates"
    texts = {name: (package / f"{name}.md").read_text(encoding="utf-8") for name in TEMPLATE_NAMES}
    for name in PROMPT_KINDS:
        override = getattr(prompts, name)
        if override is None:
            continue
        try:
            texts[name] = (root / override).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ContractError("contract.prompt_unreadable", f"agent.llm.prompts.{name} = {override!r}: {exc}",
                                hint="the path is relative to the project root and must be a UTF-8 text file") from None
    return Templates(texts)


# -- pieces ----------------------------------------------------------------------------------------


def fence(text: str, info: str = "") -> str:
    """`text` in a fenced block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}{bar}"


def objective(target: TargetSection) -> str:
    """What is measured, in words."""
    if target.kind == "examples" and target.solution_kind == "prompt" and target.model is not None:
        checks = ", ".join(c.type for c in target.checks)
        return (f"Make the prompt `{target.solution}` pass more examples. It is the system message of the eval "
                f"model `{target.model.model}`; each example's input reaches the model as the user message "
                f"(template {target.prompt_template!r}), and the model's reply must pass every check ({checks}).")
    if target.kind == "examples":
        checks = ", ".join(c.type for c in target.checks)
        return (f"Make `{target.solution}` pass more examples. Each example's input reaches it on stdin; "
                f"its stdout must pass every check ({checks}).")
    better = "larger" if target.direction == "max" else "smaller"
    return (f"Improve the metric `{target.metric}` ({better} is better), printed as JSON by "
            f"`{target.command}`, averaged over seeds you do not choose.")


def role(target: TargetSection) -> str:
    """What the solution file is, for the examples prompt's last line."""
    if target.solution_kind == "prompt":
        return "It is the system message the eval model reads before each example's input (plain text, no code)."
    return "It reads one example's input on stdin and writes its output on stdout."


def number(value: float | None) -> str:
    """A figure for a prompt ("n/a" when unknown)."""
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.6g}"


def champion_text(figures: ChampionFigures | None) -> str:
    """The champion's mean, interval and units, or a note that it has not been measured yet."""
    if figures is None or figures.mean is None:
        return "Not measured yet: the champion is the project as committed."
    interval = "" if figures.low is None else f", 95% interval [{number(figures.low)}, {number(figures.high)}]"
    return f"Mean {number(figures.mean)}{interval} over {figures.units} units."


def history_text(attempts: Sequence[AttemptSummary]) -> str:
    """The last MAX_HISTORY_SHOWN attempts as a fenced table (gain estimate and its bound)."""
    if not attempts:
        return "None yet."
    rows = ["attempt | verdict | estimated gain | bound | summary"]
    for a in attempts[-MAX_HISTORY_SHOWN:]:
        verdict = a.verdict or "pending"
        if a.reason:
            verdict += f" ({a.reason})"
        summary = " ".join(a.summary.split())[:160]
        rows.append(f"{a.attempt} | {verdict} | {number(a.estimate)} | {number(a.bound)} | {summary}")
    shown = "" if len(attempts) <= MAX_HISTORY_SHOWN else f"(the last {MAX_HISTORY_SHOWN} of {len(attempts)})\n"
    return shown + fence("\n".join(rows))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def failures_text(failures: Sequence[DevFailure]) -> str:
    """The first MAX_DEV_FAILURES_SHOWN dev failures, each field capped, fenced."""
    if not failures:
        return "None known: the champion passes every development example it was run on."
    parts = []
    for i, f in enumerate(failures[:MAX_DEV_FAILURES_SHOWN], start=1):
        parts.append(f"Failure {i} (check: {f.check})\ninput:\n{fence(_clip(f.input, MAX_FAILURE_FIELD_CHARS))}\n"
                     f"expected:\n{fence(_clip(f.expected, MAX_FAILURE_FIELD_CHARS))}\n"
                     f"actual:\n{fence(_clip(f.actual, MAX_FAILURE_FIELD_CHARS))}")
    if len(failures) > MAX_DEV_FAILURES_SHOWN:
        parts.append(f"({len(failures) - MAX_DEV_FAILURES_SHOWN} more failures not shown)")
    return "\n\n".join(parts)


def scope_text(scope: Scope) -> str:
    """The paths a change may touch."""
    return "Changeable: " + ", ".join(f"`{a}`" for a in scope.allowed) + "."


def directive_text(directive: str) -> str:
    """The directive this attempt follows, as its own section ("" when none)."""
    return "" if not directive else f"\n# Directive for this attempt\n\n{fence(directive)}\n"


# -- files within a budget ---------------------------------------------------------------------------


def _is_text(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def truncate_middle(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters: head and tail kept, whole lines, a note in between
    saying how many lines were left out (those lines cannot be quoted in an edit)."""
    if len(text) <= limit:
        return text
    lines = text.splitlines(keepends=True)
    head: list[str] = []
    tail: list[str] = []
    used = 0
    i, j = 0, len(lines) - 1
    while i <= j:
        line = lines[i] if len(head) <= len(tail) else lines[j]
        if used + len(line) > limit:
            break
        used += len(line)
        if len(head) <= len(tail):
            head.append(line)
            i += 1
        else:
            tail.insert(0, line)
            j -= 1
    omitted = j - i + 1
    note = f"[... {omitted} lines omitted to fit the context window: do not quote them in SEARCH ...]\n"
    return "".join(head) + note + "".join(tail)


def files_text(files: Sequence[tuple[str, bytes]], budget_chars: int) -> str:
    """Each file fenced under its path, sharing `budget_chars` fairly (max-min: small files whole,
    large ones truncated head and tail); binary files listed, not shown."""
    texts = [(p, d.decode("utf-8")) for p, d in files if _is_text(d)]
    shares: dict[str, int] = {}
    left = max(budget_chars, 0)
    ordered = sorted(texts, key=lambda item: len(item[1]))
    for n, (path, text) in enumerate(ordered):
        share = left // (len(ordered) - n)
        shares[path] = min(len(text), share)
        left -= shares[path]
    parts = []
    for path, data in files:
        if not _is_text(data):
            parts.append(f"`{path}`: binary, {len(data)} bytes, not shown")
            continue
        text = data.decode("utf-8")
        share = shares[path]
        if share < len(text) and share < MIN_FILE_SHOWN_BYTES:
            parts.append(f"`{path}`: {len(text)} characters, not shown (no room in the context window)")
            continue
        parts.append(f"`{path}`\n{fence(truncate_middle(text, share))}")
    return "\n\n".join(parts) if parts else "(no files in scope yet)"


@dataclass(frozen=True)
class PromptBuilder:
    """Builds every prompt of the llm agent for one contract."""

    templates: Templates
    config: LlmAgentConfig
    target: TargetSection
    scope: Scope

    @property
    def fit_chars(self) -> int:
        """Characters a prompt may take (see FIT_BYTES_PER_TOKEN, FIT_SHARE)."""
        tokens = self.config.context_window - self.config.max_output_tokens
        return int(tokens * FIT_BYTES_PER_TOKEN * FIT_SHARE)

    def _fitted(self, name: str, files: Sequence[tuple[str, bytes]], **values: object) -> list[Message]:
        system = self.templates.render("system")
        bare = self.templates.render(name, files="", **values)
        budget = self.fit_chars - len(system) - len(bare)
        user = self.templates.render(name, files=files_text(files, budget), **values)
        return [Message("system", system), Message("user", user)]

    def repository(self, files: Sequence[tuple[str, bytes]], champion: ChampionFigures | None,
                   attempts: Sequence[AttemptSummary], directive: str = "") -> list[Message]:
        """The executor prompt of a repository (benchmark) target."""
        return self._fitted("repository", files, objective=objective(self.target), scope=scope_text(self.scope),
                            champion=champion_text(champion), history=history_text(attempts),
                            directive=directive_text(directive))

    def examples(self, solution: bytes | None, champion: ChampionFigures | None,
                 attempts: Sequence[AttemptSummary], failures: Sequence[DevFailure],
                 directive: str = "") -> list[Message]:
        """The executor prompt of an examples target (the whole solution file is rewritten)."""
        path = self.target.solution or ""
        files = [(path, solution)] if solution is not None else []
        return self._fitted("examples", files, objective=objective(self.target), solution=path, role=role(self.target),
                            champion=champion_text(champion), history=history_text(attempts),
                            failures=failures_text(failures), directive=directive_text(directive))

    def strategy(self, files: Sequence[tuple[str, bytes]], champion: ChampionFigures | None,
                 attempts: Sequence[AttemptSummary], count: int) -> list[Message]:
        """The strategy prompt: `count` directives as JSON."""
        return self._fitted("strategy", files, objective=objective(self.target), champion=champion_text(champion),
                            history=history_text(attempts), count=count)

    def reformat(self, messages: Sequence[Message], reply: str, errors: Sequence[str]) -> list[Message]:
        """The one retry: the conversation so far, the unusable reply, and what was wrong with it."""
        listed = "\n".join(f"- {e}" for e in errors)
        return [*messages, Message("assistant", reply), Message("user", self.templates.render("reformat",
                                                                                                errors=listed))]
