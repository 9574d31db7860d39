"""GPU jobs on the local executor: declared devices (fake ids: this machine has no GPU), never two
jobs on one device, CUDA_VISIBLE_DEVICES set, and the device nodes bound into the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobkit import MODES, spec

from ratchet.compute.base import Resources
from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import wrap_argv

CLAIM = 'for d in $(echo "$CUDA_VISIBLE_DEVICES" | tr , " "); do mkdir "$LOCKS/$d" || echo CLASH; done; ' \
        'echo "gpus=$CUDA_VISIBLE_DEVICES"; sleep 0.3; for d in $(echo "$CUDA_VISIBLE_DEVICES" | tr , " "); do ' \
        'rmdir "$LOCKS/$d"; done'
"""Each device a job holds is a directory while it runs: a second holder fails its mkdir (CLASH)."""


@pytest.mark.parametrize("mode", MODES)
def test_jobs_never_share_a_device(work, jobs_dir, mode):
    locks = work / "locks"  # inside the checkout: the only shared directory a sandboxed job sees
    locks.mkdir()
    specs = [spec(f"g{i}", CLAIM, work, mode=mode, resources=Resources(gpus=1 + i % 2),
                  extra_env={"LOCKS": str(locks)}) for i in range(6)]
    with LocalExecutor(jobs_dir, 4, gpus=["0", "1", "2"]) as ex:
        results = ex.run(specs)
    assert [r.state for r in results] == ["ok"] * 6, [r.reason + r.stderr_tail for r in results]
    assert not any("CLASH" in r.stdout_tail for r in results)
    for i, r in enumerate(results):
        devices = r.stdout_tail.strip().removeprefix("gpus=").split(",")
        assert len(devices) == 1 + i % 2 and set(devices) <= {"0", "1", "2"}


def test_job_without_gpus_sees_no_cuda_variable(work, jobs_dir):
    with LocalExecutor(jobs_dir, 1, gpus=["0"]) as ex:
        (result,) = ex.run([spec("plain", 'echo "[${CUDA_VISIBLE_DEVICES-unset}]"', work)])
    assert result.stdout_tail == "[unset]\n"


def test_device_nodes_are_bound_into_the_sandbox(work, tmp_path: Path):
    argv = wrap_argv(["true"], workdir=work, scratch=tmp_path, network=False, env={},
                     devices=["/dev/null", "/dev/nvidia-missing"])
    i = argv.index("--dev-bind")
    assert argv[i:i + 3] == ["--dev-bind", "/dev/null", "/dev/null"]
    assert "/dev/nvidia-missing" not in argv
