"""The one rule for a job's environment: what every job sees, which names are reserved, and what the
contract may add. Pure: `compute/env.py` applies it to the process's real environment, and
`core/contract.py` validates `target.seed_env` and `sandbox.pass_env` against it.

A job sees exactly:

- `PATH`: the PATH Ratchet was started with, in order, without relative or empty entries and without
  the bin directory of the virtual environment Ratchet itself runs from (unless
  `sandbox.keep_ratchet_venv`), so `python3` is the one a shell started by hand would find (a sandbox
  shows its install, and a pyenv `shims` entry becomes the selected version's bin directory:
  `compute/job_programs.py`); the system directories (SYSTEM_PATH) when nothing is left;
- `LANG=C.UTF-8`;
- `HOME` and `TMPDIR`: the job's private scratch directory (set by the executor);
- `target.seed_env` (default `RATCHET_SEED`): the unit's seed;
- `RATCHET_JOB_ID`, `RATCHET_VARIANT`, `RATCHET_UNIT`;
- each variable named in `sandbox.pass_env` that is set where Ratchet runs, with its value (which
  enters the measurement cache's key).

Nothing else: API keys and tokens in Ratchet's environment never reach a job.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

RATCHET_JOB_VARS = ("RATCHET_JOB_ID", "RATCHET_VARIANT", "RATCHET_UNIT")
"""Variables Ratchet sets for every job (the job id, the variant, the unit)."""

SCRATCH_VARS = ("HOME", "TMPDIR")
"""Variables the executor points at the job's private scratch directory."""

JOB_LANG = "C.UTF-8"
"""LANG of every job."""

RESERVED_ENV = frozenset({"PATH", "LANG", "CUDA_VISIBLE_DEVICES", *SCRATCH_VARS, *RATCHET_JOB_VARS})
"""Names `target.seed_env` and `sandbox.pass_env` may not use: set by Ratchet for every job
(`CUDA_VISIBLE_DEVICES`: the devices a GPU job was given)."""

RESERVED_PREFIXES = ("LD_", "PYTHON")
"""Name prefixes refused as well: they change what code runs (the loader, the interpreter)."""

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
"""A job's PATH when the one Ratchet was started with leaves nothing."""

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A portable environment variable name."""


def is_reserved_env(name: str) -> bool:
    """True for a name a contract may not set for jobs (RESERVED_ENV, LD_*, PYTHON*)."""
    return name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES)


def env_name_problem(name: str) -> str | None:
    """Why `name` cannot be a variable the contract sets for jobs, or None when it can."""
    if not ENV_NAME.fullmatch(name):
        return f"{name!r} is not an environment variable name"
    if is_reserved_env(name):
        return f"{name!r} is reserved (reserved: {', '.join(sorted(RESERVED_ENV))}, LD_*, PYTHON*)"
    return None


def job_path(launch_path: str, ratchet_bin: str | None, keep_ratchet_bin: bool = False) -> str:
    """A job's PATH (see the module docstring) from `launch_path`, the PATH Ratchet was started
    with. ratchet_bin: the bin directory of Ratchet's own virtual environment (None: Ratchet is not
    in one); dropped unless `keep_ratchet_bin`, which puts it first instead."""
    drop = posixpath.normpath(ratchet_bin) if ratchet_bin else None
    entries = []
    for entry in launch_path.split(":"):
        if not entry.startswith("/"):
            continue  # "" and relative entries would resolve inside the job's checkout
        if drop is not None and posixpath.normpath(entry) == drop:
            continue
        entries.append(entry)
    if keep_ratchet_bin and drop is not None:
        entries.insert(0, drop)
    return ":".join(dict.fromkeys(entries)) or ":".join(SYSTEM_PATH)


def path_entries(path: str) -> list[str]:
    """The entries of a PATH value, in order."""
    return [e for e in path.split(":") if e]


def outside(paths: Iterable[str], visible: Iterable[str]) -> list[str]:
    """The absolute `paths` that are not `visible` and not inside a visible directory."""
    shown = [posixpath.normpath(v) for v in visible]
    return [p for p in paths
            if not any(posixpath.normpath(p) == v or posixpath.normpath(p).startswith(v.rstrip("/") + "/")
                       for v in shown)]
