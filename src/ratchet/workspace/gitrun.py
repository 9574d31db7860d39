"""The one way Ratchet runs git: `git_command` builds a neutralised argv and environment, `run_git`
runs it. Neutralised: system and global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null),
hooks (core.hooksPath=/dev/null), fsmonitor, credential helpers, the attributes file, replace
objects, pathspec magic, auto-gc, commit signing, pagers and colours; inherited GIT_* variables
are dropped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ratchet.core.errors import GitError

NEUTRAL_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "credential.helper=",
    "core.attributesFile=/dev/null",
    "protocol.file.allow=always",
    "core.autocrlf=false",
    "core.pager=cat",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "color.ui=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "apply.whitespace=nowarn",
)
"""`-c` settings passed to every git command; they override the repository's own config."""

_NEUTRAL_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_ATTR_NOSYSTEM": "1",
    "LC_ALL": "C",
}


def git_command(
    root: Path, args: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[list[str], dict]:
    """The argv and environment of one neutralised git command run in `root`.

    Every inherited GIT_* variable is dropped (GIT_DIR, GIT_INDEX_FILE, GIT_EXTERNAL_DIFF, ...);
    `env` adds variables on top (e.g. a temporary GIT_INDEX_FILE, an identity).
    """
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("LANGUAGE",)}
    base.update(_NEUTRAL_ENV)
    base.update(env or {})
    argv = ["git", "-C", str(root)]
    for setting in NEUTRAL_CONFIG:
        argv += ["-c", setting]
    return argv + list(args), base


def run_git(
    root: Path,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    code: str = "git.failed",
) -> subprocess.CompletedProcess[bytes]:
    """Run one neutralised git command to completion; stdout/stderr captured as bytes.

    Raises GitError(`code`) carrying git's stderr when git exits non-zero and `check` is true,
    and `git.not_installed` when there is no git executable.
    """
    argv, full_env = git_command(root, args, env)
    try:
        proc = subprocess.run(argv, input=stdin, env=full_env, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise GitError("git.not_installed", "git is not installed", hint="install git") from exc
    if check and proc.returncode != 0:
        raise GitError(code, f"git {' '.join(args[:2])} failed: {stderr_text(proc)}")
    return proc


def stderr_text(proc: subprocess.CompletedProcess[bytes]) -> str:
    """git's stderr as text, or "exit code N" when it printed nothing."""
    text = proc.stderr.decode("utf-8", "replace").strip()
    return text or f"exit code {proc.returncode}"
