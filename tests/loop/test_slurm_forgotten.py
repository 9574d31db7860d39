"""A task that left no trace, on the real one-node Slurm cluster: its wrapper killed before writing
an outcome and the controller past MinJobAge when it is polled (polls far apart, the executor's
MinJobAge guard and early polls off). The runner runs it once more as a fresh task (same unit and
seed, a second `job.started`) and records only that run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import set_contract
from test_slurm_campaign import PROBLEM

from ratchet.commands.run import open_project
from ratchet.loop.life import new_kernel, record_started
from ratchet.loop.measure import Runner
from ratchet.targets.factory import make_target

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")]

FIRST_RUN_VANISHES = 'mkdir "{marks}/$RATCHET_JOB_ID" 2>/dev/null && kill -9 $PPID; exec python3 bench.py'
"""The job's first run kills its wrapper (the command runs under `/bin/sh -c`, a child of the
wrapper: no outcome file); a second run measures."""


def test_a_task_that_left_no_trace_runs_once_more_and_is_recorded_once(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    marks = tmp_path / "marks"
    marks.mkdir()
    command = json.dumps(FIRST_RUN_VANISHES.format(marks=marks))
    set_contract(root, replace={'command = "python3 bench.py"': f"command = {command}"},
                 append='[compute]\nbackend = "slurm"\nmax_parallel = 2\n[compute.slurm]\npoll_min_s = 120.0\n'
                        'poll_max_s = 120.0\n[sandbox]\nmode = "none"\n')
    loaded, git = open_project(root)
    kernel, salt = new_kernel(loaded)
    recorded: list[Any] = []
    try:
        kernel.executor.poll_below_min_job_age = kernel.executor.early_polls = False  # type: ignore[attr-defined]
        target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt)
        champion = git.tree_of("HEAD")
        record_started(kernel, salt, git.head_commit(), champion, target.reserve_units())
        candidate = git.overlay_tree(champion, {"params.toml": b"x = 3.0\n"})

        def record(payload: Any) -> None:
            recorded.append(payload)
            kernel.record(payload)

        runner = Runner(git=kernel.git, executor=kernel.executor, target=target, work_dir=kernel.run.root / "work",
                        record=record)
        plan = target.plan("trial", 1, 1, champion, candidate, (1,))
        results = runner.measure_jobs(plan.jobs_for_look(0), attempt=1, stage="trial")
    finally:
        kernel.close()
    assert sorted(p.name for p in marks.iterdir()) == sorted(results), "every job's first run vanished"
    assert not any(r.failed for r in results.values()), results
    started = [p for p in recorded if p.kind == "job.started"]
    finished = [p for p in recorded if p.kind == "job.finished"]
    assert sorted(p.job_id for p in started) == sorted(list(results) * 2), "each ran twice, both recorded started"
    assert len({p.external_id for p in started}) == 4, "the second run is a fresh task"
    assert sorted(p.job_id for p in finished) == sorted(results) and all(p.state == "ok" for p in finished)
