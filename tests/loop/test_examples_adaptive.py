"""The examples gate against agents that learn from what they see (docs/gate.md, "Examples targets
and adaptive agents"), on real campaigns: a candidate of an agent that reads history is measured on
dev before its trial and the files agent's is not; the history shows dev pass rates and of val only
promoted / not_promoted; the trials between two promotions share a val block and the next promotion
moves to a disjoint one, also across a resume; a run with every block used stops `val_exhausted`;
`ratchet verify` re-derives the blocks and catches a trial planned on a used one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import events, ratchet, rechain
from repo_fixture import EXAMPLES_CONTRACT, git, make_examples_repo

from ratchet.agents.base import Action, Agent, AgentContext, GiveUp, LaunchResult, PastAttempt, Submit
from ratchet.commands.run import load_examples_data, open_project
from ratchet.core.canonical import canonical_bytes, digest_bytes
from ratchet.loop.agents import AgentLink, make_agent
from ratchet.loop.campaign import Campaign
from ratchet.loop.history import champion_dev_mean, dev_mean
from ratchet.loop.life import new_kernel, record_started
from ratchet.present.progress import LogUI
from ratchet.targets.checks import CHECKS_VERSION
from ratchet.targets.factory import make_target

pytestmark = pytest.mark.slow

UPPER = "import sys\nprint(sys.stdin.read().upper())\n"
CRASH = "raise SystemExit(3)\n"
HALF = ("import sys\ntext = sys.stdin.read()\n"
        "print(text.upper() if int(text[4:7]) % 2 == 0 else text)\n")  # upper-cases the even words only


def verify(root: Path, run_id: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    return code, out


def codes(out: dict[str, Any]) -> set[str]:
    return {f["code"] for f in out["result"]["findings"]}


class LearningAgent(Agent):
    """Submits `solutions` one per attempt (None: the champion's own tree) and keeps the history it
    was shown at each start: an agent that reads history (the Agent default)."""

    def __init__(self, trees: Any, solutions: list[str | None]):
        self.trees = trees
        self.solutions = solutions
        self.seen: dict[int, tuple[PastAttempt, ...]] = {}

    def start(self, ctx: AgentContext) -> Action:
        self.seen[ctx.attempt] = ctx.history
        if ctx.attempt > len(self.solutions):
            return GiveUp("no more solutions")
        text = self.solutions[ctx.attempt - 1]
        if text is None:
            return Submit(tree=ctx.champion_tree, report="the champion again", summary="same")
        tree = self.trees.overlay_tree(ctx.champion_tree, {"solution.py": text.encode()})
        return Submit(tree=tree, report="a solution", summary=f"solution {ctx.attempt}")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        return GiveUp("no launches")


def _campaign(root: Path, agent_of: Any) -> tuple[str, Any, Any]:
    """Run a real campaign in this process with the agent `agent_of(tree view)`; (stop reason, the
    agent, the final RunState)."""
    loaded, git_ = open_project(root)
    data = load_examples_data(loaded)
    agent = agent_of(make_agent(loaded.contract, root, git_, AgentLink()).trees)
    kernel, salt = new_kernel(loaded)
    target = make_target(loaded.contract, root, kernel.sandbox, salt, data)
    record_started(kernel, salt, git_.head_commit(), git_.tree_of("HEAD"), target.reserve_units(),
                   examples={"fingerprint_blob": kernel.blobs.put_json(data.fingerprint),
                             "sizes": data.split.sizes(), "warnings": [], "checks_version": CHECKS_VERSION})
    try:
        reason, _ = Campaign(kernel, agent, LogUI(), target).run()
        state = kernel.state()
    finally:
        kernel.close()
    return reason, agent, state


def test_a_learning_agent_sees_dev_results_and_of_val_only_whether_it_was_promoted(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r")  # val 27, last look 27: one block, room for one promotion
    data = load_examples_data(open_project(root)[0])
    dev_ids = {ex.id for ex in data.split.dev}
    reason, agent, state = _campaign(root, lambda trees: LearningAgent(trees, [CRASH, None, UPPER, UPPER]))

    assert reason == "val_exhausted"  # promoted at attempt 3; val has no fresh block for attempt 4
    assert [a.attempt for a in state.attempts] == [1, 2, 3] and state.promotions == 1
    assert state.attempt(1).reason == "futility"  # the gate's reason (crashed examples score 0), in the ledger
    crash, same = agent.seen[3]
    assert (crash.verdict, crash.reason, crash.candidate_mean) == ("rejected", "not_promoted", None)
    assert crash.dev_mean == 0.0  # measured on dev: the crash fails every dev example
    assert (same.verdict, same.reason, same.dev_mean) == ("rejected", "no_change", None)  # decided without jobs
    assert dev_mean(state, 3) == 1.0 and champion_dev_mean(state) == 1.0

    run_id = state.run_id
    finished = [e["data"] for e in events(root, run_id) if e["kind"] == "job.finished"]
    dev = [f for f in finished if f["stage"] == "dev"]
    assert {f["attempt"] for f in dev} == {1, 3}, "every candidate that reached jobs, and only those, on dev"
    assert all(f["job_id"].startswith(f"a{f['attempt']:04d}-dev-") and f["variant"] == "candidate" for f in dev)
    for attempt in (1, 3):
        measured = {i for f in dev if f["attempt"] == attempt for i in f["examples"]}
        assert measured == dev_ids
    charged = sum(f["units_charged"] for f in dev)
    assert charged == 2 * len(dev_ids) and state.budget_used.evaluations >= charged  # charged to the budget
    code, out = verify(root, run_id)
    assert code == 0, out["result"]["findings"]


def test_the_files_agent_is_not_measured_on_dev(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    stages = {e["data"]["stage"] for e in events(root, out["result"]["run_id"]) if e["kind"] == "job.started"}
    assert "dev" not in stages and {"preflight", "trial", "holdout"} <= stages


def test_check_counts_each_candidates_dev_measurement_for_an_agent_that_reads_history(tmp_path: Path):
    files = make_examples_repo(tmp_path / "files")  # dev 36, val 27: a trial's worst case is 3 x 27
    search = make_examples_repo(tmp_path / "search", EXAMPLES_CONTRACT.replace(
        'kind = "files"\n[agent.files]\npath = "candidates/"',
        'kind = "search"\n[agent.search]\nfile = "params.toml"\n[agent.search.space]\n'
        'x = { type = "float", low = 0.0, high = 1.0 }').replace('allowed = ["solution.py"]',
                                                               'allowed = ["solution.py", "params.toml"]'))
    (search / "params.toml").write_text("x = 0.5\n")
    git(search, "add", "-A")
    git(search, "commit", "-q", "-m", "params")
    worst = {}
    for root in (files, search):
        code, out, err = ratchet("check", str(root))
        assert code == 0, err
        worst[root.name] = out["result"]["budget"]["worst_case_units"]["per_trial"]
    assert worst == {"files": 81, "search": 81 + 36}


BLOCKS_CONTRACT = (EXAMPLES_CONTRACT.replace("split = [0.4, 0.3, 0.3]", "split = [0.3, 0.4, 0.3]")
                   .replace("units = [10, 27]", "units = [20, 40]").replace("max_attempts = 3", "max_attempts = 8"))
"""200 words: dev 60, val 80, test 60; blocks of 40 val examples: room for two promotions."""


def _blocks_repo(root: Path) -> Path:
    make_examples_repo(root, BLOCKS_CONTRACT, words=200)
    for name in ("1-same", "2-upper", "3-crash"):
        for path in (root / "candidates" / name).iterdir():
            path.unlink()
        (root / "candidates" / name).rmdir()
    for name, text in (("1-crash", CRASH), ("2-half", HALF), ("3-crash-again", CRASH + "# again\n"),
                       ("4-upper", UPPER), ("5-never-run", UPPER + "# never\n")):
        (root / "candidates" / name).mkdir(parents=True)
        (root / "candidates" / name / "solution.py").write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "candidates")
    return root


def _trial_units(root: Path, run_id: str) -> dict[int, list[str]]:
    """Each attempt's trial plan units (example ids), read from its recorded plan blob."""
    blobs = root / ".ratchet" / "runs" / run_id / "blobs"
    out = {}
    for e in events(root, run_id):
        d = e["data"]
        if e["kind"] == "trial.planned" and d["stage"] == "trial":
            out[d["attempt"]] = json.loads((blobs / d["plan_blob"][7:]).read_bytes())["units"]
    return out


def test_a_promotion_moves_the_trials_to_a_fresh_block_until_val_is_used_up(tmp_path: Path):
    root = _blocks_repo(tmp_path / "r")
    code, out, _ = ratchet("check", str(root))
    assert code == 0 and out["result"]["examples"]["promotions_room"] == 2
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env={**os.environ, "RATCHET_TEST_CRASH_AT": "after:champion.promoted:1"}, timeout=300)
    assert crashed.returncode == -signal.SIGKILL  # killed right after the first promotion
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    code, out, err = ratchet("run", str(root), "--resume", run_id)  # the resume derives the next block
    assert code == 0, err
    r = out["result"]
    assert r["promotions"] == 2 and r["stop_reason"] == "val_exhausted", r
    promoted = [e["data"]["attempt"] for e in events(root, run_id) if e["kind"] == "champion.promoted"]
    assert promoted == [2, 4]  # attempt 5 never ran: no block was left for it
    units = _trial_units(root, run_id)
    assert sorted(units) == [1, 2, 3, 4]
    block0, block1 = set(units[1]), set(units[3])
    assert len(block0) == len(block1) == 40 and not block0 & block1
    assert set(units[2]) == block0 and set(units[4]) == block1  # the same block until a promotion
    assert units[1] != units[2], "each trial measures its block in its own order"
    stopped = next(e["data"] for e in events(root, run_id) if e["kind"] == "run.stopped")
    assert "val has room for 2 (one block of 40 examples each)" in stopped["detail"]
    measured: dict[int, set[str]] = {}
    for e in events(root, run_id):
        if e["kind"] == "job.finished" and e["data"]["stage"] == "trial":
            measured.setdefault(e["data"]["attempt"], set()).update(e["data"]["examples"])
    assert measured[1] <= block0 and measured[3] <= block1  # the jobs ran what the plans said

    code, verified = verify(root, run_id)
    assert code == 0, verified["result"]["findings"]
    _plan_on_block(root, run_id, attempt=3, units=units[1])
    code, tampered = verify(root, run_id)
    assert code == 3 and "verify.plan" in codes(tampered), tampered["result"]["findings"]


def _plan_on_block(root: Path, run_id: str, attempt: int, units: list[str]) -> None:
    """Rewrite attempt `attempt`'s trial plan to measure `units` (re-digested, re-chained): a kernel
    that kept trying candidates on a block agents had already learned from."""
    run = root / ".ratchet" / "runs" / run_id
    blobs = run / "blobs"

    def reuse_block(event: dict[str, Any]) -> bool:
        d = event["data"]
        if event["kind"] != "trial.planned" or d["stage"] != "trial" or d["attempt"] != attempt:
            return False
        plan = json.loads((blobs / d["plan_blob"][7:]).read_bytes())
        swap = dict(zip(plan["units"], units, strict=True))
        plan["units"] = [swap[u] for u in plan["units"]]
        for job in plan["jobs"]:
            job["key"] = swap[job["key"]]
        plan["digest"] = digest_bytes(canonical_bytes({k: v for k, v in plan.items() if k != "digest"}))
        data = canonical_bytes(plan)
        (blobs / digest_bytes(data)[7:]).write_bytes(data)
        d["plan_blob"], d["plan_digest"] = digest_bytes(data), plan["digest"]
        return True

    rechain(run / "events.jsonl", reuse_block)
