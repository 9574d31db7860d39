"""The agent's command line: a template from `[agent.command]` rendered to an argv, never through a
shell. The template is split like a shell would (`shlex`), then each placeholder is replaced inside
its own word, so a prompt full of quotes and `$(...)` stays one inert argument.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ratchet.core.contract import AGENT_TEMPLATE_FIELDS
from ratchet.core.errors import ContractError

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

CLI_REPORT_TAIL_BYTES = 256 * 1024
"""Bytes at the end of the agent's stdout searched for the CLI's JSON report (session, tokens)."""


def render_argv(template: str, values: Mapping[str, str]) -> list[str]:
    """The argv of `template` with each `{name}` (see AGENT_TEMPLATE_FIELDS) replaced by
    `values[name]`. Raises ContractError `contract.agent_template` when the template does not split
    or names a placeholder without a value."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise ContractError("contract.agent_template", f"agent.command template {template!r}: {exc}",
                            hint="check the quotes of the template") from exc
    if not words:
        raise ContractError("contract.agent_template", "agent.command template is empty")
    return [_fill(word, values, template) for word in words]


def _fill(word: str, values: Mapping[str, str], template: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in AGENT_TEMPLATE_FIELDS or name not in values:
            raise ContractError("contract.agent_template",
                                f"agent.command template {template!r}: no value for {{{name}}}",
                                hint="{session} works only in wake_command, once the CLI reported a session")
        return values[name]

    return _PLACEHOLDER.sub(one, word)


@dataclass(frozen=True)
class CliReport:
    """What the agent's CLI said about itself in its JSON lines: the session id (Claude Code
    `session_id`, Codex `thread_id`/`session_id`), token counts (the integer entries of `usage`) and
    the cost in USD it reported (Claude Code `total_cost_usd`, older `cost_usd`), when present."""

    session_id: str | None
    tokens: dict[str, int]
    cost_usd: float | None = None


COST_KEYS = ("total_cost_usd", "cost_usd")
"""Keys of a CLI's JSON line read as its cost in USD (the first present)."""


def read_cli_report(stdout: bytes) -> CliReport:
    """The CliReport of `stdout`'s JSON object lines: the session id of the last line carrying one,
    the usage and cost of the last line carrying either (Codex writes its thread id in its first
    line and its usage in its last)."""
    session: str | None = None
    usage: tuple[dict[str, int], float | None] | None = None
    for line in reversed(stdout[-CLI_REPORT_TAIL_BYTES:].decode("utf-8", "replace").splitlines()):
        obj = _json_object(line)
        if obj is None:
            continue
        if session is None and (obj.get("session_id") or obj.get("thread_id")):
            session = str(obj.get("session_id") or obj.get("thread_id"))
        if usage is None:
            raw = obj["usage"] if isinstance(obj.get("usage"), dict) else {}
            tokens = {k: int(v) for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
            cost = next((float(obj[k]) for k in COST_KEYS if _number(obj.get(k))), None)
            if tokens or cost is not None:
                usage = (tokens, cost)
        if session is not None and usage is not None:
            break
    tokens, cost = usage or ({}, None)
    return CliReport(session, tokens, cost)


def _json_object(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}")):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _number(value: Any) -> bool:
    """A finite, non-negative JSON number (never a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")
