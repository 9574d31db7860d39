"""An agent's own experiments (`Launch`): run on the executor in clean checkouts, charged to the
budget like any job, recorded in the ledger (`agent.launched` with the launch in full as a blob,
then job events), and handed back to the agent on `wake` as data.

A launch runs only if its worst case fits the budget after reserving one trial's worst case and the
final measurement (`core.budget.launch_refusal`); otherwise no job runs and every result says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace

from ratchet.agents.base import MAX_JOBS_PER_LAUNCH, MAX_LAUNCH_TIMEOUT_S, AgentContext, Launch, LaunchJob, LaunchResult
from ratchet.compute.base import ArtifactSpec
from ratchet.compute.outcome import read_result
from ratchet.core.payloads import AgentLaunched
from ratchet.core.plan import PlannedJob
from ratchet.loop.kernel import Kernel
from ratchet.loop.measure import Progress
from ratchet.targets.benchmark import launch_jobs_target


def launch_jobs(attempt: int, launch: int, action: Launch, champion_tree: str) -> list[PlannedJob]:
    """The planned jobs of one launch (at most MAX_JOBS_PER_LAUNCH; ids `a0001-launch1-j00`)."""
    return [PlannedJob(job_id=f"a{attempt:04d}-launch{launch}-j{i:02d}", variant="experiment",
                       tree=job.tree or champion_tree, unit=i, seed=job.seed, order=0, look=0)
            for i, job in enumerate(action.jobs[:MAX_JOBS_PER_LAUNCH])]


def launch_to_json(action: Launch) -> dict:
    """The launch in full (what a resume replays)."""
    return {"note": action.note, "jobs": [{**asdict(j), "env": dict(j.env), "artifacts": list(j.artifacts)}
                                          for j in action.jobs]}


def launch_from_json(data: Mapping) -> Launch:
    """Inverse of launch_to_json."""
    jobs = tuple(LaunchJob(**{**j, "env": dict(j.get("env") or {}), "artifacts": tuple(j.get("artifacts") or ())})
                 for j in data["jobs"])
    return Launch(jobs=jobs, note=data.get("note", ""))


def refused_results(action: Launch, why: str) -> tuple[LaunchResult, ...]:
    """Results of a launch the kernel would not run: no job ran, each says why."""
    return tuple(LaunchResult(name=j.name, state="refused", exit_code=None, value=None, stdout_tail="",
                              stderr_tail=f"not run: {why}") for j in action.jobs)


def run_launch(kernel: Kernel, ctx: AgentContext, launch: int, action: Launch,
               progress: Progress | None = None) -> tuple[LaunchResult, ...]:
    """Run one `Launch` of attempt `ctx.attempt` (its `launch`-th); returns one LaunchResult per
    job, in order, its state and value as measured and its exit code and tails from the job's
    JobResult. Every job goes to the executor at once, within its `compute.max_parallel`; jobs of
    one `group` run at most `max_parallel` at a time, the next starting as one ends
    (`JobSpec.group_max_parallel`). The executor collects a job's declared artifacts into
    `<run>/artifacts/<job_id>/` before its checkout is removed."""
    jobs = launch_jobs(ctx.attempt, launch, action, ctx.champion_tree)
    asked = action.jobs[: len(jobs)]
    blob = kernel.blobs.put_json(launch_to_json(replace(action, jobs=tuple(asked))))
    kernel.once(AgentLaunched(attempt=ctx.attempt, launch=launch, jobs=[j.job_id for j in jobs],
                              note=action.note[:2000], launch_blob=blob), "attempt", "launch")
    by_id = {p.job_id: a for p, a in zip(jobs, asked, strict=True)}
    commands = {job_id: (a.command, min(a.timeout_s, MAX_LAUNCH_TIMEOUT_S)) for job_id, a in by_id.items()}
    envs = {job_id: dict(a.env) for job_id, a in by_id.items() if a.env}
    artifacts = {job_id: ArtifactSpec(tuple(a.artifacts), kernel.run.artifacts / job_id)
                 for job_id, a in by_id.items() if a.artifacts}
    groups = {job_id: (a.group or job_id, a.max_parallel) for job_id, a in by_id.items() if a.max_parallel}
    target = launch_jobs_target(kernel.contract, kernel.sandbox, commands, envs, artifacts, groups)
    runner = kernel.runner(target, progress)
    measured = runner.measure_jobs(jobs, attempt=ctx.attempt, stage="launch")
    results = []
    for planned, job in zip(jobs, asked, strict=True):
        m = measured[planned.job_id]
        # A resume replaying the launch reuses its jobs from the ledger: their JobResults are those
        # the executor stored when they ended.
        ended = runner.results.get(planned.job_id) or read_result(kernel.run.job_files(planned.job_id).result)
        record = runner.done.get(planned.job_id)
        wanted = artifacts.get(planned.job_id)
        results.append(LaunchResult(
            name=job.name, state=m.state, exit_code=ended.exit_code if ended else None, value=m.value,
            stdout_tail=ended.stdout_tail if ended else "", stderr_tail=ended.stderr_tail if ended else "",
            artifacts_dir=str(wanted.dest) if wanted is not None and wanted.dest.is_dir() else None,
            elapsed_s=record.elapsed_s if record is not None else None,
        ))
    return tuple(results)
