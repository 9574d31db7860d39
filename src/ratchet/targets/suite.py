"""A benchmark's suite (`[[target.suite]]`): further benchmark commands run in the same job as the
primary command, on the same unit (seed), each read as a guardrail (docs/gate.md, Suites).

`suite_command` composes one shell command from the primary and the members: each runs in its own
subshell with the unit's seed in its own variable, its stdout fenced by a marker line, and a last
line records every exit status; `split_suite` cuts the job's stdout back into one piece per
command. Pure: strings in, strings out.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

MARK = "@@ratchet-suite-next@@"
"""The line printed between two commands' outputs (no benchmark prints it)."""

STATUS = "@@ratchet-suite-status@@"
"""The first word of the last line: every command's exit status, primary first."""


@dataclass(frozen=True)
class SuiteMember:
    """One `[[target.suite]]` entry as a job runs it: name (the guardrail's), command, metric (the
    key read from its last JSON line), seed_env (the variable given the unit's seed), timeout_s
    (added to the job's timeout)."""

    name: str
    command: str
    metric: str
    seed_env: str
    timeout_s: float


def suite_command(primary: str, seed_env: str, members: Sequence[SuiteMember]) -> str:
    """One /bin/sh command: the primary, then each member with `member.seed_env` set to the unit's
    seed (read from `seed_env`), outputs fenced by MARK, then `STATUS s0 s1 ...`; it exits with the
    primary's status. Without members: `primary` unchanged."""
    if not members:
        return primary
    parts = [f"( {primary}\n); s0=$?"]
    for i, m in enumerate(members, start=1):
        parts.append(f"echo {MARK}; ( {m.seed_env}=\"${seed_env}\"; export {m.seed_env}; {m.command}\n); s{i}=$?")
    statuses = " ".join(f"$s{i}" for i in range(len(members) + 1))
    parts.append(f"echo {shlex.quote(STATUS)} {statuses}; exit $s0")
    return "\n".join(parts)


def split_suite(stdout: str, members: int) -> tuple[list[str], list[int | None]]:
    """The job's stdout cut into one piece per command (primary first; "" for a command whose
    piece is missing) and each command's exit status (None when the status line is missing, as
    when the job was killed)."""
    lines = stdout.split("\n")
    status: list[int | None] = [None] * (members + 1)
    for k in range(len(lines) - 1, -1, -1):
        if lines[k].startswith(STATUS):
            words = lines[k].split()[1:]
            status = [int(w) if w.lstrip("-").isdigit() else None for w in words][: members + 1]
            status += [None] * (members + 1 - len(status))
            lines = lines[:k]
            break
    pieces: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip() == MARK:
            pieces.append("\n".join(current))
            current = []
        else:
            current.append(line)
    pieces.append("\n".join(current))
    pieces += [""] * (members + 1 - len(pieces))
    return pieces[: members + 1], status
