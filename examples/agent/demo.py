"""`make demo-agent`: a coding agent through Ratchet's channel, offline.

Copies `examples/agent/project` to a scratch git repository and runs one attempt of the command
agent whose "CLI" is the deterministic script `agent/bot.py` (no model, no network): it reads its
prompt, launches two experiments as an array, sleeps, reads their results, edits `model/smooth.py`
and submits with a report. The launches run for real (sandboxed jobs); then the candidate is
measured against the baseline with `ratchet compare`. Once `agent.kind = "command"` is wired into
the campaign, `ratchet run` on this project does all of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ratchet.agents.base import AgentContext, Submit
from ratchet.agents.command.drive import LaunchSettings, drive_attempt, run_launch
from ratchet.agents.command.factory import build_command_agent
from ratchet.compute.base import SandboxSpec
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.canonical import digest_bytes
from ratchet.core.contract_load import load_contract
from ratchet.workspace.git import Git

HERE = Path(__file__).resolve().parent
SCRATCH = HERE.parent.parent / "demo-run" / "agent"


def git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Ratchet demo", "-c", "user.email=demo@localhost", *args],
                   cwd=SCRATCH, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    shutil.copytree(HERE / "project", SCRATCH)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "agent example: baseline")
    loaded = load_contract(SCRATCH)
    contract, project = loaded.contract, Git(SCRATCH)
    blobs: dict[str, bytes] = {}
    events: list[tuple[str, dict]] = []

    def record_blob(data: bytes) -> str:
        blobs[digest_bytes(data)] = data
        return digest_bytes(data)

    def record(kind: str, data) -> None:
        events.append((kind, dict(data)))
        extra = f"{data.get('kind')} leg -> {data.get('outcome')}" if kind == "agent.leg" else \
            f"{data['use']}: taken {data['taken']}, ignored {data['ignored']}"
        print(f"[{kind}] attempt {data['attempt']} leg {data['leg']}: {extra}", flush=True)

    with tempfile.TemporaryDirectory(prefix="ratchet-agent-") as work:
        agent = build_command_agent(contract, SCRATCH, project, Path(work), record_blob, record)
        settings = LaunchSettings(Path(work) / "launches", metric=contract.target.metric or "score",
                                  sandbox=SandboxSpec(resolve_mode(contract.sandbox.mode), False))
        ctx = AgentContext(1, project.tree_of("HEAD"), contract.campaign.seed)
        action = drive_attempt(agent, ctx, lambda launch, n: run_launch(project, launch, n, 1, settings))
    wakes = [blobs[d["message_blob"]].decode() for k, d in events if k == "agent.leg" and d["kind"] == "wake"]
    if wakes:
        print("\n--- the wake message the agent read ---\n" + wakes[0])
    if not isinstance(action, Submit) or action.tree is None:
        print(f"the attempt ended without a candidate: {action}", file=sys.stderr)
        return 1
    print(f"--- the agent's report ---\n{action.report}")
    print("--- the change ---\n" + project.diff_text(ctx.champion_tree, action.tree))
    project.update_branch("agent-candidate", project.commit_tree(action.tree, [project.head_commit()],
                                                                   action.summary), None)
    ratchet = Path(sys.executable).parent / "ratchet"
    proc = subprocess.run([str(ratchet), "compare", "main", "agent-candidate", "--json"], cwd=SCRATCH,
                          capture_output=True, text=True, check=False)
    result = json.loads(proc.stdout.strip().splitlines()[-1]).get("result") or {}
    print(f"ratchet compare main agent-candidate: {result.get('verdict')} ({result.get('reason')}), "
          f"estimate {result.get('estimate')}, p = {result.get('p_value')}, units {result.get('units')}")
    return 0 if result.get("verdict") == "accepted" else 1


if __name__ == "__main__":
    sys.exit(main())
