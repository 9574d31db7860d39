"""The one place a contract's `[compute]` becomes an executor: `local` or `slurm`."""

from __future__ import annotations

from pathlib import Path

from ratchet.compute.base import Executor
from ratchet.compute.gpus import jobs_at_once
from ratchet.compute.local import LocalExecutor
from ratchet.compute.slurm import SlurmExecutor
from ratchet.core.contract import ComputeSection
from ratchet.core.errors import UnsupportedError


def make_executor(compute: ComputeSection, jobs_dir: Path, pid_dir: Path | None = None) -> Executor:
    """The executor of `compute.backend` for a run whose jobs live in `jobs_dir`.

    Jobs at once: `compute.max_parallel`, capped for GPU jobs at
    max_concurrent_gpus // gpus_per_job (`gpus.jobs_at_once`); on Slurm that is the K of each
    array's `%K`. pid_dir: where the local executor records running jobs (unused on Slurm, whose
    ids the kernel records through on_submit). Raises UnsupportedError `unsupported.gpus` for GPU
    jobs on the local backend (its device allocation, `gpus.GpuPool`, is not wired yet) and
    RatchetError `compute.gpus_too_few` when not one GPU job could run at once.
    """
    k = jobs_at_once(compute.max_parallel, compute.gpus_per_job, compute.max_concurrent_gpus, len(compute.gpus))
    if compute.backend == "slurm":
        return SlurmExecutor(jobs_dir, k, compute.slurm)
    if compute.gpus_per_job > 0:
        raise UnsupportedError(
            "unsupported.gpus",
            f"compute.gpus_per_job = {compute.gpus_per_job} on the local backend is not supported yet by this build",
            hint='set compute.gpus_per_job = 0, or compute.backend = "slurm"',
        )
    return LocalExecutor(jobs_dir, k, pid_dir)
