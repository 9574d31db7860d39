"""The agent's sandbox with the real bwrap: only its workspace and the leg's scratch directory (HOME,
TMPDIR, removed when the leg ends) are writable; any other write fails in the CLI's hands (EROFS or
a missing directory), is printed on its stderr (kept with the leg), and reaches nothing on the host."""

from __future__ import annotations

from pathlib import Path

from ratchet.agents.base import Submit

TOOL = ".ratchet-sys/ratchet-sys"


def test_writes_outside_the_workspace_fail_inside_the_sandbox_and_reach_nothing(agent_project, write_script):
    p = agent_project
    tries = {"beside": "../../MARKER", "tmp": "/tmp/MARKER", "root": "/MARKER",
             "project": str(p.root / "MARKER"), "project_dir": str(p.root.parent / "MARKER"), "home": "$HOME/x"}
    body = "".join(f'echo x > "{target}"; echo "{name} $?" >> model/status.txt\n' for name, target in tries.items())
    body += 'echo "home_dir $HOME" >> model/status.txt\n'
    body += f"{TOOL} submit --report 'tried writing outside my workspace'\n"
    p.set_agent("sh " + write_script(p.root, "escape.sh", body))
    agent = p.agent()
    action = agent.start(p.context())
    assert isinstance(action, Submit), action
    lines = p.git.read_blob(action.tree, "model/status.txt").decode().splitlines()
    status = dict(line.split(" ", 1) for line in lines)
    for name in ("beside", "tmp", "root", "project", "project_dir"):
        assert status[name] != "0", f"the write to {tries[name]} succeeded inside the sandbox: {lines}"
    # HOME is the leg's writable scratch directory (CLIs keep files there), gone once the leg ended.
    assert status["home"] == "0"
    assert not Path(status["home_dir"]).exists(), "the leg's scratch (its HOME) is removed after the leg"
    workspace = agent.attempt.workspace
    assert not (workspace.parent.parent / "MARKER").exists() and not (p.root / "MARKER").exists()
    assert not (p.root.parent / "MARKER").exists() and not Path("/MARKER").exists()
    (leg,) = p.recorder.legs()
    stderr = p.recorder.text(leg["stderr_blob"])
    assert "Read-only file system" in stderr, "the CLI saw why, and the leg's record keeps it"
