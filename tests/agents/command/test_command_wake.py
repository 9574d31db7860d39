"""What a command agent reads back: each launch's `why` and a timed-out job's advice in the wake
message, a checkpoint sleep that wakes at once, and the queue and launches the channel shows, with
real processes under bwrap."""

from __future__ import annotations

import json

from ratchet.agents.base import Submit

TOOL = ".ratchet-sys/ratchet-sys"


def _wake_messages(p) -> list[str]:
    return [p.recorder.text(leg["message_blob"]) for leg in p.recorder.legs() if leg["kind"] == "wake"]


def test_a_wake_echoes_each_launchs_why_and_tells_a_timed_out_job_to_declare_more_minutes(agent_project,
                                                                                          write_script):
    p = agent_project
    body = ("if [ -f .ratchet-sys/wake.md ]; then\n"
            f"  {TOOL} submit --report 'read the results'\n"
            "else\n"
            f"  {TOOL} launch --name slow --minutes 0.02 --why 'does it\n  finish   in time?' -- sleep 10\n"
            f"  {TOOL} launch --name quick --minutes 1 -- true\n"
            f"  {TOOL} sleep\n"
            "fi\n")
    p.set_agent("sh " + write_script(p.root, "slow.sh", body))
    action = p.attempt()
    assert isinstance(action, Submit), action
    (message,) = _wake_messages(p)
    slow = message[message.index("## slow[0]"):message.index("## quick[0]")]
    assert slow.startswith("## slow[0]: timeout"), slow
    assert "<<<DATA why slow " in slow and "\ndoes it finish in time?\n" in slow, \
        "the why, folded to one line, next to the launch's results"
    assert "slow[0] ran out of its 0.02 minutes" in slow and "`--minutes`" in slow, slow
    quick = message[message.index("## quick[0]"):]
    assert "ran out of" not in quick.split("## What next")[0]


CHECKPOINTER = ("if [ -f .ratchet-sys/wake.md ]; then\n"
                f"  {TOOL} submit --report 'checked in once'\n"
                "else\n"
                f"  {TOOL} sleep --note 'halfway: try window 9 next'\n"
                "fi\n")


def test_a_sleep_without_launches_is_a_checkpoint_woken_at_once_with_its_note(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "checkpoint.sh", CHECKPOINTER))
    agent = p.agent()
    ran: list[int] = []
    from command_drive import drive_attempt

    def run(launch, number):
        ran.append(len(launch.jobs))
        return ()

    action = drive_attempt(agent, p.context(), run)
    assert isinstance(action, Submit), action
    assert ran == [0], "the checkpoint came back as a Launch with no jobs"
    legs = p.recorder.legs()
    assert [(leg["kind"], leg["outcome"]) for leg in legs] == [("start", "checkpoint"), ("wake", "submit")]
    (message,) = _wake_messages(p)
    assert "a checkpoint" in message and "halfway: try window 9 next" in message
    assert "reminder" not in message, "a checkpoint is not a leg without a request"
    assert agent.attempt.sleeps == 1 and agent.attempt.nudges == 0


def test_a_restarted_kernel_after_a_checkpoint_wakes_the_agent_at_once(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "checkpoint.sh", CHECKPOINTER))
    first = p.agent()
    action = first.start(p.context())
    assert action.jobs == () and action.note == "halfway: try window 9 next"
    second = p.agent()  # the kernel died after the leg was recorded
    assert second.resume(p.context(), p.recorder.leg_payloads(), lambda digest: p.recorder.blobs[digest])
    assert second.attempt.sleeps == 1
    assert isinstance(second.wake(p.context(), ()), Submit)
    assert "halfway: try window 9 next" in _wake_messages(p)[0]


def test_the_queue_shows_this_attempts_jobs_and_is_refreshed_while_a_leg_runs(agent_project, write_script):
    p = agent_project
    body = ("if [ -f .ratchet-sys/wake.md ]; then\n"
            "  cp .ratchet-sys/state/queue.json model/queue_at_wake.json\n"
            "  cp .ratchet-sys/state/launches.json model/launches_at_wake.json\n"
            "  rm .ratchet-sys/state/queue.json\n"
            "  sleep 4\n"  # the watcher writes it again within QUEUE_REFRESH_S
            "  cp .ratchet-sys/state/queue.json model/queue_mid_leg.json\n"
            f"  {TOOL} submit --report 'read the queue'\n"
            "else\n"
            f"  {TOOL} launch --name ok --array 2 --minutes 1 --why 'two\n  passes' -- true\n"
            f"  {TOOL} launch --name bad --minutes 1 -- exit 3\n"
            f"  {TOOL} sleep\n"
            "fi\n")
    p.set_agent("sh " + write_script(p.root, "queue.sh", body))
    action = p.attempt()
    assert isinstance(action, Submit), action

    def read(name: str):
        return json.loads(p.git.read_blob(action.tree, f"model/{name}.json"))

    queue = read("queue_at_wake")
    assert [(j["launch"], j["index"], j["why"], j["state"]) for j in queue] == [
        ("ok", 0, "two passes", "succeeded"), ("ok", 1, "two passes", "succeeded"), ("bad", 0, "", "failed")]
    assert queue[0]["command"] == "true" and queue[2]["value"] is None
    assert read("queue_mid_leg") == queue, "the watcher rewrote state/queue.json while the leg ran"
    assert [(r["name"], r["jobs"], r["states"]) for r in read("launches_at_wake")] == [
        ("ok", 2, {"succeeded": 2}), ("bad", 1, {"failed": 1})]
