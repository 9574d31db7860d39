"""The environment of a job: an allow-list built from values, never from the operator's environment.

A job sees PATH, LANG, the unit's seed variable, RATCHET_JOB_ID, RATCHET_VARIANT, RATCHET_UNIT (and
any extra variables the caller names); the executor adds HOME and TMPDIR (the job's scratch
directory). API keys and tokens in the kernel's environment therefore never reach a job. Pure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ratchet.core.errors import RatchetError

RATCHET_JOB_VARS = ("RATCHET_JOB_ID", "RATCHET_VARIANT", "RATCHET_UNIT")
"""Variables Ratchet sets for every job (the job id, the variant, the unit)."""

RESERVED_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "CUDA_VISIBLE_DEVICES", *RATCHET_JOB_VARS)
"""Variables a contract's `seed_env` (or an extra variable) may not name; also any LD_* or PYTHON*."""

RESERVED_PREFIXES = ("LD_", "PYTHON")

SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def default_path() -> str:
    """PATH for jobs: the directory of the Python in use (so `python3` is this Python), then the
    system directories."""
    dirs = [os.path.dirname(sys.executable), *SYSTEM_PATH]
    return ":".join(dict.fromkeys(d for d in dirs if d))


def is_reserved_env(name: str) -> bool:
    """True for a variable a contract may not use as `seed_env` (see RESERVED_ENV)."""
    return name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES)


def job_env(
    seed_env: str,
    seed: int | str,
    job_id: str,
    variant: str,
    unit: str,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The complete allow-listed environment of a job: PATH (see `default_path`), LANG=C.UTF-8,
    `seed_env`=seed, RATCHET_JOB_ID, RATCHET_VARIANT, RATCHET_UNIT, and `extra`. Nothing comes from
    os.environ, so the operator's keys and tokens never reach a job. The executor adds HOME and
    TMPDIR. Raises RatchetError `job.reserved_env` when `seed_env` or an extra name is reserved."""
    for name in [seed_env, *(extra or {})]:
        if is_reserved_env(name):
            raise RatchetError(
                "job.reserved_env",
                f"{name} is set by Ratchet for every job and cannot be used",
                hint="pick another variable name, e.g. RATCHET_SEED",
            )
    env = {"PATH": default_path(), "LANG": "C.UTF-8", seed_env: str(seed)}
    env.update({"RATCHET_JOB_ID": job_id, "RATCHET_VARIANT": variant, "RATCHET_UNIT": str(unit)})
    env.update(extra or {})
    return env
