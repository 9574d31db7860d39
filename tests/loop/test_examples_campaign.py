"""Examples mode end to end: val trials, the test split at the end, what agents can see, the val
budget, a dataset changed under a resume, and `ratchet check`'s warnings."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ratchet
from repo_fixture import EXAMPLES_CONTRACT, make_examples_repo

from ratchet.agents.base import Agent, AgentContext, Launch, LaunchJob, LaunchResult, Submit
from ratchet.commands.run import load_examples_data, open_project
from ratchet.loop.agents import AgentLink, make_agent
from ratchet.loop.campaign import Campaign
from ratchet.loop.life import new_kernel, record_started
from ratchet.present.progress import LogUI
from ratchet.targets.factory import make_target

CONTRACT = EXAMPLES_CONTRACT

UPPER = "import sys\nprint(sys.stdin.read().upper())\n"


def test_val_trials_then_test_once(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    r = out["result"]
    assert r["promotions"] == 1 and r["holdout"]["units"] == 27  # 30% of 90 examples
    assert r["holdout"]["estimate"] == pytest.approx(1.0)  # baseline passes nothing, UPPER everything
    report = Path(r["report"]).read_text()
    assert "Pass rates of the final champion" in report and "| test | 27 | 27 |" in report
    assert "gate.confirm does not apply" in report


def test_val_budget_stops_the_run(tmp_path: Path):
    contract = CONTRACT.replace("max_attempts = 3", "max_attempts = 3\nmax_val_trials = 1")
    root = make_examples_repo(tmp_path / "r", contract)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    assert out["result"]["stop_reason"] == "budget_exhausted" and out["result"]["budget"] == "max_val_trials"
    code, status, _ = ratchet("status", "--dir", str(root))
    assert len(status["result"]["attempts"]) == 1


def test_a_changed_dataset_refuses_the_resume(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r")
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env={**os.environ, "RATCHET_TEST_CRASH_AT": "after:attempt.started:1"}, timeout=120)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    data = load_examples_data(open_project(root)[0])
    victim = data.split.val[0]
    path = root / "data" / "examples.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["input"] == victim.input:
            row["expected_output"] = "CHANGED"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = ratchet("run", str(root), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "examples.changed"
    assert "val: 1 example changed" in out["error"]["message"]


def test_unreachable_target_and_small_splits_are_warned(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r", CONTRACT.replace("units = [10, 27]", "units = [10, 27]\ntarget = 0.99"))
    code, out, _ = ratchet("check", str(root))
    assert code == 0
    warnings = " ".join(out["result"]["warnings"])
    assert "0.99" in warnings and "val" in warnings


class CopyEverythingAgent(Agent):
    """Test agent that tries to leak: reads the examples file through its tree view, launches an
    experiment that dumps everything a job can see, and writes all it learned into its candidate."""

    def __init__(self, trees):
        self.trees = trees
        self.learned: list[str] = []

    def start(self, ctx: AgentContext):
        blob = self.trees.read_blob(ctx.champion_tree, "data/examples.jsonl")
        self.learned.append(repr(blob))
        dump = ("ls -laR . 2>&1 | head -200; cat data/examples.jsonl 2>&1; "
                "find / -name 'examples.jsonl' -not -path '/proc/*' 2>/dev/null | head; env")
        return Launch(jobs=(LaunchJob("dump", dump, timeout_s=60),), note="look around")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]):
        self.learned += [r.stdout_tail + r.stderr_tail for r in results]
        notes = "\n".join("# " + line for text in self.learned for line in text.splitlines())
        tree = self.trees.overlay_tree(ctx.champion_tree, {"solution.py": (UPPER + notes + "\n").encode()})
        return Submit(tree=tree, report="copied everything I could read", summary="leaky")


def test_no_val_or_test_example_reaches_an_agent_or_a_job_checkout(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r")
    loaded, git_ = open_project(root)
    data = load_examples_data(loaded)
    view = make_agent(loaded.contract, root, git_, AgentLink()).trees  # the same tree view every agent gets
    agent = CopyEverythingAgent(view)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, root, kernel.sandbox, salt, data)
    record_started(kernel, salt, git_.head_commit(), git_.tree_of("HEAD"), target.reserve_units())
    try:
        Campaign(kernel, agent, LogUI(), target).run()
    finally:
        kernel.close()
    seen = "\n".join(agent.learned)
    assert "examples.jsonl" in seen or "None" in seen  # the agent really looked
    for example in data.split.val + data.split.test:
        assert example.input not in seen, f"val/test input {example.input!r} reached the agent"
        assert example.expected_output not in seen, f"expected output {example.expected_output!r} reached the agent"
    # No job's checkout ever held the examples file: the dump job could not cat it, and under the
    # sandbox no path to it exists anywhere in the job's filesystem.
    assert "cat: data/examples.jsonl: No such file or directory" in seen
    if kernel.sandbox.mode == "bwrap":
        found = [line for line in seen.splitlines() if line.startswith("/") and line.endswith("examples.jsonl")]
        assert found == [], f"a sandboxed job could see {found}"
