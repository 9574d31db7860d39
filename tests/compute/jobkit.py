"""Helpers for the executor tests: job specs over real scripts, and process liveness checks.
(Fixtures live in conftest.py; this module has a unique name so tests can import it.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ratchet.compute.base import JobSpec, SandboxSpec
from ratchet.compute.local import job_env
from ratchet.compute.sandbox import probe_bwrap

MODES = [
    "none",
    pytest.param("bwrap", marks=pytest.mark.skipif(not probe_bwrap().available, reason=probe_bwrap().reason)),
]
"""Parametrize a test over both executions: without and with the sandbox."""

needs_bwrap = pytest.mark.skipif(not probe_bwrap().available, reason=probe_bwrap().reason)


def spec(
    job_id: str,
    command: str,
    workdir: Path,
    *,
    timeout_s: float = 30.0,
    mode: str = "none",
    network: bool = False,
    extra_env: dict[str, str] | None = None,
    **kwargs,
) -> JobSpec:
    """A shell job (`/bin/sh -c command`) with the allow-listed environment of a real job."""
    env = job_env("RATCHET_SEED", 7, job_id, "candidate", "u0", extra_env)
    return JobSpec(
        job_id=job_id,
        argv=("/bin/sh", "-c", command),
        workdir=workdir,
        env=env,
        timeout_s=timeout_s,
        sandbox=SandboxSpec(mode=mode, network=network),
        **kwargs,
    )


def alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def pids_with_token(token: str) -> list[int]:
    """Live processes whose command line contains `token` (works across PID namespaces)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if token.encode() in f.read() and alive(int(name)):
                        found.append(int(name))
            except OSError:
                pass
    return found
