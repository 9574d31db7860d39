"""An agent's own experiments (`Launch`): run on the executor in clean checkouts, charged to the
budget like any job, recorded in the ledger (`agent.launched`, then job events), and handed back to
the agent on `wake` as data.
"""

from __future__ import annotations

from ratchet.agents.base import MAX_JOBS_PER_LAUNCH, AgentContext, Launch, LaunchResult
from ratchet.core.plan import PlannedJob
from ratchet.loop.kernel import Kernel
from ratchet.targets.benchmark import launch_jobs_target

MAX_LAUNCH_TIMEOUT_S = 240 * 60.0
"""A launched job runs at most 240 minutes (DESIGN.md §8), whatever the agent asks."""


def launch_jobs(attempt: int, launch: int, action: Launch, champion_tree: str) -> list[PlannedJob]:
    """The planned jobs of one launch (at most MAX_JOBS_PER_LAUNCH; ids `a0001-launch1-j00`)."""
    jobs = []
    for i, job in enumerate(action.jobs[:MAX_JOBS_PER_LAUNCH]):
        jobs.append(PlannedJob(job_id=f"a{attempt:04d}-launch{launch}-j{i:02d}", variant="experiment",  # type: ignore[arg-type]
                               tree=job.tree or champion_tree, unit=i, seed=job.seed, order=0, look=0))
    return jobs


def run_launch(kernel: Kernel, ctx: AgentContext, launch: int, action: Launch) -> tuple[LaunchResult, ...]:
    """Run one `Launch` of attempt `ctx.attempt`; returns one LaunchResult per job, in order."""
    jobs = launch_jobs(ctx.attempt, launch, action, ctx.champion_tree)
    kernel.once("agent.launched", {"attempt": ctx.attempt, "launch": launch, "jobs": [j.job_id for j in jobs],
                                   "note": action.note[:2000]}, "attempt", "launch")
    commands = {planned.job_id: (asked.command, min(asked.timeout_s, MAX_LAUNCH_TIMEOUT_S))
                for planned, asked in zip(jobs, action.jobs, strict=False)}
    target = launch_jobs_target(kernel.contract, kernel.sandbox, commands)
    measured_by_id = kernel.runner(target).measure(jobs, attempt=ctx.attempt, stage="launch")
    results = []
    for planned, asked in zip(jobs, action.jobs, strict=False):
        measured = measured_by_id[planned.job_id]
        out_dir = kernel.run.jobs / planned.job_id
        results.append(LaunchResult(
            name=asked.name, state=measured.state, exit_code=_exit_code(out_dir), value=measured.value,
            stdout_tail=_tail(out_dir / "stdout"), stderr_tail=_tail(out_dir / "stderr"),
        ))
    return tuple(results)


def _tail(path, limit: int = 4000) -> str:
    """The last `limit` bytes of a job's output file (seeking: the file may hold megabytes)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _exit_code(job_dir) -> int | None:
    import json

    try:
        return json.loads((job_dir / "result.json").read_text()).get("exit_code")
    except (OSError, ValueError):
        return None
