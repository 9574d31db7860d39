"""GPUs: device allocation never shares a device, and the GPU cap on jobs at once (GPU-hour budgets:
tests/core/test_budget_account.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratchet.compute.gpus import GpuPool, JobsAtOnce, gpu_env, jobs_at_once
from ratchet.core.errors import RatchetError


def test_pool_hands_out_distinct_devices_and_takes_them_back():
    pool = GpuPool(["0", "1", "2"])
    assert pool.acquire("a", 2) == ("0", "1")
    assert pool.acquire("b", 2) is None, "only one device is free"
    assert pool.acquire("c", 1) == ("2",)
    pool.release("a")
    assert pool.acquire("b", 2) == ("0", "1")
    assert gpu_env(("0", "1")) == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_pool_refuses_what_it_could_never_give():
    with pytest.raises(RatchetError) as err:
        GpuPool(["0"]).acquire("a", 2)
    assert err.value.code == "compute.gpus_too_few"
    with pytest.raises(RatchetError):
        GpuPool(["0", "0"])


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 3)), max_size=60))
def test_no_device_is_ever_held_by_two_jobs(ops):
    pool = GpuPool([f"GPU-{i}" for i in range(4)])
    for acquire, job, n in ops:
        job_id = f"j{job}"
        if acquire and job_id not in pool.held():
            got = pool.acquire(job_id, n)
            assert got is None or len(got) == n
        elif not acquire:
            pool.release(job_id)
        devices = [d for held in pool.held().values() for d in held]
        assert len(devices) == len(set(devices))


def test_jobs_at_once_is_capped_by_gpus():
    assert jobs_at_once(8, 2, 4).count == 2
    assert jobs_at_once(8, 0, 4) == jobs_at_once(8, 0, 0) == JobsAtOnce(8)
    assert jobs_at_once(1, 2, 8) == JobsAtOnce(1)
    assert jobs_at_once(8, 1, 0, declared=3).count == 3
    assert jobs_at_once(8, 1, 0).count == 8, "no declared GPUs and no cap: the scheduler decides"


def test_a_job_asking_more_gpus_than_the_cap_runs_one_at_a_time():
    at_once = jobs_at_once(8, 3, 2)
    assert at_once.count == 1 and at_once.why is not None and "one at a time" in at_once.why
    assert jobs_at_once(8, 4, 2, declared=8).count == 1, "max_concurrent_gpus, not the declared count, caps"
