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
    """What the agent's CLI said about itself in its last JSON line: the session id (Claude Code
    `session_id`, Codex `thread_id`/`session_id`) and token counts (`usage`), when present."""

    session_id: str | None
    tokens: dict[str, int]


def read_cli_report(stdout: bytes) -> CliReport:
    """The CliReport of the last JSON object line of `stdout` that carries a session id or usage."""
    for line in reversed(stdout[-CLI_REPORT_TAIL_BYTES:].decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        session = obj.get("session_id") or obj.get("thread_id")
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        tokens = {k: int(v) for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
        if session or tokens:
            return CliReport(str(session) if session else None, tokens)
    return CliReport(None, {})
