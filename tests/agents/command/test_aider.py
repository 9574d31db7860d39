"""aider, a real coding-agent CLI from PyPI, as a command agent: installed by `make aider` (pinned) in
a venv of its own outside /usr, found on the PATH and run by `ratchet run` under bubblewrap with the
aider template of docs/agents-command.md as the contract's `[agent.command]`, verbatim. Its model is
a chat-completions server on 127.0.0.1 (tests/agents/llm/llm_server.py) answering with a correct
edit in the edit format aider asked for; aider applies it and exits without a request, and its
workspace is harvested as the submission, the report read from the REPORT.md it wrote. A rejected
change is revised by aider started afresh with the verdict and the diff."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import events, ratchet
from repo_fixture import git, make_bench_repo

from ratchet.compute.sandbox import probe_bwrap
from ratchet.ledger.blobs import BlobStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from llm_server import ChatServer, Step, answer  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
AIDER_VENV = REPO / ".venv-aider"
AIDER = AIDER_VENV / "bin" / "aider"
AIDER_VERSION = re.findall(r"^AIDER_VERSION\s*:=\s*(\S+)$", (REPO / "Makefile").read_text(), re.M)[0]
"""The version `make aider` pins (its install leaves `.installed-<version>` in the venv)."""
DOC = REPO / "docs" / "agents-command.md"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe_bwrap().available, reason="the command agent needs a working bwrap"),
    pytest.mark.skipif(not (AIDER_VENV / f".installed-{AIDER_VERSION}").is_file(),
                       reason=f"aider {AIDER_VERSION} is not installed: `make aider` installs it into "
                              f"{AIDER_VENV.name}/ (.ci/run does)"),
]

MODEL = "test-model"
"""The model the server plays; aider has no settings for it, so it asks for whole files (its `whole`
edit format); `edit_reply` answers SEARCH/REPLACE blocks too, should it ask for those."""

REPORT = ("Hypothesis: the benchmark's score peaks at x = 3.\n"
          "What changed: params.toml sets x = 3.0 instead of 0.0.\n")

CONTRACT = """\
[campaign]
name = "aider"
seed = 0

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
direction = "max"
timeout_s = 60

[scope]
allowed = ["params.toml"]
protected = ["bench.py"]

[agent]
kind = "command"

{agent_command}
[gate]
units = [8]
holdout_units = 8

[budget]
max_attempts = 1
max_wall = "5m"
"""


def aider_template() -> str:
    """The `[agent.command]` table of the aider template in docs/agents-command.md, as written there."""
    found = re.search(r"^aider:\n\n```toml\n(.*?)```", DOC.read_text(), flags=re.M | re.S)
    assert found, f"no aider template in {DOC}"
    return found.group(1)


def edit_reply(request: dict[str, Any]) -> str:
    """What the model answers: x = 3.0 in params.toml and a new REPORT.md, in the edit format
    aider's system prompt asks for (SEARCH/REPLACE blocks, else whole files)."""
    system = "\n".join(str(m.get("content")) for m in request["messages"] if m["role"] == "system")
    if "SEARCH/REPLACE" in system:
        return ("Setting x to the optimum.\n\nparams.toml\n```\n<<<<<<< SEARCH\nx = 0.0\n=======\nx = 3.0\n"
                f">>>>>>> REPLACE\n```\n\nREPORT.md\n```\n<<<<<<< SEARCH\n=======\n{REPORT}>>>>>>> REPLACE\n```\n")
    return f"Setting x to the optimum.\n\nparams.toml\n```\nx = 3.0\n```\n\nREPORT.md\n```\n{REPORT}```\n"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    s = ChatServer(default=answer(edit_reply)).start()
    try:
        yield s
    finally:
        s.close()


MODEL_METADATA = {f"openai/{MODEL}": {"max_input_tokens": 32768, "max_output_tokens": 4096, "mode": "chat",
                                       "litellm_provider": "openai", "input_cost_per_token": 0.0,
                                       "output_cost_per_token": 0.0}}
"""aider's `.aider.model.metadata.json` declaring the model: aider then fetches no price list from
the network (and litellm none either, with LITELLM_LOCAL_MODEL_COST_MAP set)."""


def aider_project(root: Path) -> Path:
    """The benchmark fixture (score -(x - 3)^2 + noise, x = 0.0 in params.toml) driven by aider, with
    the model's metadata committed at its root (where aider reads it in the workspace)."""
    return make_bench_repo(root, files={"ratchet.toml": CONTRACT.format(agent_command=aider_template()),
                                        ".aider.model.metadata.json": json.dumps(MODEL_METADATA)})


def aider_env(server: ChatServer) -> dict[str, str]:
    """The operator's environment for aider: the venv's bin on the PATH, the model and its server."""
    return {"PATH": f"{AIDER_VENV / 'bin'}:{os.environ['PATH']}", "AIDER_MODEL": f"openai/{MODEL}",
            "OPENAI_API_BASE": server.url, "OPENAI_API_KEY": "sk-test-aider", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_aider_edits_exits_and_its_workspace_is_promoted_with_its_report(tmp_path: Path, server: ChatServer):
    root = aider_project(tmp_path / "p")
    code, out, err = ratchet("run", str(root), env=aider_env(server))
    assert code == 0, (out, err)
    run_id = out["result"]["run_id"]
    evs = events(root, run_id)
    legs = [e["data"] for e in evs if e["kind"] == "agent.leg"]
    assert [(leg["attempt"], leg["kind"], leg["outcome"], leg["exit_code"]) for leg in legs] == [
        (1, "start", "on_exit", 0)], legs
    blobs = BlobStore(root / ".ratchet" / "runs" / run_id / "blobs")
    argv = json.loads(blobs.get_bytes(legs[0]["argv_blob"]))
    assert argv[0] == str(AIDER) and argv[-1].endswith("/.ratchet-sys/prompt.md"), argv
    printed = blobs.get_bytes(legs[0]["stdout_blob"]).decode()
    assert f"Aider v{AIDER_VERSION}" in printed and "Applied edit to params.toml" in printed, printed
    assert "githubusercontent" not in printed, "the model's metadata is declared: no price list fetched"

    (harvested,) = [e["data"] for e in evs if e["kind"] == "agent.harvested"]
    assert harvested["taken"] == ["params.toml"] and harvested["violations"] == [], harvested
    assert {"REPORT.md", ".aider.chat.history.md"} <= set(harvested["ignored"]), harvested  # never taken
    (submitted,) = [e["data"] for e in evs if e["kind"] == "attempt.submitted"]
    assert blobs.get_bytes(submitted["report_blob"]).decode() == REPORT.strip(), "the report is REPORT.md"
    assert submitted["summary"] == REPORT.splitlines()[0]
    judged = [(e["data"]["stage"], e["data"]["verdict"]) for e in evs if e["kind"] == "trial.judged"]
    assert judged == [("trial", "accepted"), ("confirm", "accepted"), ("holdout", "accepted")], judged
    (promoted,) = [e["data"] for e in evs if e["kind"] == "champion.promoted"]
    assert git(root, "show", f"{promoted['commit']}:params.toml") == "x = 3.0"

    # What aider sent: Ratchet's prompt (--message-file), the key named by pass_env, the model named by AIDER_MODEL.
    assert server.requests and all(r["model"] == MODEL for r in server.requests)
    assert any("# Ratchet, attempt 1" in str(m["content"]) for m in server.requests[0]["messages"])
    assert server.headers[0]["authorization"] == "Bearer sk-test-aider"

    text = subprocess.run([sys.executable, "-m", "ratchet", "report", run_id, "--dir", str(root), "--attempt", "1"],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert "leg 1 start -> on_exit; ok, exit 0" in text, text
    assert f"command: {AIDER} --yes-always" in text, text
    assert re.search(r"^\s+\| Applied edit to params.toml$", text, re.M), text


def whole_file_reply(x: str, report: str) -> Step:
    """A reply in aider's `whole` format setting x = `x` in params.toml and writing `report` to REPORT.md."""
    return answer(lambda request: f"Trying x = {x}.\n\nparams.toml\n```\nx = {x}\n```\n\nREPORT.md\n```\n{report}```\n")


def test_a_rejected_aider_change_is_revised_by_a_fresh_aider_told_the_verdict_and_promoted(tmp_path: Path):
    root = aider_project(tmp_path / "p")
    (root / "ratchet.toml").write_text((root / "ratchet.toml").read_text().replace("max_attempts = 1",
                                                                                   "max_attempts = 2"))
    git(root, "commit", "-qam", "two attempts")
    server = ChatServer(script=[whole_file_reply("-1.0", "Hypothesis: x = -1 scores better.\n")],
                        default=whole_file_reply("3.0", "Hypothesis: the score peaks at x = 3, not -1.\n")).start()
    try:
        code, out, err = ratchet("run", str(root), env=aider_env(server))
    finally:
        server.close()
    assert code == 0, (out, err)
    evs = events(root, out["result"]["run_id"])
    started = [e["data"] for e in evs if e["kind"] == "attempt.started"]
    assert [(a["attempt"], a.get("revises")) for a in started] == [(1, None), (2, 1)], started
    legs = [(e["data"]["attempt"], e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]
    assert legs == [(1, "start", "on_exit"), (2, "revise", "on_exit")], legs
    judged = [(d["attempt"], d["stage"], d["verdict"]) for d in (e["data"] for e in evs if e["kind"] == "trial.judged")]
    assert judged[:3] == [(1, "trial", "rejected"), (2, "trial", "accepted"), (2, "confirm", "accepted")], judged
    summaries = [e["data"]["summary"] for e in evs if e["kind"] == "attempt.submitted"]
    assert summaries == ["Hypothesis: x = -1 scores better.", "Hypothesis: the score peaks at x = 3, not -1."]
    (promoted,) = [e["data"] for e in evs if e["kind"] == "champion.promoted"]
    assert promoted["attempt"] == 2 and git(root, "show", f"{promoted['commit']}:params.toml") == "x = 3.0"
    # aider has no session to resume: the revision starts it afresh, its message the verdict and the diff.
    assert len(server.requests) == 2, "one request per leg"
    told = str(server.requests[1]["messages"][-1]["content"])
    assert "# Ratchet verdict on attempt 1" in told and "rejected (not_significant)" in told, told
    assert "+x = -1.0" in told, told


def test_check_preflight_finds_aider_in_its_venv_and_runs_its_version_in_the_sandbox(tmp_path: Path,
                                                                                      server: ChatServer):
    root = aider_project(tmp_path / "p")
    code, out, _ = ratchet("check", str(root), "--preflight", env=aider_env(server))
    assert code == 0, out
    agent = out["result"]["agent"]
    assert agent["program"]["resolved"] == str(AIDER) and agent["will_run"] is True, agent
    assert str(AIDER_VENV) in agent["bound"], agent
    assert agent["version"]["ok"] and agent["version"]["output"] == f"aider {AIDER_VERSION}", agent
    assert not server.requests, "--version asks no model"
