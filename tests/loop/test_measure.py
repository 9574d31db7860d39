"""The runner's checkouts on a real run: copied per job from one template per tree, each removed as
its job's result arrives, nothing left in the run's work directory after a batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.commands.run import open_project
from ratchet.loop.life import new_kernel, record_started
from ratchet.loop.measure import Runner
from ratchet.targets.factory import make_target


def test_each_checkout_is_gone_when_its_job_is_recorded_finished_and_nothing_is_left(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt)
        champion = git.tree_of("HEAD")
        record_started(kernel, salt, git.head_commit(), champion, target.reserve_units())
        candidate = git.overlay_tree(champion, {"params.toml": b"x = 3.0\n"})
        work = kernel.run.root / "work"
        checkout_left: dict[str, bool] = {}

        def record(payload: Any) -> None:
            if payload.kind == "job.finished":
                checkout_left[payload.job_id] = (work / payload.job_id).exists()
            kernel.record(payload)

        runner = Runner(git=kernel.git, executor=kernel.executor, target=target, work_dir=work, record=record)
        plan = target.plan("trial", 1, 1, champion, candidate, (3,))
        results = runner.measure_jobs(plan.jobs_for_look(0), attempt=1, stage="trial")
    finally:
        kernel.close()
    assert len(results) == 6 and not any(r.failed for r in results.values())
    by_variant = {r.variant: r.value for r in results.values() if r.unit == 0}
    assert by_variant["candidate"] > by_variant["champion"]  # each job measured its own tree (x = 3 is best)
    assert checkout_left == {job_id: False for job_id in results}
    assert list(work.iterdir()) == []  # no checkout, no template
