"""An agent's own experiments (`Launch`): run on the executor in clean checkouts, charged to the
budget like any job, recorded in the ledger (`agent.launched` with the launch in full as a blob,
then job events), and handed back to the agent on `wake` as data.

A launch runs only if its worst case fits the budget after reserving one trial's worst case and the
final measurement (`core.budget.launch_refusal`); otherwise no job runs and every result says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from ratchet.agents.base import MAX_JOBS_PER_LAUNCH, AgentContext, Launch, LaunchJob, LaunchResult
from ratchet.core.payloads import AgentLaunched
from ratchet.core.plan import PlannedJob
from ratchet.loop.kernel import Kernel
from ratchet.loop.measure import Progress
from ratchet.targets.base import Task
from ratchet.targets.benchmark import launch_jobs_target

MAX_LAUNCH_TIMEOUT_S = 240 * 60.0
"""A launched job runs at most 240 minutes (DESIGN.md §8), whatever the agent asks."""

TAIL_CHARS = 4000
"""Characters of a launched job's stdout and stderr tails handed back to the agent."""

ARTIFACTS_DIR = "artifacts"
"""Under the run directory: `artifacts/<job_id>/`, the files a launched job declared, copied back."""


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
    job, in order. Jobs of one `group` run at most `max_parallel` at a time; a job's declared
    artifacts are copied to `<run>/artifacts/<job_id>/` before its checkout is removed."""
    jobs = launch_jobs(ctx.attempt, launch, action, ctx.champion_tree)
    asked = action.jobs[: len(jobs)]
    blob = kernel.blobs.put_json(launch_to_json(replace(action, jobs=tuple(asked))))
    kernel.once(AgentLaunched(attempt=ctx.attempt, launch=launch, jobs=[j.job_id for j in jobs],
                              note=action.note[:2000], launch_blob=blob), "attempt", "launch")
    by_id = {p.job_id: a for p, a in zip(jobs, asked, strict=True)}
    commands = {job_id: (a.command, min(a.timeout_s, MAX_LAUNCH_TIMEOUT_S)) for job_id, a in by_id.items()}
    envs = {job_id: dict(a.env) for job_id, a in by_id.items() if a.env}
    target = launch_jobs_target(kernel.contract, kernel.sandbox, commands, envs)
    collected: dict[str, Path] = {}

    def collect(task: Task, checkout: Path) -> None:
        wanted = by_id[task.job_id].artifacts
        if wanted:
            from ratchet.agents.command.artifacts import collect_artifacts

            dest = kernel.run.root / ARTIFACTS_DIR / task.job_id
            collect_artifacts(checkout, wanted, dest)
            collected[task.job_id] = dest

    runner = kernel.runner(target, progress)
    runner.after = collect
    measured = {}
    for batch in _batches(jobs, asked):
        measured.update(runner.measure(batch, attempt=ctx.attempt, stage="launch"))
    results = []
    for planned, job in zip(jobs, asked, strict=True):
        m = measured[planned.job_id]
        out_dir = kernel.run.jobs / planned.job_id
        record = runner.done.get(planned.job_id)
        dest = collected.get(planned.job_id) or kernel.run.root / ARTIFACTS_DIR / planned.job_id
        results.append(LaunchResult(
            name=job.name, state=m.state, exit_code=_exit_code(out_dir), value=m.value,
            stdout_tail=_tail(out_dir / "stdout"), stderr_tail=_tail(out_dir / "stderr"),
            artifacts_dir=str(dest) if job.artifacts and dest.is_dir() else None,
            elapsed_s=record.elapsed_s if record is not None else None,
        ))
    return tuple(results)


def _batches(jobs: Sequence[PlannedJob], asked: Sequence[LaunchJob]) -> list[list[PlannedJob]]:
    """Jobs in batches that respect each group's `max_parallel`: a capped group runs in chunks of
    its cap, one after the other; all uncapped jobs run together."""
    free: list[PlannedJob] = []
    capped: dict[str, list[tuple[PlannedJob, int]]] = {}
    for planned, job in zip(jobs, asked, strict=True):
        if job.max_parallel:
            capped.setdefault(job.group or planned.job_id, []).append((planned, job.max_parallel))
        else:
            free.append(planned)
    out = [free] if free else []
    for group in capped.values():
        cap = max(1, group[0][1])
        out += [[p for p, _ in group[i: i + cap]] for i in range(0, len(group), cap)]
    return out


def _tail(path: Path, limit: int = TAIL_CHARS) -> str:
    """The last `limit` bytes of a job's output file (seeking: the file may hold megabytes)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _exit_code(job_dir: Path) -> int | None:
    try:
        return json.loads((job_dir / "result.json").read_text()).get("exit_code")
    except (OSError, ValueError):
        return None
