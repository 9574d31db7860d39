"""The environment of a job, built from values, never copied from the operator's environment:
`core/jobenv.py` states the rule (what a job sees, the reserved names); this module applies it to
this process (the PATH Ratchet was started with, the virtual environment it runs from, the values
of `sandbox.pass_env`, the programs that PATH finds: `job_programs.py`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ratchet.compute.base import SandboxMode, SandboxSpec
from ratchet.compute.job_programs import JOB_PYTHON, bound_paths, job_programs, without_shims
from ratchet.compute.programs import ProgramReach, program_reach
from ratchet.core.contract import SandboxSection
from ratchet.core.errors import RatchetError
from ratchet.core.jobenv import JOB_LANG, is_reserved_env, job_path

LAUNCH_PATH = os.environ.get("PATH", os.defpath)
"""The PATH Ratchet was started with (read once, when this module is imported)."""


def ratchet_venv_bin() -> str | None:
    """The bin directory of the virtual environment Ratchet runs from, or None when it does not
    run from one (sys.prefix equals sys.base_prefix)."""
    if sys.prefix == sys.base_prefix:
        return None
    return os.path.join(sys.prefix, "bin")


def default_path(keep_ratchet_venv: bool = False) -> str:
    """The PATH of every job: LAUNCH_PATH without Ratchet's own virtual environment (first instead
    with `keep_ratchet_venv`; see `core.jobenv.job_path`), a pyenv `shims/` entry replaced by the
    bin directory of the version it selects (`job_programs.without_shims`)."""
    return without_shims(job_path(LAUNCH_PATH, ratchet_venv_bin(), keep_ratchet_venv))


def job_python(keep_ratchet_venv: bool = False) -> ProgramReach:
    """The `python3` every job runs (`sandbox.keep_ratchet_venv` as given): found on the jobs' PATH
    (`default_path`), with `found` (the path PATH names), `resolved` (symlinks followed) and the
    install prefixes a sandboxed job binds for it (`prefixes`; the first is its own install: a venv,
    a pyenv version). Never raises: when it is not found, `problem` says so."""
    return program_reach(JOB_PYTHON, default_path(keep_ratchet_venv))


def passed_env(names: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of the variables `names` (`sandbox.pass_env`) in `environ` (default: this
    process's environment); a name that is not set is left out."""
    source = os.environ if environ is None else environ
    return {name: source[name] for name in names if name in source}


def sandbox_spec(section: SandboxSection, mode: SandboxMode, command: str | None = None,
                 root: Path | None = None) -> SandboxSpec:
    """The SandboxSpec of every job of a run: `section` is the contract's [sandbox]
    (`core.contract.SandboxSection`), `mode` the resolved sandbox (`sandbox.resolve_mode`),
    `command` the target's command (None: an examples target, which runs `python3`), `root` the
    project root. Binds read-only the install prefixes of the job's `python3` and of the command's
    program, as the jobs' PATH finds them (`job_programs.job_programs`), then `sandbox.read_only`."""
    path = default_path(section.keep_ratchet_venv)
    programs = job_programs(command, path, root)
    return SandboxSpec(
        mode=mode,
        network=section.network,
        read_only=bound_paths(programs.reaches, section.read_only),
        path=path,
        passed_env=tuple(passed_env(section.pass_env).items()),
        project_file=programs.project_file,
    )


def job_env(
    seed_env: str,
    seed: int | str,
    job_id: str,
    variant: str,
    unit: str,
    extra: Mapping[str, str] | None = None,
    sandbox: SandboxSpec | None = None,
) -> dict[str, str]:
    """The complete allow-listed environment of a job (see `core.jobenv`): PATH (`sandbox.path`, or
    `default_path()`), LANG, `seed_env`=seed, RATCHET_JOB_ID, RATCHET_VARIANT, RATCHET_UNIT, the
    passed variables of `sandbox`, and `extra`. Nothing else comes from os.environ, so the
    operator's keys and tokens never reach a job. The executor adds HOME and TMPDIR.
    Raises RatchetError `job.reserved_env` when `seed_env`, a passed or an extra name is reserved
    or is `seed_env` again."""
    passed = dict(sandbox.passed_env) if sandbox is not None else {}
    for name in [seed_env, *passed, *(extra or {})]:
        if is_reserved_env(name):
            raise RatchetError(
                "job.reserved_env",
                f"{name} is set by Ratchet for every job and cannot be used",
                hint="pick another variable name, e.g. RATCHET_SEED",
            )
    if seed_env in passed:
        raise RatchetError("job.reserved_env", f"sandbox.pass_env names {seed_env}, the seed's variable",
                           hint=f"remove {seed_env} from sandbox.pass_env")
    path = sandbox.path if sandbox is not None and sandbox.path else default_path()
    env = {"PATH": path, "LANG": JOB_LANG, **passed, seed_env: str(seed)}
    env.update({"RATCHET_JOB_ID": job_id, "RATCHET_VARIANT": variant, "RATCHET_UNIT": str(unit)})
    env.update(extra or {})
    return env
