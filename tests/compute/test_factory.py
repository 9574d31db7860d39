"""The executor factory: the backend and the jobs-at-once cap come from [compute]."""

from __future__ import annotations

import pytest

from ratchet.compute.base import Resources
from ratchet.compute.factory import job_resources, make_executor
from ratchet.compute.local import LocalExecutor
from ratchet.compute.slurm import SlurmExecutor
from ratchet.core.contract import ComputeSection, SlurmSection
from ratchet.core.errors import RatchetError


def test_slurm_backend_gets_its_settings_and_the_gpu_cap(tmp_path):
    compute = ComputeSection(backend="slurm", max_parallel=8, gpus_per_job=2, max_concurrent_gpus=4,
                             slurm=SlurmSection(partition="gpu"))
    ex = make_executor(compute, tmp_path)
    assert isinstance(ex, SlurmExecutor) and ex.backend == "slurm"
    assert ex.max_parallel == 2 and ex.settings.partition == "gpu"


def test_local_backend_keeps_max_parallel(tmp_path):
    with make_executor(ComputeSection(max_parallel=3), tmp_path) as ex:
        assert isinstance(ex, LocalExecutor) and ex.max_parallel == 3


def test_gpu_jobs_need_enough_devices(tmp_path):
    with make_executor(ComputeSection(max_parallel=4, gpus_per_job=1, gpus=[0, 1]), tmp_path) as ex:
        assert ex.max_parallel == 2 and ex.gpu_pool.devices == ("0", "1")
    with pytest.raises(RatchetError):
        make_executor(ComputeSection(gpus_per_job=1), tmp_path)
    with pytest.raises(RatchetError) as err:
        make_executor(ComputeSection(gpus_per_job=3, gpus=[0, 1]), tmp_path)
    assert err.value.code == "compute.gpus_too_few"


def test_gpu_jobs_over_the_cap_run_one_at_a_time(tmp_path):
    ex = make_executor(ComputeSection(backend="slurm", max_parallel=8, gpus_per_job=4, max_concurrent_gpus=2),
                       tmp_path)
    assert ex.max_parallel == 1
    with make_executor(ComputeSection(max_parallel=4, gpus_per_job=3, gpus=[0, 1, 2], max_concurrent_gpus=2),
                       tmp_path / "local") as local:
        assert local.max_parallel == 1


def test_job_resources_come_from_compute():
    compute = ComputeSection(cpus_per_job=4, gpus_per_job=1, memory_mb_per_job=2048)
    assert job_resources(compute) == Resources(cpus=4, gpus=1, memory_mb=2048)
