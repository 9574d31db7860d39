"""The command agent in real campaigns: `ratchet run` on the bundled agent example (a scripted
coding agent driving the channel), killed mid-launch or before a leg's record and resumed; each
leg's command line and output kept as blobs of the run, shown by `ratchet report --attempt` and the
HTML report, checked by `ratchet verify`; each run in an agent folder of its own; token and dollar
budgets counted from the usage the CLI reports; the CLI found where it is installed, and one that does
not start stopping the run `agent_unresponsive`."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import events, ratchet, rechain, set_contract, venv_agent_cli
from repo_fixture import git

from ratchet.compute.sandbox import probe_bwrap
from ratchet.ledger.blobs import BlobStore
from ratchet.loop.kernel import agent_work_dir

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not probe_bwrap().available, reason="the command agent needs a working bwrap")]


def agent_project(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


def test_a_scripted_coding_agent_launches_sleeps_submits_and_is_promoted(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    assert out["result"]["promotions"] == 1 and out["result"]["holdout"]["verdict"] == "accepted"
    evs = events(root, out["result"]["run_id"])
    legs = [(e["data"]["attempt"], e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]
    assert legs[:2] == [(1, "start", "launch"), (1, "wake", "submit")]
    launched = next(e["data"] for e in evs if e["kind"] == "agent.launched")
    finished = {e["data"]["job_id"]: e["data"] for e in evs if e["kind"] == "job.finished"}
    assert all(finished[j]["stage"] == "launch" and finished[j]["units_charged"] == 1 for j in launched["jobs"])
    wake = next(e["data"] for e in evs if e["kind"] == "agent.leg" and e["data"]["kind"] == "wake")
    blobs = BlobStore(root / ".ratchet" / "runs" / out["result"]["run_id"] / "blobs")
    message = blobs.get_bytes(wake["message_blob"]).decode("utf-8")
    # The example's budget: max_attempts = 2 (attempt 1 started), max_wall = "5m".
    assert "max_attempts: 1 of 2 attempts used, 1 left" in message
    assert re.search(r"max_wall: [\d.]+ of 300 s used, [\d.]+ left", message), message


def test_a_kernel_killed_mid_launch_resumes_without_running_a_launch_twice(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:job.finished:2"}  # preflight, then one launched job
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    assert (agent_work_dir(root, run_id) / "a0001" / "workspace" / ".ratchet-sys").is_dir()
    code, out, _ = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, out
    evs = events(root, run_id)
    starts = Counter(e["data"]["job_id"] for e in evs if e["kind"] == "job.started")
    finishes = Counter(e["data"]["job_id"] for e in evs if e["kind"] == "job.finished")
    assert all(n == 1 for n in finishes.values()), finishes
    launch_jobs = [j for j in finishes if "-launch" in j]
    assert launch_jobs and all(starts[j] <= 2 for j in launch_jobs)
    wakes = [e for e in evs if e["kind"] == "agent.leg" and e["data"]["attempt"] == 1 and e["data"]["kind"] == "wake"]
    assert len(wakes) == 1, "the agent is woken once for its launch"
    launched = [e for e in evs if e["kind"] == "agent.launched" and e["data"]["attempt"] == 1]
    assert len(launched) == 1, "the resume found the run's own workspace (else the attempt starts again)"
    assert out["result"]["promotions"] == 1


# --- each leg kept with the run and shown ------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real `ratchet run` of the agent example (read by the tests below, never changed)."""
    root = agent_project(tmp_path_factory.mktemp("legs") / "p")
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    return root, out["result"]["run_id"]


def leg_events(root: Path, run_id: str, attempt: int = 1) -> list[dict]:
    return [e["data"] for e in events(root, run_id) if e["kind"] == "agent.leg" and e["data"]["attempt"] == attempt]


def run_blobs(root: Path, run_id: str) -> BlobStore:
    return BlobStore(root / ".ratchet" / "runs" / run_id / "blobs")


def test_each_leg_of_a_real_run_keeps_its_command_line_and_what_the_bot_printed(demo_run):
    root, run_id = demo_run
    blobs = run_blobs(root, run_id)
    start, wake = leg_events(root, run_id)[:2]
    argv = json.loads(blobs.get_bytes(start["argv_blob"]))
    # The program as run: `python3` as found on the agent's PATH (compute.programs).
    assert os.path.isabs(argv[0]) and Path(argv[0]).name.startswith("python3"), argv
    assert argv[1] == "agent/bot.py" and argv[2].endswith("/.ratchet-sys/prompt.md"), argv
    printed = blobs.get_bytes(start["stdout_blob"]).decode()
    assert printed.startswith("bot: read the prompt: # Ratchet"), printed  # bot.py's first print
    assert start["stdout_bytes"] == len(printed.encode()) and start["stdout_truncated"] is False
    assert blobs.get_bytes(start["stderr_blob"]) == b"" and start["stderr_bytes"] == 0
    woke = blobs.get_bytes(wake["stdout_blob"]).decode()
    assert re.search(r"^bot: results \[.*\]; best window 25$", woke, re.M), woke
    assert start["exit_code"] == 0 and start["elapsed_s"] > 0


def test_report_attempt_shows_each_leg_in_text_and_json(demo_run):
    root, run_id = demo_run
    code, out, _ = ratchet("report", run_id, "--dir", str(root), "--attempt", "1")
    assert code == 0, out
    legs = out["result"]["legs"]
    assert [(leg["leg"], leg["kind"], leg["outcome"], leg["exit_code"]) for leg in legs] == [
        (1, "start", "launch", 0), (2, "wake", "submit", 0)]
    assert Path(legs[0]["command"][0]).name.startswith("python3") and legs[0]["command"][1] == "agent/bot.py"
    assert [r["name"] for r in legs[0]["requests"]["launches"]] == ["explore"]
    assert legs[0]["requests"]["sleep"]["note"].startswith("explore: SWEEP_INDEX 0 is window 9")
    assert legs[1]["requests"]["submit"]["summary"] == "moving average, window 25"
    assert legs[0]["stdout"]["tail"].startswith("bot: read the prompt:")
    assert Path(legs[0]["stdout"]["file"]).is_file() and not legs[0]["stdout"]["truncated"]
    text = subprocess.run([sys.executable, "-m", "ratchet", "report", run_id, "--dir", str(root), "--attempt", "1"],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert "leg 1 start -> launch; ok, exit 0" in text, text
    assert re.search(r"command: /\S*python3\S* agent/bot.py /", text), text
    assert "launch explore x2 (2 min): python3 model/explore.py" in text
    assert "submit: moving average, window 25" in text
    assert re.search(r"^\s+\| bot: results \[.*best window 25$", text, re.M), text


def test_the_html_report_folds_each_leg_with_the_end_of_its_output(demo_run):
    root, run_id = demo_run
    code, out, _ = ratchet("report", run_id, "--dir", str(root), "--html")
    assert code == 0, out
    page = (root / ".ratchet" / "runs" / run_id / "report.html").read_text()
    assert "<summary>leg 1 start -&gt; launch; ok, exit 0" in page
    assert "<pre>bot: read the prompt:" in page and "best window 25" in page


def test_verify_flags_a_deleted_leg_output_blob(demo_run, tmp_path: Path):
    source, run_id = demo_run
    root = tmp_path / "copy"
    shutil.copytree(source, root, symlinks=True)
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0, out
    wake = leg_events(root, run_id)[1]
    run_blobs(root, run_id).path_of(wake["stdout_blob"]).unlink()
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 3, out
    found = [f for f in out["result"]["findings"] if f["code"] == "verify.blob"]
    assert found and all(f"data.stdout_blob = {wake['stdout_blob']}" in f["message"] for f in found), found
    code, out, _ = ratchet("report", run_id, "--dir", str(root), "--attempt", "1")
    assert code == 0 and out["result"]["legs"][1]["stdout"]["missing"] is True


def test_two_runs_of_a_project_work_in_folders_of_their_own_removed_when_they_stop(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    workspaces = {}
    for _ in range(2):
        code, out, _ = ratchet("run", str(root))
        assert code == 0, out
        run_id = out["result"]["run_id"]
        argv = json.loads(run_blobs(root, run_id).get_bytes(leg_events(root, run_id)[0]["argv_blob"]))
        workspaces[run_id] = Path(argv[2]).parents[1]  # <agent dir>/a0001/workspace/.ratchet-sys/prompt.md
        assert workspaces[run_id].parent.parent == agent_work_dir(root, run_id)
        assert not agent_work_dir(root, run_id).exists(), "a stopped run's agent folder is removed"
    first, second = workspaces.values()
    assert first != second and not first.is_relative_to(second.parents[1])


def test_a_kernel_killed_before_its_first_leg_is_recorded_starts_the_attempt_again_and_keeps_every_leg(
        tmp_path: Path):
    root = agent_project(tmp_path / "p")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "before:agent.leg:1"}  # the start leg ran, its record not written
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    assert (agent_work_dir(root, run_id) / "a0001" / "workspace" / ".ratchet-sys").is_dir(), \
        "a crashed run keeps its agent folder"
    code, out, _ = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, out
    legs = leg_events(root, run_id)
    assert [(leg["leg"], leg["kind"], leg["outcome"]) for leg in legs] == [
        (1, "start", "launch"), (2, "wake", "submit")]
    blobs = run_blobs(root, run_id)
    assert blobs.get_bytes(legs[0]["stdout_blob"]).decode().startswith("bot: read the prompt:")
    assert "best window 25" in blobs.get_bytes(legs[1]["stdout_blob"]).decode()
    assert out["result"]["promotions"] == 1
    assert not agent_work_dir(root, run_id).exists(), "the resumed run removed its agent folder when it stopped"


def test_an_abandoned_run_loses_its_agent_folder(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:job.finished:2"}
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    assert agent_work_dir(root, run_id).is_dir()
    code, out, _ = ratchet("abandon", run_id, "--dir", str(root))
    assert code == 0, out
    assert not agent_work_dir(root, run_id).exists()


# --- token and dollar budgets counted from the usage the CLI reported -------------------------------

USAGE_BOT = '''"""The example's scripted agent, then the JSON line a coding-agent CLI prints last (its usage)."""
import json, runpy, sys
try:
    runpy.run_path("agent/bot.py", run_name="__main__")
finally:
    print(json.dumps(%r))
'''


def usage_project(root: Path, report: dict, budget: str, price: str = "") -> Path:
    """The agent example whose CLI prints `report` as its last JSON line each leg, with `budget`
    lines added to its [budget] and `price` lines as its [agent.command.price]."""
    shutil.copytree(EXAMPLE, root)
    (root / "agent" / "usage_bot.py").write_text(USAGE_BOT % (report,))
    text = (root / "ratchet.toml").read_text().replace("agent/bot.py {prompt}", "agent/usage_bot.py {prompt}")
    text = text.replace('max_wall = "5m"\n', f'max_wall = "5m"\n{budget}\n')
    if price:
        text = text.replace('brief = "BRIEF.md"\n', f'brief = "BRIEF.md"\n[agent.command.price]\n{price}')
    (root / "ratchet.toml").write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


def stopped(root: Path, run_id: str) -> dict:
    return next(e["data"] for e in events(root, run_id) if e["kind"] == "run.stopped")


def test_a_leg_reporting_input_tokens_past_the_budget_stops_the_campaign_with_its_arithmetic(tmp_path: Path):
    report = {"type": "result", "session_id": "s-1", "usage": {"input_tokens": 4_200_000, "output_tokens": 900}}
    root = usage_project(tmp_path / "p", report, "max_input_tokens = 1000000")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    run_id = out["result"]["run_id"]
    assert out["result"]["stop_reason"] == "budget_exhausted" and out["result"]["promotions"] == 0
    data = stopped(root, run_id)
    assert data["budget"] == "max_input_tokens"
    assert data["detail"].startswith("max_input_tokens: 4,200,000 of 1,000,000 input tokens used"), data
    evs = events(root, run_id)
    legs = [e["data"] for e in evs if e["kind"] == "agent.leg"]
    assert len(legs) == 1, "no leg runs after the one that passed the budget"
    assert legs[0]["charged"] == {"input_tokens": 4_200_000, "output_tokens": 900}
    assert not [e for e in evs if e["kind"] in ("agent.launched", "trial.planned")], "its launch never ran"
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0, out

    def understate(event: dict) -> bool:
        if event["kind"] != "agent.leg":
            return False
        event["data"]["charged"]["input_tokens"] = 900_000
        return True

    rechain(root / ".ratchet" / "runs" / run_id / "events.jsonl", understate)
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 3
    findings = [f for f in out["result"]["findings"] if f["code"] == "verify.budget"]
    assert findings and "leg 1 of attempt 1 was charged" in findings[0]["message"], out


def test_a_reported_cost_stops_a_dollar_budget_before_the_price_would(tmp_path: Path):
    report = {"type": "result", "session_id": "s-1", "total_cost_usd": 2.5, "usage": {"input_tokens": 1000}}
    root = usage_project(tmp_path / "p", report, "max_usd = 1.0", price="input_usd_per_mtok = 0.01\n")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    data = stopped(root, out["result"]["run_id"])
    assert data["budget"] == "max_usd" and data["detail"].startswith("max_usd: 2.5000 of 1.0000 USD used"), data


def test_price_keys_turn_the_reported_tokens_into_dollars(tmp_path: Path):
    report = {"type": "result", "usage": {"prompt_tokens": 2_000_000, "completion_tokens": 0}}
    root = usage_project(tmp_path / "p", report, "max_usd = 1.5",
                         price="input_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    data = stopped(root, out["result"]["run_id"])
    assert data["budget"] == "max_usd" and data["detail"].startswith("max_usd: 2.0000 of 1.5000 USD used"), data


def test_a_resume_recounts_the_legs_usage_from_the_ledger(tmp_path: Path):
    report = {"type": "result", "session_id": "s-1", "usage": {"input_tokens": 4_200_000, "output_tokens": 900}}
    root = usage_project(tmp_path / "p", report, "max_input_tokens = 1000000")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:agent.leg:1"}  # killed before the stop is recorded
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    assert (agent_work_dir(root, run_id) / "a0001" / "workspace").is_dir(), "a crashed run keeps its agent folder"
    code, out, err = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, (out, err)
    assert out["result"]["stop_reason"] == "budget_exhausted"
    assert stopped(root, run_id)["detail"].startswith("max_input_tokens: 4,200,000 of 1,000,000 input tokens used")
    # Each leg the CLI runs is recorded (its output is kept): one agent.leg is no second run of the CLI.
    assert len([e for e in events(root, run_id) if e["kind"] == "agent.leg"]) == 1, "the resumed run ran no leg"
    assert not agent_work_dir(root, run_id).exists(), "the run stopped for good: its agent folder is removed"


def test_a_leg_without_a_usage_report_under_a_token_budget_stops_the_campaign(tmp_path: Path):
    root = usage_project(tmp_path / "p", {"type": "result", "session_id": "s-1"}, "max_output_tokens = 50000")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    assert out["result"]["stop_reason"] == "agent_stopped"
    gave_up = next(e["data"] for e in events(root, out["result"]["run_id"]) if e["kind"] == "attempt.gave_up")
    assert "reported no usage" in gave_up["reason"] and "budget.max_output_tokens" in gave_up["reason"]


def test_the_leg_that_reaches_the_budget_is_the_last_and_verify_flags_a_leg_run_past_a_limit(tmp_path: Path):
    report = {"type": "result", "session_id": "s-1", "usage": {"input_tokens": 600_000, "output_tokens": 10}}
    root = usage_project(tmp_path / "p", report, "max_input_tokens = 1000000")
    code, out, err = ratchet("run", str(root))
    assert code == 0, (out, err)
    run_id = out["result"]["run_id"]
    evs = events(root, run_id)
    assert [(e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"] == [
        ("start", "launch"), ("wake", "submit")], "leg 1 left room; leg 2 reached the limit and was the last"
    assert not [e for e in evs if e["kind"] == "trial.planned"], "the attempt ended at its budget, unjudged"
    assert stopped(root, run_id)["detail"].startswith("max_input_tokens: 1,200,000 of 1,000,000 input tokens used")
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0, out

    def tighter(event: dict) -> bool:  # a limit leg 1 alone reached: leg 2 should never have run
        if event["kind"] != "run.started":
            return False
        event["data"]["limits"]["max_input_tokens"] = 500_000
        return True

    rechain(root / ".ratchet" / "runs" / run_id / "events.jsonl", tighter)
    code, out, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 3
    messages = [f["message"] for f in out["result"]["findings"] if f["code"] == "verify.budget"]
    assert any("leg 2 of attempt 1 ran after max_input_tokens was reached" in m for m in messages), messages


# --- the agent's program found and bound, a CLI that does not start ----------------------------------

def test_a_cli_on_the_path_in_a_venv_outside_usr_is_seen_and_its_candidate_promoted(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    bin_dir = venv_agent_cli(tmp_path / "tools" / "venv")
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "venvbot {prompt}"'})
    code, out, _ = ratchet("run", str(root), env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert code == 0, out
    assert out["result"]["promotions"] == 1
    evs = events(root, out["result"]["run_id"])
    legs = [(e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]
    assert legs[:2] == [("start", "launch"), ("wake", "submit")]
    start = next(e["data"] for e in evs if e["kind"] == "agent.leg")
    argv = json.loads(run_blobs(root, out["result"]["run_id"]).get_bytes(start["argv_blob"]))
    assert argv[0] == str(bin_dir / "venvbot"), "the leg's command line names the program as found"


def test_a_cli_that_does_not_exist_is_refused_by_check_and_run_before_any_attempt(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "no-such-agent-cli {prompt}"'})
    for command in ("check", "run"):
        code, out, _ = ratchet(command, str(root))
        assert code == 2 and out["error"]["code"] == "contract.agent_not_found", out
        assert "no-such-agent-cli is not found on the PATH" in out["error"]["message"], out
    assert not (root / ".ratchet" / "runs").exists() or not any((root / ".ratchet" / "runs").iterdir())


def test_a_cli_that_fails_to_start_every_time_stops_the_run_agent_unresponsive(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    # python3 is there; the script it is told to run is not: it exits 2 at once, nothing done.
    gone = 'command = "python3 agent/gone.py {prompt}"'
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': gone,
                                'kind = "command"\n': 'kind = "command"\nmax_idle_attempts = 2\n',
                                "max_attempts = 2": "max_attempts = 6"})
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    assert out["result"]["stop_reason"] == "agent_unresponsive"
    evs = events(root, out["result"]["run_id"])
    legs = [e["data"] for e in evs if e["kind"] == "agent.leg"]
    assert [(leg["attempt"], leg["kind"], leg["outcome"]) for leg in legs] == [(1, "start", "start_failed"),
                                                                               (2, "start", "start_failed")]
    assert all("can't open file" in leg["problem"] and "gone.py" in leg["problem"] for leg in legs)
    blobs = run_blobs(root, out["result"]["run_id"])
    assert all(b"can't open file" in blobs.get_bytes(leg["stderr_blob"]) for leg in legs), \
        "a leg that did not start keeps its stderr with the run"
    gave_up = [e["data"] for e in evs if e["kind"] == "attempt.gave_up"]
    assert [g["unresponsive"] for g in gave_up] == [True, True] and "gone.py" in gave_up[-1]["reason"]
    (stopped,) = [e["data"] for e in evs if e["kind"] == "run.stopped"]
    assert stopped["detail"].startswith("2 attempts in a row ended without a working agent")
    assert "can't open file" in stopped["detail"]


def test_check_names_the_clis_resolved_executable_and_preflight_runs_its_version_in_the_sandbox(tmp_path: Path):
    root = agent_project(tmp_path / "p")
    venv = tmp_path / "tools" / "venv"
    bin_dir = venv_agent_cli(venv)
    set_contract(root, replace={'command = "python3 agent/bot.py {prompt}"': 'command = "venvbot {prompt}"'})
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    code, out, _ = ratchet("check", str(root), "--preflight", env=env)
    assert code == 0, out
    agent = out["result"]["agent"]
    assert agent["program"]["resolved"] == str(bin_dir / "venvbot") and agent["will_run"] is True
    assert str(venv) in agent["bound"]
    assert agent["version"]["ok"] and agent["version"]["output"] == f"venvbot 1.0 {venv}"
    code, out, _ = ratchet("check", str(root))  # venvbot not on the PATH: it will not run, and check refuses it
    assert code == 2 and out["error"]["code"] == "contract.agent_not_found", out
    assert "venvbot is not found on the PATH" in out["error"]["message"]
