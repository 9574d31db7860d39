"""GPUs: which devices a local job gets and how many GPU jobs run at once.

Pure but for `gpu_device_nodes` (one directory listing): no processes, no clock. The local backend
hands out devices from the declared list `compute.gpus` through a `GpuPool` (never two jobs on one
device) and tells the job through CUDA_VISIBLE_DEVICES; on Slurm the scheduler picks the devices
and sets the variable itself. GPU-hours are a budget like the others (`core.budget`): an attempt
reserves its jobs at their timeouts x their GPUs before it starts, and each job is charged its
elapsed time x its GPUs when it ends.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ratchet.core.errors import RatchetError

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
"""The variable naming the devices a job may use (comma-separated ids, as CUDA reads it)."""

def gpu_env(devices: Sequence[str]) -> dict[str, str]:
    """The variables telling a job its devices: {"CUDA_VISIBLE_DEVICES": "0,3"}; for no device
    an empty value (CUDA then sees no GPU, rather than every GPU of the machine)."""
    return {CUDA_VISIBLE_DEVICES: ",".join(devices)}


def gpu_device_nodes(dev: str = "/dev") -> list[str]:
    """The NVIDIA device nodes under `dev` (`/dev/nvidia0`, `/dev/nvidiactl`, `/dev/nvidia-uvm`...),
    bound into a GPU job's sandbox; CUDA_VISIBLE_DEVICES says which GPUs the job may use. Reads
    one directory listing (the only effect in this module)."""
    try:
        return [f"{dev}/{name}" for name in sorted(os.listdir(dev)) if name.startswith("nvidia")]
    except OSError:
        return []


@dataclass(frozen=True)
class JobsAtOnce:
    """How many jobs may run at once (`count` >= 1) and, when GPUs lower it below what
    `max_parallel` asks, why (`why`, a sentence for `ratchet check`; None otherwise)."""

    count: int
    why: str | None = None


def jobs_at_once(max_parallel: int, gpus_per_job: int, max_concurrent_gpus: int, declared: int = 0) -> JobsAtOnce:
    """How many jobs may run at once: `max_parallel`, capped for GPU jobs at
    max(1, max_concurrent_gpus // gpus_per_job) (max_concurrent_gpus 0: `declared`, the local device
    count; both 0: no GPU cap, as on Slurm). A job asking more GPUs than the cap runs alone (one at a
    time) rather than never: whether any node or declared list can hold it is `check_compute`'s
    question (locally) and the scheduler's (on Slurm). Never raises."""
    gpus = max_concurrent_gpus or declared
    if gpus_per_job <= 0 or gpus <= 0:
        return JobsAtOnce(max_parallel)
    cap = max(1, gpus // gpus_per_job)
    if cap >= max_parallel:
        return JobsAtOnce(max_parallel)
    if gpus_per_job > gpus:
        why = (f"compute.gpus_per_job ({gpus_per_job}) exceeds compute.max_concurrent_gpus ({gpus}): "
               "jobs run one at a time")
    else:
        why = (f"{gpus} GPUs at once // {gpus_per_job} per job: {cap} jobs at a time "
               f"(compute.max_parallel {max_parallel})")
    return JobsAtOnce(cap, why)


class GpuPool:
    """The declared devices of this machine and which job holds each: `acquire(job_id, n)` hands
    out `n` free devices (lowest first) or None when fewer are free; `release(job_id)` returns them.
    A device is never held by two jobs. Thread-safe (the local executor's workers share one pool).
    Raises RatchetError `compute.gpus_duplicate` for a device declared twice."""

    def __init__(self, devices: Iterable[str | int]):
        self.devices = tuple(str(d) for d in devices)
        if len(set(self.devices)) != len(self.devices):
            raise RatchetError("compute.gpus_duplicate", f"compute.gpus lists a device twice: {list(self.devices)}")
        self._held: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def acquire(self, job_id: str, n: int) -> tuple[str, ...] | None:
        """`n` free devices for `job_id` (() for n == 0), or None when fewer than `n` are free now.
        Raises RatchetError `compute.gpus_too_few` when the pool could never satisfy `n`, and
        `compute.gpus_held` when `job_id` already holds devices."""
        if n <= 0:
            return ()
        if n > len(self.devices):
            raise RatchetError(
                "compute.gpus_too_few",
                f"job {job_id} asks for {n} GPUs; compute.gpus declares {len(self.devices)}",
                hint="declare more devices in compute.gpus or lower compute.gpus_per_job",
            )
        with self._lock:
            if job_id in self._held:
                raise RatchetError("compute.gpus_held", f"job {job_id} already holds GPUs {self._held[job_id]}")
            busy = {d for held in self._held.values() for d in held}
            free = [d for d in self.devices if d not in busy]
            if len(free) < n:
                return None
            self._held[job_id] = tuple(free[:n])
            return self._held[job_id]

    def release(self, job_id: str) -> None:
        """Return the devices `job_id` holds (none held: nothing happens)."""
        with self._lock:
            self._held.pop(job_id, None)

    def held(self) -> Mapping[str, tuple[str, ...]]:
        """A copy of job_id -> devices for the jobs holding devices now."""
        with self._lock:
            return dict(self._held)
