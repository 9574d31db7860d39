"""The kernel's reads of its own ledger: `state()` folds only when the ledger grew, `find`/`once`
see every event recorded before them, on a real run directory; and the agent executor it owns."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import set_contract

from ratchet.commands.run import open_project
from ratchet.compute.base import JobSpec, run_jobs
from ratchet.core.errors import RatchetError
from ratchet.core.payloads import AttemptGaveUp, AttemptStarted
from ratchet.core.state import fold
from ratchet.ledger.events import read_events
from ratchet.loop.kernel import AGENT_JOBS_DIR, agent_work_dir
from ratchet.loop.life import new_kernel, record_started


def test_state_is_folded_again_after_each_new_event_and_equals_a_fresh_fold(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), 0)
        first = kernel.state()
        assert kernel.state() is first  # nothing recorded in between: the same state
        kernel.record(AttemptStarted(attempt=1))
        second = kernel.state()
        assert second.last_attempt == 1 and first.last_attempt == 0
        assert second == fold(read_events(kernel.run.events))
    finally:
        kernel.close()


def test_find_and_once_see_events_recorded_after_an_earlier_find(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), 0)
        assert kernel.find("attempt.started", attempt=1) is None
        kernel.once(AttemptStarted(attempt=1), "attempt")
        kernel.once(AttemptStarted(attempt=1), "attempt")
        assert len(kernel.events_of("attempt.started")) == 1  # not recorded twice
        one = kernel.find("attempt.started", attempt=1)
        first = kernel.once(AttemptGaveUp(attempt=1, reason="first", stops_campaign=False), "attempt")
        again = kernel.once(AttemptGaveUp(attempt=1, reason="other", stops_campaign=True), "attempt")
        assert again == first and again.reason == "first"  # the recorded payload, not the one asked
        kernel.record(AttemptStarted(attempt=2))
        kernel.record(AttemptGaveUp(attempt=2, reason="second", stops_campaign=False))
        assert kernel.find("attempt.started", attempt=2).seq == one.seq + 2
        assert kernel.recorded(AttemptGaveUp, attempt=2).reason == "second"
        assert kernel.recorded(AttemptGaveUp, attempt=3) is None
        assert kernel.find("attempt.gave_up").payload.reason == "second"  # the last of its kind
        assert kernel.find("attempt.gave_up", attempt=1).payload.reason == "first"
        assert kernel.find("attempt.gave_up", attempt=3) is None
        kinds = [e.kind for e in read_events(kernel.run.events)]
        assert kinds.count("attempt.started") == 2
    finally:
        kernel.close()


ON_SLURM = pytest.param("slurm", marks=[pytest.mark.slurm, pytest.mark.skipif(
    shutil.which("sbatch") is None, reason="Slurm client commands not found (run `make slurm-up`)")])


@pytest.mark.parametrize("backend", ["local", ON_SLURM])
def test_the_kernel_owns_a_local_executor_for_agents_whatever_the_backend_and_closes_it(bench_repo: Path, backend):
    slurm = "[compute.slurm]\npoll_min_s = 0.2\npoll_max_s = 2.0\n" if backend == "slurm" else ""
    set_contract(bench_repo, append=f'[compute]\nbackend = "{backend}"\n{slurm}')
    loaded, _ = open_project(bench_repo)
    work = bench_repo.parent / "leg-work"
    work.mkdir()
    leg = JobSpec("a0001-leg01", ("/bin/sh", "-c", "echo leg"), work, {"PATH": "/usr/bin:/bin"}, 30.0)
    kernel, _ = new_kernel(loaded)
    try:
        assert kernel.executor.jobs_outlive_kernel == (backend == "slurm")
        assert not kernel.agent_executor.jobs_outlive_kernel and kernel.agent_executor.external_ids_are_pids
        (result,) = run_jobs(kernel.agent_executor, [leg])
        assert (result.state, result.stdout_tail) == ("ok", "leg\n")
        assert result.stdout_path == kernel.agent_dir / AGENT_JOBS_DIR / leg.job_id / "stdout"
        assert kernel.agent_dir == agent_work_dir(loaded.root, kernel.run.run_id)
    finally:
        kernel.close()
        shutil.rmtree(agent_work_dir(loaded.root, kernel.run.run_id), ignore_errors=True)
    with pytest.raises(RatchetError) as closed:
        kernel.agent_executor.submit([leg])
    assert closed.value.code == "compute.closed"
