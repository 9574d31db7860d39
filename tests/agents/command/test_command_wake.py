"""What a command agent reads back: each launch's `why` and a timed-out job's advice in the wake
message, a checkpoint sleep that wakes at once, and the queue and launches the channel shows, with
real processes under bwrap."""

from __future__ import annotations

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
    assert "\ndoes it finish in time?\n" in slow, "the why, folded to one line, next to the launch's results"
    assert "slow[0] ran out of its 0.02 minutes" in slow and "`--minutes`" in slow, slow
    quick = message[message.index("## quick[0]"):]
    assert "ran out of" not in quick.split("## What next")[0]
