"""The one place a contract's `[compute]` becomes an executor: `local` or `slurm`; and the local
executor an agent's own processes run on."""

from __future__ import annotations

from pathlib import Path

from ratchet.compute.base import Executor, Resources
from ratchet.compute.gpus import JobsAtOnce, jobs_at_once
from ratchet.core.contract import ComputeSection
from ratchet.core.errors import RatchetError


def job_resources(compute: ComputeSection) -> Resources:
    """What each job asks: `cpus_per_job`, `gpus_per_job`, `memory_mb_per_job` (JobSpec.resources)."""
    return Resources(cpus=compute.cpus_per_job, gpus=compute.gpus_per_job, memory_mb=compute.memory_mb_per_job)


def check_compute(compute: ComputeSection) -> JobsAtOnce:
    """The one decision on a `[compute]` (`ratchet check`, `ratchet run` and the executor alike):
    how many jobs run at once (`gpus.jobs_at_once`: a GPU job asking more than
    `max_concurrent_gpus` runs alone), after refusing what this machine can never run: locally, GPU
    jobs asking more devices than `compute.gpus` declares. On Slurm whether a node can hold a job
    is the scheduler's answer (`ratchet check --preflight`). Raises RatchetError
    `compute.gpus_too_few`."""
    if compute.backend == "local" and compute.gpus_per_job > len(compute.gpus):
        raise RatchetError(
            "compute.gpus_too_few",
            f"compute.gpus_per_job is {compute.gpus_per_job} but compute.gpus declares {len(compute.gpus)} devices",
            hint="list this machine's GPUs in compute.gpus (e.g. gpus = [0, 1]) or lower compute.gpus_per_job",
        )
    return jobs_at_once(compute.max_parallel, compute.gpus_per_job, compute.max_concurrent_gpus, len(compute.gpus))


def make_executor(compute: ComputeSection, jobs_dir: Path, pid_dir: Path | None = None,
                  job_token: str | None = None, workers: int = 1) -> Executor:
    """The executor of `compute.backend` for a run whose jobs live in `jobs_dir`.

    Jobs at once: `compute.max_parallel`, capped for GPU jobs at
    max(1, max_concurrent_gpus // gpus_per_job) (`check_compute`): locally one pool of slots shared
    by every batch in flight; on Slurm each array's `%K` is its share, K // `workers` (at least 1),
    as the campaign's `workers` may each have an array in flight. pid_dir: where the local executor
    records running jobs (unused on Slurm, whose ids the kernel records through on_submit).
    job_token: on Slurm, the name of the run's jobs as the ledger recorded it (None: derived from
    jobs_dir, `slurm_calls.run_token`); unused locally. Locally, GPU jobs get devices of `compute.gpus`.
    Raises RatchetError `compute.gpus_too_few` locally when fewer devices are declared than one
    job asks.
    """
    k = check_compute(compute).count
    if compute.backend == "slurm":
        from ratchet.compute.slurm import SlurmExecutor

        return SlurmExecutor(jobs_dir, k, compute.slurm, token=job_token, workers=workers)
    from ratchet.compute.local import LocalExecutor

    return LocalExecutor(jobs_dir, k, pid_dir, compute.gpu_devices)


def make_agent_executor(jobs_dir: Path, workers: int = 1) -> Executor:
    """The executor of an agent's own processes (a command agent's legs): local, one job per worker
    at a time (`agent.workers`), whatever `compute.backend` (an agent talks to the kernel through
    files on this machine). An output over its job's `output_cap_bytes` keeps its end on disk (a
    CLI's last lines say how its leg ended)."""
    from ratchet.compute.local import LocalExecutor

    return LocalExecutor(jobs_dir, workers, keep_end=True)
