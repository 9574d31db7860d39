"""The programs a job runs, found as the operator's shell finds them, and what a sandbox binds so
they run there: `python3` and the first word of the target's command, located on the job's PATH
(`env.default_path`: the PATH Ratchet was started with, less Ratchet's own venv) by
`programs.program_reach` (`env.job_python`: the jobs' `python3`). Their install prefixes (a venv, a
pyenv version, a conda environment, `~/.local`) are bound read-only, so `python3` in a job is the
user's `python3` with its packages, sandbox or not; a pyenv `shims/` entry of that PATH is replaced
by the bin directory of the version it selects (`without_shims`). A coding agent's leg binds its
CLI the same way (`bound_paths`).

A command's first word that is a path relative to the project (`.venv/bin/python bench.py`) names a
file of the job's checkout; when that file is untracked (a venv inside the project is never in a
clean checkout), the project's own file is run instead, by its absolute path, its prefix bound
(`checkout_command`).

Reads the filesystem (stat, realpath, a script's first line); runs nothing.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ratchet.compute.programs import ProgramReach, program_reach, shim_target

JOB_PYTHON = "python3"
"""The interpreter name a job's `python3` resolves (examples shards run `python3 shard_runner.py`)."""

SHELL_WORDS = frozenset({
    "!", ".", ":", "[", "{", "(", "case", "cd", "command", "eval", "exec", "exit", "export", "for", "if",
    "set", "source", "test", "time", "ulimit", "umask", "unset", "until", "while",
})
"""First words that are the shell's own (builtins, keywords): they name no program to bind."""


@dataclass(frozen=True)
class JobPrograms:
    """The programs of a job: `python` (`python3` on the job's PATH) and `command` (the target
    command's first word when it names a program other than `python3`; None otherwise).
    project_file: the absolute path run for a first word relative to the project that a clean
    checkout lacks (see `checkout_command`), or None."""

    python: ProgramReach
    command: ProgramReach | None = None
    project_file: str | None = None

    @property
    def reaches(self) -> tuple[ProgramReach, ...]:
        """The reaches whose prefixes a sandboxed job binds."""
        return (self.python,) + ((self.command,) if self.command is not None else ())

    def binds(self) -> tuple[str, ...]:
        """The paths bound read-only for these programs (`bound_paths`, without `sandbox.read_only`)."""
        return bound_paths(self.reaches, ())

    def to_json(self) -> dict[str, object]:
        """As `ratchet check --json` shows it: {"python3", "command" (None), "project_file", "bound"}."""
        return {"python3": self.python.to_json(),
                "command": self.command.to_json() if self.command is not None else None,
                "project_file": self.project_file, "bound": list(self.binds())}


def bound_paths(reaches: Iterable[ProgramReach], read_only: Sequence[str]) -> tuple[str, ...]:
    """The read-only binds of a sandbox that must run the programs of `reaches`: their install
    prefixes in order, then `read_only` (`sandbox.read_only`), each once."""
    return tuple(dict.fromkeys([*(p for r in reaches for p in r.prefixes), *read_only]))


def without_shims(path: str, environ: Mapping[str, str] | None = None) -> str:
    """`path` (a PATH value) with each version manager's `shims/` entry whose `python3` shim selects
    a version (`programs.shim_target`, read from `environ`, default os.environ) replaced by that
    version's bin directory, so a job's shell finds what the operator's shell finds: a shim runs
    its manager, which needs state in the operator's home that neither a job's HOME nor a sandbox
    holds. Other entries, and shims that select nothing, are kept."""
    source = os.environ if environ is None else environ
    entries = []
    for entry in path.split(":"):
        target = shim_target(entry, JOB_PYTHON, source) if os.path.basename(os.path.normpath(entry)) == "shims" \
            else None
        entries.append(os.path.dirname(target) if target is not None else entry)
    return ":".join(dict.fromkeys(entries))


def first_word(command: str) -> str | None:
    """The program word of a shell command: its first word after variable assignments (`X=1 cmd`);
    None when it does not split or is the shell's own (SHELL_WORDS)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    index = 0
    while index < len(words) and _assignment(words[index]):
        index += 1
    if index == len(words) or words[index] in SHELL_WORDS:
        return None
    return words[index]


def _assignment(word: str) -> bool:
    name = word.split("=", 1)[0]
    return "=" in word and name.isidentifier()


def job_programs(command: str | None, path: str, root: Path | None = None) -> JobPrograms:
    """The programs of a job running shell `command` (None: only `python3`, as an examples shard)
    with PATH `path`. root: the project root, where a first word relative to the project is looked
    for when the checkout may lack it (None: not looked for)."""
    python = program_reach(JOB_PYTHON, path)
    word = first_word(command or "")
    if word is None or word == JOB_PYTHON:
        return JobPrograms(python)
    if "/" in word and not os.path.isabs(word):
        project = _project_file(word, root)
        if project is None:
            return JobPrograms(python)
        return JobPrograms(python, program_reach(project, path), project)
    return JobPrograms(python, program_reach(word, path))


def _project_file(word: str, root: Path | None) -> str | None:
    """The absolute path of the project's executable file `word` (relative), or None."""
    if root is None:
        return None
    candidate = os.path.normpath(os.path.join(os.path.abspath(root), word))
    inside = candidate.startswith(os.path.abspath(root).rstrip("/") + "/")
    return candidate if inside and os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None


def checkout_command(command: str, checkout: Path, project_file: str | None) -> str:
    """`command` as a job in `checkout` runs it: when its first word is a path relative to the
    project that `checkout` lacks (an untracked venv's `.venv/bin/python`) and `project_file` is
    that word's file in the project, the word is replaced by that absolute path; otherwise
    `command` unchanged."""
    word = first_word(command)
    if project_file is None or word is None or "/" not in word or os.path.isabs(word):
        return command
    if os.path.lexists(os.path.join(checkout, word)):
        return command
    stripped = command.lstrip()
    if not stripped.startswith(word) or not project_file.endswith("/" + os.path.normpath(word)):
        return command
    return shlex.quote(project_file) + stripped[len(word):]
