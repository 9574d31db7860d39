"""Test harness: one attempt of a command agent driven without the campaign: start, run each
`Launch` for real on an executor, wake, until a `Submit` or a `GiveUp`.

The campaign does this through `loop/launch.py` (budget checks, the ledger); the agent tests here
drive the agent directly so each hostile behaviour is seen in isolation: each job runs
in a clean checkout of its tree, with `SWEEP_INDEX` in its environment, at most `max_parallel` jobs
of one launch at a time; its declared artifacts are named in its JobSpec and copied back by the
executor after it ends, before its checkout is removed; its metric is read like a benchmark's. No budget is
charged here: the loop charges a launch's worst case before it runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.agents.base import Action, Agent, AgentContext, GiveUp, Launch, LaunchJob, LaunchResult
from ratchet.compute.base import ArtifactSpec, JobResult, SandboxSpec, run_jobs
from ratchet.compute.local import LocalExecutor
from ratchet.core.plan import PlannedJob
from ratchet.targets.base import Task
from ratchet.targets.metric import parse_metric
from ratchet.targets.shell import ShellJobs


@dataclass(frozen=True)
class LaunchSettings:
    """How launched jobs run: where (`jobs_dir`, kernel-owned), the target's metric and seed
    variable, the sandbox, and the executor's own parallel limit."""

    jobs_dir: Path
    metric: str
    seed_env: str = "RATCHET_SEED"
    sandbox: SandboxSpec = SandboxSpec()
    max_parallel: int = 2


def run_launch(project: Any, launch: Launch, number: int, attempt: int, s: LaunchSettings) -> tuple[LaunchResult, ...]:
    """Run every job of `launch` (the `number`-th of the attempt); one LaunchResult per job, in
    order. project: the project's Git (checkouts of each job's tree)."""
    results: dict[int, LaunchResult] = {}
    groups: dict[str | None, list[int]] = {}
    for i, job in enumerate(launch.jobs):
        groups.setdefault(job.group or f"#{i}", []).append(i)
    for indices in groups.values():
        first = launch.jobs[indices[0]]
        parallel = max(1, min(first.max_parallel or s.max_parallel, s.max_parallel))
        ids = [f"a{attempt:04d}-launch{number}-j{i:03d}" for i in indices]
        specs = []
        for i, job_id in zip(indices, ids, strict=True):
            checkout = s.jobs_dir / "checkouts" / job_id
            shutil.rmtree(checkout, ignore_errors=True)
            project.materialize_tree(launch.jobs[i].tree, checkout)
            job = launch.jobs[i]
            collected = s.jobs_dir / "artifacts" / job_id
            shutil.rmtree(collected, ignore_errors=True)
            artifacts = {job_id: ArtifactSpec(job.artifacts, collected)} if job.artifacts else {}
            shell = ShellJobs(command=job.command, metric=s.metric, seed_env=s.seed_env, timeout_s=job.timeout_s,
                              kind="benchmark", sandbox=s.sandbox, cache=False, envs={job_id: dict(job.env)},
                              artifacts=artifacts)
            planned = PlannedJob(job_id, "experiment", job.tree or "", i, job.seed, 0, 0)  # type: ignore[arg-type]
            specs.append(shell.spec(Task(job_id, "experiment", planned.tree, (planned,)), checkout))
        with LocalExecutor(s.jobs_dir / "runs", parallel) as executor:
            ran = run_jobs(executor, specs)
        for i, spec, result in zip(indices, specs, ran, strict=True):
            results[i] = _result(launch.jobs[i], result, spec.artifacts.dest if spec.artifacts else None, s)
            shutil.rmtree(spec.workdir, ignore_errors=True)
    return tuple(results[i] for i in range(len(launch.jobs)))


def _result(job: LaunchJob, result: JobResult, collected: Path | None, s: LaunchSettings) -> LaunchResult:
    stdout = ""
    if result.stdout_path is not None and result.stdout_path.exists():
        stdout = result.stdout_path.read_text("utf-8", "replace")
    value = parse_metric(stdout, s.metric).value if result.state == "ok" else None
    return LaunchResult(name=job.name, state=result.state, exit_code=result.exit_code, value=value,
                        stdout_tail=result.stdout_tail, stderr_tail=result.stderr_tail,
                        artifacts_dir=str(collected) if collected else None, elapsed_s=result.elapsed_s)


def drive_attempt(agent: Agent, ctx: AgentContext, run: Callable[[Launch, int], Sequence[LaunchResult]],
                  max_launches: int = 8) -> Action:
    """Converse with `agent` for attempt `ctx`: `run(launch, number)` runs each Launch; returns
    the final Submit or GiveUp (a GiveUp when more than `max_launches` launches were asked)."""
    action = agent.start(ctx)
    number = 0
    while isinstance(action, Launch):
        number += 1
        if number > max_launches:
            return GiveUp(f"more than {max_launches} launches in one attempt", stops_campaign=False)
        action = agent.wake(ctx, tuple(run(action, number)))
    return action
