"""The Slurm executor against a real one-node cluster (`make slurm-up`, scripts/slurm-cluster.sh):
held arrays, throttles, walltimes, memory limits, GPUs, cancel, and re-attaching after a kernel
death. Skipped, with the reason, when no cluster is reachable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import user_venv
from jobkit import needs_bwrap, spec

from ratchet.compute import slurm
from ratchet.compute.base import ArtifactSpec, Resources, SandboxSpec
from ratchet.compute.env import job_env
from ratchet.compute.job_programs import job_programs
from ratchet.compute.slurm import SlurmExecutor
from ratchet.compute.slurm_states import parse_show_job
from ratchet.compute.slurm_tasks import max_poll_rounds
from ratchet.core.contract import SlurmSection
from ratchet.core.errors import SandboxError

FAST = SlurmSection(poll_min_s=0.2, poll_max_s=2.0, time_grace_s=0.0)
"""Poll settings for short test jobs (a cluster's defaults are 0.5 s to 15 s)."""


def _cluster_problem() -> str | None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm client commands not found (run `make slurm-up`)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t %G"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo did not answer: {exc}"
    if proc.returncode != 0 or not any(s.startswith(("idle", "mix", "alloc")) for s in proc.stdout.splitlines()):
        return f"no Slurm cluster reachable (run `make slurm-up`): {proc.stderr.strip() or proc.stdout.strip()}"
    return None


def _config(key: str) -> str:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=15).stdout
    for line in out.splitlines():
        if line.split("=")[0].strip() == key:
            return line.split("=", 1)[1].strip()
    return ""


PROBLEM = _cluster_problem()
pytestmark = [pytest.mark.slurm, pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")]

CONCURRENCY = 'mkdir "$RUNNING/$RATCHET_JOB_ID"; ls "$RUNNING" | wc -l; sleep {s}; rmdir "$RUNNING/$RATCHET_JOB_ID"'
"""A job printing how many jobs of the test run at once (mkdir/ls/rmdir in a shared directory)."""


def concurrency_specs(n: int, work: Path, tmp_path: Path, seconds: float, then: str = "", **kwargs) -> list:
    running = tmp_path / "running"
    running.mkdir(exist_ok=True)
    command = CONCURRENCY.format(s=seconds) + then
    return [spec(f"c{i}", command, work, extra_env={"RUNNING": str(running)}, **kwargs) for i in range(n)]


def test_array_throttle_never_runs_more_than_k_at_once(work, jobs_dir, tmp_path):
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    results = ex.run(concurrency_specs(6, work, tmp_path, 2))
    assert [r.state for r in results] == ["ok"] * 6, [r.reason for r in results]
    seen = [int(r.stdout_tail.split()[0]) for r in results]
    assert max(seen) <= 2, f"%2 array ran {max(seen)} tasks at once"
    control = SlurmExecutor(jobs_dir, 6, FAST).run(concurrency_specs(6, work, tmp_path, 4))
    assert max(int(r.stdout_tail.split()[0]) for r in control) > 2, "the counter can see more than 2"


def test_a_capped_group_is_an_array_throttled_to_its_cap(work, jobs_dir, tmp_path):
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    specs = concurrency_specs(4, work, tmp_path, 2, group="g", group_max_parallel=1)
    results = ex.run(specs)
    assert [r.state for r in results] == ["ok"] * 4, [r.reason for r in results]
    assert max(int(r.stdout_tail.split()[0]) for r in results) == 1, "a group capped at 1 ran two tasks at once"


def test_task_over_its_timeout_is_timeout_and_the_others_finish(work, jobs_dir):
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    specs = [spec("slow", "sleep 60", work, timeout_s=2), spec("a", "echo a", work), spec("b", "echo b", work)]
    results = ex.run(specs)
    assert [r.state for r in results] == ["timeout", "ok", "ok"], [r.reason for r in results]
    assert results[0].reason.startswith("timed out after 2.0 s")
    assert [r.stdout_tail for r in results[1:]] == ["a\n", "b\n"]
    assert json.loads((jobs_dir / "slow" / "result.json").read_text())["state"] == "timeout"


def test_task_past_the_scheduler_walltime_is_slurm_timeout(work, jobs_dir):
    """The job stops its own wrapper (so nothing but Slurm can end it): Slurm's --time (1 minute:
    timeout 1 s, no grace, rounded up) is the backstop, and its TIMEOUT is kept."""
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    specs = [spec("stuck", "kill -STOP $PPID; sleep 300", work, timeout_s=1), spec("fine", "true", work)]
    stuck, fine = ex.run(specs)
    assert (stuck.state, stuck.scheduler_state) == ("timeout", "TIMEOUT"), stuck.reason
    assert fine.state == "ok" and fine.scheduler_state == "COMPLETED"


def test_submission_is_held_until_every_id_was_reported(work, jobs_dir):
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    specs = [spec(f"h{i}", 'touch "$PWD/ran-$RATCHET_JOB_ID"', work) for i in range(3)]
    seen: list[tuple[str, str]] = []

    def on_submit(job_id: str, external_id: str) -> None:
        seen.append((job_id, external_id))
        if len(seen) == len(specs):
            time.sleep(1.5)  # an array that was not held would start meanwhile
            records = parse_show_job(
                subprocess.run(["scontrol", "-o", "show", "job", external_id.split("_")[0]],
                               capture_output=True, text=True, check=True).stdout)
            assert {r.state for r in records.values()} == {"PENDING"}
            assert all("Held" in r.reason for r in records.values()), [r.reason for r in records.values()]
            assert not list(work.glob("ran-*")), "a task ran before its id was recorded"

    results = ex.run(specs, on_submit=on_submit)
    assert [r.state for r in results] == ["ok"] * 3
    array = seen[0][1].split("_")[0]
    assert seen == [(f"h{i}", f"{array}_{i}") for i in range(3)]
    assert [r.external_id for r in results] == [e for _, e in seen]
    assert sorted(p.name for p in work.glob("ran-*")) == ["ran-h0", "ran-h1", "ran-h2"]


def test_failing_on_submit_cancels_the_array_before_anything_ran(work, jobs_dir):
    ex = SlurmExecutor(jobs_dir, 4, FAST)

    def on_submit(job_id: str, external_id: str) -> None:
        raise OSError("the ledger's disk is full")

    with pytest.raises(OSError):
        ex.submit([spec("x0", 'touch "$PWD/ran-x0"', work), spec("x1", 'touch "$PWD/ran-x1"', work)], on_submit)
    assert ex.calls["scancel"] == 1 and ex.calls["release"] == 0
    time.sleep(1.5)
    assert not list(work.glob("ran-*"))


KERNEL = """
import os, signal, sys
from pathlib import Path
from ratchet.compute.base import JobSpec
from ratchet.compute.env import job_env
from ratchet.compute.slurm import SlurmExecutor
from ratchet.core.contract import SlurmSection
from ratchet.core.errors import SandboxError

jobs, work, counters, recorded = map(Path, sys.argv[1:5])
specs = [JobSpec(f"k{i}", ("/bin/sh", "-c", f'echo run >> {counters}/k{i}; sleep 2; echo done-k{i}'), work,
                 job_env("RATCHET_SEED", i, f"k{i}", "candidate", str(i)), 60.0) for i in range(4)]
ex = SlurmExecutor(jobs, 4, SlurmSection(poll_min_s=0.2, poll_max_s=2.0, time_grace_s=0.0))
die_at = int(os.environ.get("DIE_AT_RECORD", "0"))  # >0: killed after recording that many, before the release
with open(recorded, "a") as ledger:
    def on_submit(job_id, external_id):
        ledger.write(f"{job_id} {external_id}\\n")
        ledger.flush()
        os.fsync(ledger.fileno())
        if sum(1 for _ in open(recorded)) == die_at:
            os.kill(os.getpid(), signal.SIGKILL)
    ex.submit(specs, on_submit)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_reattach_after_kernel_death_collects_without_resubmitting(work, jobs_dir, tmp_path):
    counters, recorded = tmp_path / "counters", tmp_path / "recorded"
    counters.mkdir()
    proc = subprocess.run([sys.executable, "-c", KERNEL, str(jobs_dir), str(work), str(counters), str(recorded)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    ids = dict(line.split() for line in recorded.read_text().splitlines())
    assert sorted(ids) == ["k0", "k1", "k2", "k3"]
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    batch = ex.reattach(ids)
    results = ex.wait(batch)
    assert ex.calls["sbatch"] == 0, "nothing is submitted again"
    assert [r.job_id for r in results] == list(ids)
    assert [r.state for r in results] == ["ok"] * 4, [r.reason for r in results]
    assert [r.stdout_tail for r in results] == [f"done-{j}\n" for j in ids]
    assert [r.external_id for r in results] == list(ids.values())
    assert all((counters / j).read_text() == "run\n" for j in ids), "each task ran exactly once"


def test_a_kernel_killed_before_releasing_its_array_leaves_nothing_held_after_reattach(work, jobs_dir, tmp_path):
    """Killed while recording the ids of a held array (3 of 4 recorded, none released): reattach
    releases the recorded tasks and scancels the one never recorded (its job is submitted afresh)."""
    counters, recorded = tmp_path / "counters", tmp_path / "recorded"
    counters.mkdir()
    proc = subprocess.run([sys.executable, "-c", KERNEL, str(jobs_dir), str(work), str(counters), str(recorded)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "DIE_AT_RECORD": "3"})
    assert proc.returncode == -9, proc.stderr
    ids = dict(line.split() for line in recorded.read_text().splitlines())
    assert sorted(ids) == ["k0", "k1", "k2"]
    array = ids["k0"].split("_")[0]
    held = parse_show_job(subprocess.run(["scontrol", "-o", "show", "job", array], capture_output=True, text=True,
                                         check=True).stdout)
    assert {r.reason for r in held.values()} == {"JobHeldUser"}, held
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    results = ex.wait(ex.reattach(ids))
    assert [r.state for r in results] == ["ok"] * 3, [r.reason for r in results]
    assert ex.calls["release"] == 1 and ex.calls["sbatch"] == 0
    assert sorted(p.name for p in counters.iterdir()) == ["k0", "k1", "k2"], "the unrecorded task never ran"
    left = subprocess.run(["squeue", "-h", "-j", array], capture_output=True, text=True).stdout
    assert "k3" not in left and not left.strip(), left


FORGETTABLE = SlurmSection(poll_min_s=200.0, poll_max_s=200.0, time_grace_s=0.0, extra_args=["--time=1"])
"""A first poll long after MinJobAge (30 s on the test cluster) and a walltime of 1 minute (after
the job's own timeout, so Slurm's walltime is what ends the long task)."""


def test_a_task_killed_at_its_walltime_and_forgotten_before_the_poll_is_timeout_not_cancelled(work, jobs_dir,
                                                                                              monkeypatch):
    """Polls far apart (the MinJobAge guard off): by the first poll the controller has forgotten
    every task. The one Slurm ended at its walltime is `timeout` from what its wrapper heard then;
    the one whose wrapper died without an outcome is `unknown` and to be run again; none is
    `cancelled` (which would stop the run as interrupted)."""
    assert float(_config("MinJobAge").split()[0]) < 100, "the test cluster must forget jobs within the poll"
    monkeypatch.setattr(slurm, "FORGOTTEN_GRACE_S", 0.0)  # the outcome files are local: no grace to wait
    ex = SlurmExecutor(jobs_dir, 3, FORGETTABLE)
    ex.poll_below_min_job_age = ex.early_polls = False
    specs = [spec("long", "sleep 300", work, timeout_s=280), spec("vanished", "kill -9 $PPID; sleep 5", work),
             spec("fine", "echo fine", work)]
    long, vanished, fine = ex.run(specs)
    assert (long.state, long.scheduler_state) == ("timeout", None), long.reason
    assert "TimeLimit" in long.reason and long.elapsed_s < 200
    assert (vanished.state, vanished.scheduler_state, vanished.rerun) == ("unknown", None, True), vanished.reason
    assert fine.state == "ok" and not fine.rerun


def test_polls_are_clamped_below_the_clusters_min_job_age(jobs_dir):
    ex = SlurmExecutor(jobs_dir, 1, SlurmSection(poll_min_s=0.5, poll_max_s=150.0))
    ceiling = float(_config("MinJobAge").split()[0]) / 2
    assert ex.poll_bounds() == (min(0.5, ceiling), ceiling)
    assert ex.calls["config"] == 1


def test_reattach_to_forgotten_tasks_reads_the_outcome_file_or_says_unknown(work, jobs_dir, monkeypatch):
    monkeypatch.setattr(slurm, "FORGOTTEN_GRACE_S", 0.5)
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    (done,) = ex.run([spec("done", "echo finished", work)])
    (jobs_dir / "gone").mkdir()
    never = "2147483000"  # an array id this cluster never gave: the scheduler has no record of it
    results = ex.wait(ex.reattach({"done": f"{never}_0", "gone": f"{never}_1", "local": "12345"}))
    assert [r.job_id for r in results] == ["done", "gone"], "a pid is not a Slurm task: the kernel reruns it"
    assert (results[0].state, results[0].stdout_tail, results[0].scheduler_state) == ("ok", "finished\n", None)
    assert results[1].state == "unknown"


def test_cancel_ids_cancels_exactly_those(work, jobs_dir):
    ex = SlurmExecutor(jobs_dir, 4, FAST)
    specs = [spec(j, f"echo started; sleep {s}", work, timeout_s=300)
             for j, s in (("a", 3), ("b", 120), ("c", 120), ("d", 3))]
    batch = ex.submit(specs)

    def cancel_when_running() -> None:
        for _ in range(600):
            if all((jobs_dir / j / "stdout").exists() and (jobs_dir / j / "stdout").stat().st_size for j in "bc"):
                break
            time.sleep(0.1)
        ex.cancel(["b", "c"])

    thread = threading.Thread(target=cancel_when_running)
    thread.start()
    results = {r.job_id: r for r in ex.wait(batch)}
    thread.join()
    assert ex.calls["scancel"] == 1
    assert {j: (r.state, r.scheduler_state) for j, r in results.items()} == {
        "a": ("ok", "COMPLETED"), "b": ("cancelled", "CANCELLED"), "c": ("cancelled", "CANCELLED"),
        "d": ("ok", "COMPLETED")}


def test_thousand_task_array_is_polled_a_bounded_number_of_times(work, jobs_dir):
    settings = SlurmSection(poll_min_s=0.5, poll_max_s=5.0, time_grace_s=0.0)
    ex = SlurmExecutor(jobs_dir, 8, settings)
    start = time.monotonic()
    results = ex.run([spec(f"t{i}", "true", work) for i in range(1000)])
    elapsed = time.monotonic() - start
    assert [r.state for r in results].count("ok") == 1000
    assert ex.calls["sbatch"] == 1 and ex.calls["release"] == 1
    bound = max_poll_rounds(elapsed, settings.poll_min_s, settings.poll_max_s)
    assert ex.calls["show"] <= bound, f"{ex.calls['show']} polls over {elapsed:.0f} s, bound {bound}"
    print(f"\n1000 tasks: {elapsed:.0f} s, {ex.scheduler_calls} scheduler calls {dict(ex.calls)}")


def test_job_sees_exactly_its_environment_stdin_and_capped_output(work, jobs_dir, monkeypatch):
    monkeypatch.setenv("RATCHET_TEST_SECRET", "hunter2")
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    env_job = spec("env", "cat; env | cut -d= -f1 | sort | tr '\\n' ' '", work, stdin_bytes=b"from-stdin\n")
    loud = spec("loud", "head -c 100000 /dev/zero | tr '\\0' x", work, output_cap_bytes=1000)
    env_result, loud_result = ex.run([env_job, loud])
    assert env_result.stdout_tail.startswith("from-stdin\n")
    names = set(env_result.stdout_tail.split("\n", 1)[1].split())
    assert names - {"PWD", "SHLVL", "OLDPWD"} == set(env_job.env) | {"HOME", "TMPDIR"}, "the shell adds PWD"
    assert "RATCHET_TEST_SECRET" not in names
    assert loud_result.stdout_truncated and (jobs_dir / "loud" / "stdout").stat().st_size == 1000


@needs_bwrap
def test_sandboxed_task_runs_under_bwrap_on_the_node(work, jobs_dir):
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    (result,) = ex.run([spec("boxed", "tr '\\0' ' ' < /proc/1/cmdline; ls /root >/dev/null 2>&1 || echo no-home",
                             work, mode="bwrap")])
    assert result.state == "ok", result.reason
    assert "bwrap" in result.stdout_tail and "no-home" in result.stdout_tail


@needs_bwrap
def test_a_sandboxed_task_runs_the_python3_of_the_jobs_path_with_its_packages(work, jobs_dir, tmp_path):
    venv = user_venv(tmp_path / "home" / ".venvs" / "work")
    path = f"{venv}/bin:/usr/bin:/bin"
    sandbox = SandboxSpec("bwrap", read_only=job_programs(None, path).binds(), path=path)
    job = replace(spec("venv", "python3 -c 'import onlyhere; print(onlyhere.__file__)'", work, mode="bwrap"),
                  sandbox=sandbox, env=job_env("RATCHET_SEED", 7, "venv", "candidate", "u0", sandbox=sandbox))
    (result,) = SlurmExecutor(jobs_dir, 1, FAST).run([job])
    assert result.state == "ok", (result.reason, result.stderr_tail)
    assert result.stdout_tail.startswith(str(venv)), result.stdout_tail


def test_memory_limit_ends_a_task_out_of_memory(work, jobs_dir):
    if "cgroup" not in _config("TaskPlugin"):
        pytest.skip("the cluster runs without task/cgroup: OUT_OF_MEMORY is covered by a recorded reply")
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    hog = spec("hog", f"{sys.executable} -c 'x = bytearray(400 << 20)'", work, resources=Resources(memory_mb=100))
    hog_result, small = ex.run([hog, spec("small", "true", work, resources=Resources(memory_mb=100))])
    assert (hog_result.state, hog_result.scheduler_state) == ("oom", "OUT_OF_MEMORY"), hog_result.reason
    assert small.state == "ok"


def test_gpu_tasks_get_their_own_devices_and_are_capped_by_the_cluster(work, jobs_dir, tmp_path):
    gres = subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True, text=True).stdout
    if "gpu:" not in gres or int(gres.split("gpu:")[1].split()[0].split("(")[0]) < 4:
        pytest.skip(f"the cluster declares no 4 GPUs (sinfo: {gres.strip()})")
    ex = SlurmExecutor(jobs_dir, 8, FAST)
    specs = concurrency_specs(4, work, tmp_path, 2, '; echo "$CUDA_VISIBLE_DEVICES"', resources=Resources(gpus=2))
    results = ex.run(specs)
    assert [r.state for r in results] == ["ok"] * 4, [r.reason for r in results]
    assert max(int(r.stdout_tail.split()[0]) for r in results) <= 2, "4 GPUs hold at most 2 jobs of 2 GPUs"
    devices = [r.stdout_tail.split()[-1].split(",") for r in results]
    assert all(len(d) == 2 and set(d) <= {"0", "1", "2", "3"} for d in devices), devices


@needs_bwrap
def test_sandbox_preflight_runs_on_a_node(jobs_dir):
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    assert ex.probe_sandbox("auto") == "bwrap"
    assert ex.probe_sandbox("none") == "none"
    assert ex.calls["probe"] == 1


def test_sandbox_preflight_that_fails_on_the_node_refuses_bwrap_and_auto_runs_bare(jobs_dir):
    broken = SlurmExecutor(jobs_dir, 2, FAST.model_copy(update={"python": "/nonexistent/python3"}))
    with pytest.raises(SandboxError) as err:
        broken.probe_sandbox("bwrap")
    assert err.value.code == "sandbox.unavailable"
    assert broken.probe_sandbox("auto") == "none"


def test_wrapper_that_cannot_start_leaves_unknown_with_slurms_log(work, jobs_dir):
    broken = SlurmExecutor(jobs_dir, 2, FAST.model_copy(update={"python": "/nonexistent/python3"}))
    (result,) = broken.run([spec("w", "true", work)])
    assert (result.state, result.scheduler_state) == ("unknown", "FAILED")
    assert "/nonexistent/python3" in result.stderr_tail


def test_artifacts_are_collected_when_a_task_ends_and_when_a_reattached_one_does(work, jobs_dir, tmp_path):
    first, later = tmp_path / "artifacts" / "first", tmp_path / "artifacts" / "later"
    ex = SlurmExecutor(jobs_dir, 2, FAST)
    (done,) = ex.run([spec("first", "echo one > out.txt", work, artifacts=ArtifactSpec(("out.txt",), first))])
    assert done.state == "ok" and (first / "files" / "out.txt").read_text() == "one\n"
    recorded: dict[str, str] = {}
    other = tmp_path / "other"
    other.mkdir()
    ex.submit([spec("later", "sleep 1; echo two > out.txt", other, artifacts=ArtifactSpec(("out.txt",), later))],
              on_submit=recorded.__setitem__)  # this kernel dies without waiting
    assert not later.exists()
    fresh = SlurmExecutor(jobs_dir, 2, FAST)
    (result,) = fresh.wait(fresh.reattach(recorded))
    assert result.state == "ok" and (later / "files" / "out.txt").read_text() == "two\n"


def test_slurm_jobs_outlive_their_kernel_and_their_ids_are_not_pids(jobs_dir):
    ex = SlurmExecutor(jobs_dir, 1, FAST)
    assert ex.jobs_outlive_kernel and not ex.external_ids_are_pids
    assert ex.probe_sandbox("none") == "none"


def test_a_task_that_can_never_start_ends_unschedulable_instead_of_waiting(work, jobs_dir):
    # one node: --nodes=2 is accepted (EnforcePartLimits=NO) and pends with PartitionNodeLimit forever
    ex = SlurmExecutor(jobs_dir, 2, FAST.model_copy(update={"extra_args": ["--nodes=2"]}))
    start = time.monotonic()
    done: list = []
    jobs = [spec("n0", "true", work), spec("n1", "true", work)]
    runner = threading.Thread(target=lambda: done.extend(ex.run(jobs)), daemon=True)
    runner.start()
    runner.join(60)
    assert done, f"the executor still waits after {time.monotonic() - start:.0f} s"
    assert [r.state for r in done] == ["unschedulable"] * 2, [r.reason for r in done]
    assert all("PartitionNodeLimit" in r.reason for r in done)
    assert ex.calls["scancel"] == 1, "one scancel for the array, not one per task"


def test_the_scheduler_says_whether_a_job_shape_can_run(jobs_dir):
    ex = SlurmExecutor(jobs_dir, 1, FAST)
    assert ex.shape_problem(Resources(cpus=1), 30.0) is None
    too_big = ex.shape_problem(Resources(cpus=64), 30.0)
    assert too_big is not None and "--cpus-per-task=64" in too_big and "not available" in too_big
    elsewhere = SlurmExecutor(jobs_dir, 1, FAST.model_copy(update={"partition": "nosuchpartition"}))
    nowhere = elsewhere.shape_problem(Resources(), 30.0)
    assert nowhere is not None and "partition" in nowhere.lower()


def test_the_array_limit_is_the_clusters_max_array_size_read_once(jobs_dir):
    ex = SlurmExecutor(jobs_dir, 1, FAST)
    assert ex._array_limit() == ex._array_limit() == int(_config("MaxArraySize"))
    assert ex.calls["config"] == 1


def test_a_submit_larger_than_the_array_limit_runs_as_consecutive_arrays(work, jobs_dir, tmp_path):
    ex = SlurmExecutor(jobs_dir, 2, FAST.model_copy(update={"max_array_size": 2}))
    results = ex.run(concurrency_specs(3, work, tmp_path, 1))
    assert [r.state for r in results] == ["ok"] * 3, [r.reason for r in results]
    arrays = [r.external_id.split("_")[0] for r in results if r.external_id]
    assert len(set(arrays)) == 2 and ex.calls["sbatch"] == 2
    assert ex.calls["config"] == 1, "read once, for MinJobAge only: MaxArraySize was given"
    assert max(int(r.stdout_tail.strip()) for r in results) <= 2, "the throttle holds across the split arrays"
