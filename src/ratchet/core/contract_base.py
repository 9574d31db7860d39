"""The contract's shared pieces (pure): the base of every section model, durations, scope paths,
and the rule for the environment variable names a contract may use."""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict

from ratchet.core.jobenv import env_name_problem

CONTRACT_FILE = "ratchet.toml"
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
GLOB_CHARS = set("*?[]{}")


AGENT_RESERVED_ENV = frozenset({
    "SWEEP_INDEX", "RATCHET_CHANNEL", "RATCHET_WORKSPACE", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    "XDG_STATE_HOME", "XDG_CACHE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
})
"""Variables Ratchet sets for a command agent or its launched experiments (`SWEEP_INDEX`: the index
of a job in a launched array); `agent.command.pass_env` and `target.seed_env` may not name them."""


def env_problem(name: str) -> str | None:
    """Why a contract may not name variable `name` (core.jobenv's rule, plus the names Ratchet sets
    for command agents), or None."""
    if name in AGENT_RESERVED_ENV:
        return f"{name!r} is set by Ratchet for command agents (reserved: {', '.join(sorted(AGENT_RESERVED_ENV))})"
    return env_name_problem(name)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


class _Model(BaseModel):
    """Base of every section: frozen, unknown keys refused, strict types, no inf/nan."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


def parse_duration(value: str | int | float) -> float:
    """Seconds from a duration: a number of seconds, or a string `"90"`, `"90s"`, `"45m"`, `"2h"`.

    Returns seconds >= 0. Raises ValueError naming the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError("a duration is seconds or a string like '90s', '45m', '2h', not a boolean")
    if isinstance(value, int | float):
        seconds = float(value)
        if math.isnan(seconds):
            raise ValueError("a duration is a number of seconds, not NaN")
    else:
        match = _DURATION.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a duration: use seconds or '90s', '45m', '2h'")
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if seconds < 0:
        raise ValueError("a duration must be >= 0")
    return seconds


def check_scope_path(path: str) -> str:
    """Validate one scope entry: relative, no `..`, no absolute path, no glob, no `.git`.

    Returns the path with a single trailing `/` kept (a directory entry). Raises ValueError.
    """
    if not path or not path.strip():
        raise ValueError("an empty path is not allowed")
    if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
        raise ValueError(f"{path!r} is absolute; scope paths are relative to the project root")
    if "\\" in path:
        raise ValueError(f"{path!r} contains a backslash; use '/'")
    if GLOB_CHARS & set(path):
        raise ValueError(f"{path!r} is a glob; list paths or directories (ending in '/')")
    parts = [p for p in path.rstrip("/").split("/")]
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r} has an empty, '.' or '..' component")
    if ".git" in parts:
        raise ValueError(f"{path!r} touches .git, which is never in scope")
    return path


def scope_covers(entry: str, path: str) -> bool:
    """True when scope `entry` covers `path`: the same path, or `path` inside the directory `entry`."""
    entry = entry.rstrip("/")
    path = path.rstrip("/")
    return path == entry or path.startswith(entry + "/")


