"""The Launch leg of the agent protocol: an agent's own experiments run for real on the executor,
are charged to the budget, recorded in the ledger, and come back to the agent on wake."""

from __future__ import annotations

from pathlib import Path

from helpers import set_contract

from ratchet.agents.base import Agent, AgentContext, GiveUp, Launch, LaunchJob, LaunchResult, Submit
from ratchet.commands.run import open_project
from ratchet.core.state import fold
from ratchet.ledger.events import read_events
from ratchet.loop.campaign import Campaign, start_record
from ratchet.loop.kernel import new_kernel
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
    start_record(kernel, salt, git.head_commit(), git.tree_of("HEAD"), target.reserve_units())
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
