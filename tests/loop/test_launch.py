"""The Launch leg of the agent protocol: an agent's own experiments run for real on the executor,
are charged to the budget, recorded in the ledger, and come back to the agent on wake."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import set_contract

from ratchet.agents.base import (
    MAX_LAUNCHES_PER_ATTEMPT,
    Agent,
    AgentContext,
    GiveUp,
    Launch,
    LaunchJob,
    LaunchResult,
    Submit,
)
from ratchet.commands.run import open_project
from ratchet.compute.base import TAIL_BYTES
from ratchet.core.state import fold, parse_ts
from ratchet.ledger.events import read_events
from ratchet.loop.campaign import Campaign
from ratchet.loop.launch import run_launch
from ratchet.loop.life import new_kernel, record_started
from ratchet.present.progress import LogUI
from ratchet.targets.factory import make_target


class ScriptedAgent(Agent):
    """Test agent: launches two experiments, reads them on wake, then submits x = 3 once."""

    def __init__(self, git):
        self.git = git
        self.seen: list[tuple[LaunchResult, ...]] = []

    def start(self, ctx: AgentContext):
        if ctx.attempt > 1:
            return GiveUp("one attempt is enough")
        return Launch(jobs=(LaunchJob("probe", "python3 bench.py", timeout_s=30, seed=7),
                            LaunchJob("broken", "echo partial; exit 3", timeout_s=30)),
                      note="probe the baseline before proposing")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]):
        self.seen.append(results)
        tree = self.git.overlay_tree(ctx.champion_tree, {"params.toml": b"x = 3.0\n"})
        probe = results[0]
        return Submit(tree=tree, report=f"The probe scored {probe.value}; moving x to 3.", summary="x=3")


def test_launched_experiments_run_for_real_and_are_charged(bench_repo: Path):
    set_contract(bench_repo, append="[gate]\nunits = [6, 12]\nholdout_units = 6\n")
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt)
    record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), target.reserve_units())
    agent = ScriptedAgent(git)
    try:
        reason, _ = Campaign(kernel, agent, LogUI(), target).run()
    finally:
        kernel.close()
    assert reason == "agent_stopped"
    (results,) = agent.seen
    probe, broken = results
    assert probe.state == "ok" and probe.value is not None and probe.value < -5  # x = 0: score about -9
    assert broken.state == "failed" and broken.exit_code == 3 and "partial" in broken.stdout_tail
    evs = read_events(kernel.run.events)
    launched = [e for e in evs if e.kind == "agent.launched"]
    assert len(launched) == 1 and len(launched[0].data["jobs"]) == 2
    launch_jobs = [e for e in evs if e.kind == "job.finished" and e.data["stage"] == "launch"]
    assert {e.data["job_id"] for e in launch_jobs} == set(launched[0].data["jobs"])
    state = fold(evs)
    trial_units = sum(e.data["units_charged"] for e in evs if e.kind == "job.finished" and e.data["stage"] != "launch")
    assert state.budget_used.evaluations == trial_units + 2  # the two experiments are charged
    assert state.promotions == 1


LONG_OUTPUT = "python3 -c \"import sys; sys.stdout.write('x' * 20000 + 'END\\n'); sys.stderr.write('warned\\n')\""


def test_launch_results_carry_the_jobs_tails_and_artifacts_also_when_a_resume_replays_them(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), 0)
        ctx = AgentContext(1, git.tree_of("HEAD"), 0)
        action = Launch(jobs=(LaunchJob("long", LONG_OUTPUT + "; echo kept > out.txt; exit 2", timeout_s=30,
                                        artifacts=("out.txt", "missing.txt")),
                              LaunchJob("plain", "echo fine", timeout_s=30)))
        long, plain = run_launch(kernel, ctx, 1, action)
        again = run_launch(kernel, ctx, 1, action)  # a resume replaying the launch: every job is reused
    finally:
        kernel.close()
    assert (long.state, long.exit_code, plain.state, plain.exit_code) == ("failed", 2, "no_metric", 0)
    assert long.stdout_tail.endswith("xxEND\n") and len(long.stdout_tail.encode()) == TAIL_BYTES  # the JobResult's
    assert long.stderr_tail == "warned\n" and plain.stdout_tail == "fine\n"
    assert long.artifacts_dir is not None and plain.artifacts_dir is None
    collected = Path(long.artifacts_dir)
    assert collected == kernel.run.root / "artifacts" / "a0001-launch1-j00"
    assert (collected / "files" / "out.txt").read_text() == "kept\n"
    assert json.loads((collected / "notes.json").read_text()) == ["missing.txt: not found after the job ended"]
    assert again == (long, plain)
    finished = [e for e in read_events(kernel.run.events) if e.kind == "job.finished"]
    assert len(finished) == 2, "the replay ran nothing again"


def _intervals(evs, jobs) -> dict[str, tuple[float, float]]:
    """job_id -> (start, end) in seconds since the epoch, from each recorded `job.finished`: its
    timestamp (the end) less its recorded elapsed seconds."""
    out = {}
    for e in evs:
        if e.kind == "job.finished" and e.data["job_id"] in jobs:
            end = parse_ts(e.ts).timestamp()
            out[e.data["job_id"]] = (end - e.data["elapsed_s"], end)
    return out


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])  # an end sorts before a start
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


class ThreeLaunchesAgent(Agent):
    """Test agent: one sleep with three launches, as the command agent asks them: `wide` (an
    array of 4, at most 2 at once), `narrow` (an array of 2, one at a time) and `single`."""

    def __init__(self):
        self.seen: list[tuple[LaunchResult, ...]] = []

    def start(self, ctx: AgentContext):
        # wide[1] sleeps 3 s, every other job 0.5 s: a sliding window runs wide[2] and wide[3] beside it.
        jobs = [LaunchJob(f"{name}[{i}]", 'sleep "$NAP"', timeout_s=30, seed=i, group=name, max_parallel=cap,
                          env={"SWEEP_INDEX": str(i), "NAP": "3" if (name, i) == ("wide", 1) else "0.5"})
                for name, size, cap in (("wide", 4, 2), ("narrow", 2, 1), ("single", 1, 1)) for i in range(size)]
        return Launch(jobs=tuple(jobs), note="three launches in one sleep")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]):
        self.seen.append(results)
        return GiveUp("seen enough")


def test_launches_of_one_sleep_run_together_each_group_a_sliding_window_of_its_concurrency(bench_repo: Path):
    set_contract(bench_repo, append="[compute]\nmax_parallel = 4\n")
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt)
    record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), target.reserve_units())
    agent = ThreeLaunchesAgent()
    try:
        Campaign(kernel, agent, LogUI(), target).run()
    finally:
        kernel.close()
    (results,) = agent.seen
    assert [r.state for r in results] == ["no_metric"] * 7
    evs = read_events(kernel.run.events)
    launched = next(e.data for e in evs if e.kind == "agent.launched")
    spans = _intervals(evs, launched["jobs"])
    by_group: dict[str, list[tuple[float, float]]] = {}
    for job_id, job in zip(launched["jobs"], ThreeLaunchesAgent().start(AgentContext(1, "", 0)).jobs, strict=True):
        by_group.setdefault(job.group or "", []).append(spans[job_id])
    assert _most_at_once(list(spans.values())) <= 4, "compute.max_parallel stays the overall cap"
    assert _most_at_once(by_group["wide"]) == 2, by_group["wide"]
    assert _most_at_once(by_group["narrow"]) == 1, by_group["narrow"]
    first_wide, first_narrow = min(by_group["wide"]), min(by_group["narrow"])
    assert first_narrow[0] < first_wide[1] and first_wide[0] < first_narrow[1], \
        "jobs of different launches ran at the same time"
    # A sliding window, not chunks of 2: wide[2] and wide[3] start (and end) while wide[1] still runs.
    wide = by_group["wide"]
    assert wide[3][1] < wide[1][1], wide


class CheckpointingAgent(Agent):
    """Test agent: sleeps with nothing launched, again and again."""

    def __init__(self):
        self.wakes: list[tuple[LaunchResult, ...]] = []

    def start(self, ctx: AgentContext):
        return Launch(jobs=(), note="nothing to run") if ctx.attempt == 1 else GiveUp("done")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]):
        self.wakes.append(results)
        return Launch(jobs=(), note="nothing to run")


def test_a_launch_without_jobs_is_woken_at_once_unrecorded_and_bounded(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, loaded.root, kernel.sandbox, salt)
    record_started(kernel, salt, git.head_commit(), git.tree_of("HEAD"), target.reserve_units())
    agent = CheckpointingAgent()
    try:
        Campaign(kernel, agent, LogUI(), target).run()
    finally:
        kernel.close()
    assert agent.wakes == [()] * MAX_LAUNCHES_PER_ATTEMPT, "woken with no results, up to the bound"
    evs = read_events(kernel.run.events)
    assert not [e for e in evs if e.kind == "agent.launched" or e.data.get("stage") == "launch"]
    gave_up = next(e.data for e in evs if e.kind == "attempt.gave_up")
    assert gave_up["reason"] == f"more than {MAX_LAUNCHES_PER_ATTEMPT} checkpoints in one attempt"
