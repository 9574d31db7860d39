"""The one place an executor is built from the contract (`compute.backend`)."""

from __future__ import annotations

from pathlib import Path

from ratchet.compute.base import Executor
from ratchet.core.contract import Contract
from ratchet.core.errors import UnsupportedError


def make_executor(contract: Contract, jobs_dir: Path, pid_dir: Path | None = None) -> Executor:
    """The executor `compute.backend` names, writing job directories under `jobs_dir` and recording
    running local jobs under `pid_dir`. Raises UnsupportedError `unsupported.backend` for a backend
    this build cannot run."""
    backend = contract.compute.backend
    if backend == "local":
        from ratchet.compute.local import LocalExecutor

        return LocalExecutor(jobs_dir, contract.compute.max_parallel, pid_dir=pid_dir)
    raise UnsupportedError("unsupported.backend", f"compute.backend = {backend!r} is not supported by this build",
                           hint='use compute.backend = "local"')
