"""The command agent with real processes under bwrap and a real channel: the scripted example agent
end to end, and hostile agents each contained with a clear record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import venv_agent_cli

from ratchet.agents.base import GiveUp, Launch, Submit
from ratchet.agents.command.limits import LEG_OUTPUT_CAP_BYTES
from ratchet.core.errors import SandboxError
from ratchet.workspace.scope import check_scope

TOOL = ".ratchet-sys/ratchet-sys"


def test_the_scripted_agent_launches_sleeps_reads_results_and_submits(agent_project):
    p = agent_project
    action = p.attempt()
    assert isinstance(action, Submit), action
    assert p.git.read_blob(action.tree, "model/smooth.py").decode().count("WINDOW = 25") == 1
    assert p.git.read_blob(action.tree, "model/explore.py") is None
    assert "Hypothesis" in action.report and action.summary == "moving average, window 25"
    legs = p.recorder.legs()
    assert [(leg["kind"], leg["outcome"]) for leg in legs] == [("start", "launch"), ("wake", "submit")]
    prompt = p.recorder.text(legs[0]["message_blob"])
    assert "Make `model/smooth.py` denoise the signal better" in prompt  # the brief file
    wake = p.recorder.text(legs[1]["message_blob"])
    out = wake.split("## explore[1]", 1)[1]
    assert '<<<DATA stdout tail' in out and '"window": 25' in out.split(">>>END DATA", 1)[0]
    assert "results/explore/1/explore-result.json" in wake
    requests = p.recorder.text(legs[0]["requests_blob"])
    assert '"array": 2' in requests and '"artifacts": ["explore-result.json"]' in requests
    harvested = [d for k, d in p.recorder.events if k == "agent.harvested"]
    assert [h["use"] for h in harvested] == ["launch", "submit"]
    assert harvested[1]["taken"] == ["model/smooth.py"] and harvested[1]["violations"] == []
    assert all(leg["state"] == "ok" and leg["elapsed_s"] > 0 for leg in legs)


def test_an_agent_that_exits_without_a_request_is_nudged_once_then_gives_up(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "idle.sh", "echo thinking about it\n"))
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and not action.stops_campaign
    assert "again after a reminder" in action.reason
    legs = p.recorder.legs()
    assert [(leg["kind"], leg["outcome"]) for leg in legs] == [("start", "none"), ("nudge", "none")]
    assert "This is the only reminder" in p.recorder.text(legs[1]["message_blob"])


def test_an_agent_that_never_sleeps_is_killed_at_its_leg_limit_and_not_reminded(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "forever.sh", "while true; do sleep 1; done\n"), timeout_s=1.5)
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and not action.stops_campaign and action.unresponsive
    assert [(leg["state"], leg["outcome"]) for leg in p.recorder.legs()] == [("timeout", "none")]
    assert "timed out after 1.5 s" in action.reason


def test_a_cli_installed_in_a_venv_outside_usr_is_seen_and_runs_to_a_submit(agent_project, tmp_path: Path):
    p = agent_project
    bin_dir = venv_agent_cli(tmp_path / "tools" / "venv")  # invisible in a sandbox unless bound
    p.set_agent(f"{bin_dir}/venvbot {{prompt}}")
    action = p.attempt()
    assert isinstance(action, Submit), action
    assert p.git.read_blob(action.tree, "model/smooth.py").decode().count("WINDOW = 25") == 1
    legs = p.recorder.legs()
    assert [(leg["kind"], leg["outcome"]) for leg in legs] == [("start", "launch"), ("wake", "submit")]


def test_the_agents_sandbox_shows_sandbox_read_only(agent_project, write_script, tmp_path: Path):
    p = agent_project
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("read me\n")
    p.set_agent("sh " + write_script(p.root, "reads.sh", f"cat {shared}/notes.txt > report.txt || exit 0\n"
                                     f"{TOOL} submit --report-file report.txt\n"))
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp), "without sandbox.read_only the file is not there"
    (p.root / "ratchet.toml").write_text((p.root / "ratchet.toml").read_text() + f'read_only = ["{shared}"]\n')
    p.commit_contract()
    action = p.agent().start(p.context(2))
    assert isinstance(action, Submit) and action.report == "read me\n"


def test_a_command_that_does_not_exist_fails_to_start_with_bwraps_error_and_is_not_nudged(agent_project):
    p = agent_project
    p.set_agent("no-such-agent-cli --message-file {prompt}")
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and not action.stops_campaign and action.unresponsive
    (leg,) = p.recorder.legs()
    assert (leg["kind"], leg["outcome"]) == ("start", "start_failed")
    assert "bwrap: execvp no-such-agent-cli: No such file or directory" in leg["problem"]
    assert "no-such-agent-cli is not found on the PATH" in leg["problem"]
    assert "execvp no-such-agent-cli" in action.reason


def test_a_cli_that_fails_at_once_without_touching_anything_shows_its_stderr(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "nokey.sh", "echo 'Error: OPENAI_API_KEY is not set' >&2\nexit 3\n"))
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and action.unresponsive
    (leg,) = p.recorder.legs()
    assert leg["outcome"] == "start_failed" and leg["exit_code"] == 3
    assert "Error: OPENAI_API_KEY is not set" in leg["problem"] and "Error: OPENAI_API_KEY" in action.reason


def test_a_cli_that_fails_at_once_after_changing_a_file_was_working_and_is_reminded(agent_project, write_script):
    p = agent_project
    p.set_agent("sh " + write_script(p.root, "edits.sh", "echo '# tried' >> model/smooth.py\nexit 3\n"))
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and "again after a reminder" in action.reason
    assert action.unresponsive, "two legs without a request returned nothing usable"
    assert [leg["outcome"] for leg in p.recorder.legs()] == ["none", "none"]


def test_a_daemon_forked_by_the_agent_dies_with_its_leg(agent_project, write_script):
    p = agent_project
    body = ("(setsid sh -c 'while true; do echo tick >> daemon.log; sleep 0.05; done' &)\n"
            f"sleep 0.5\n{TOOL} submit --report 'left a daemon behind'\n")
    p.set_agent("sh " + write_script(p.root, "daemon.sh", body))
    agent = p.agent()
    action = agent.start(p.context())
    assert isinstance(action, Submit)
    log = agent.attempt.workspace / "daemon.log"
    size = log.stat().st_size
    assert size > 0
    time.sleep(0.5)
    assert log.stat().st_size == size, "the daemon kept writing after the leg ended"
    harvested = [d for k, d in p.recorder.events if k == "agent.harvested"]
    assert "daemon.log" in harvested[0]["ignored"]


def test_an_agent_editing_the_contract_or_the_benchmark_is_a_scope_violation(agent_project, write_script):
    p = agent_project
    body = ("echo 'print(\"{\\\"score\\\": 1000}\")' > bench.py\necho '# mine' >> ratchet.toml\n"
            f"echo 'WINDOW = 7' >> model/smooth.py\n{TOOL} submit --report 'better numbers'\n")
    p.set_agent("sh " + write_script(p.root, "cheat.sh", body))
    action = p.agent().start(p.context())
    assert isinstance(action, Submit)
    c = p.contract
    report = check_scope(p.git.diff_entries(p.git.tree_of("HEAD"), action.tree), c.scope.allowed,
                         c.protected_paths, c.hidden_paths)
    assert not report.ok
    assert {v.split(":")[0] for v in report.violations} == {"bench.py", "ratchet.toml"}
    (harvested,) = [d for k, d in p.recorder.events if k == "agent.harvested"]
    assert {v.split(":")[0] for v in harvested["violations"]} == {"bench.py", "ratchet.toml"}


def test_an_agent_cannot_write_outside_its_workspace(agent_project, write_script):
    p = agent_project
    targets = [p.root / "pwned", p.work / "pwned", p.root.parent / "pwned", "/usr/pwned"]
    body = "".join(f"echo x > {t} 2>/dev/null && echo wrote {t} >> model/escapes.txt\n" for t in targets)
    body += f"touch model/escapes.txt\n{TOOL} submit --report 'tried to escape'\n"
    p.set_agent("sh " + write_script(p.root, "escape.sh", body))
    action = p.agent().start(p.context())
    assert isinstance(action, Submit)
    escapes = p.git.read_blob(action.tree, "model/escapes.txt").decode()
    assert str(p.root / "pwned") not in escapes and "/usr/pwned" not in escapes  # not even visible
    # nor on the host (test_command_sandbox.py: such writes fail inside the sandbox too)
    assert not any(Path(t).exists() for t in targets)


def test_an_agent_sees_only_the_passed_variables_of_the_operators_environment(agent_project, write_script,
                                                                              monkeypatch):
    p = agent_project
    monkeypatch.setenv("OPERATOR_SECRET", "hunter2-operator")
    monkeypatch.setenv("MODEL_KEY", "model-key-1")
    body = ("env > model/env.txt\nfor f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done >> model/env.txt\n"
            f"{TOOL} submit --report 'dumped what I can see'\n")
    p.set_agent("sh " + write_script(p.root, "env.sh", body), pass_env=["MODEL_KEY"])
    action = p.agent().start(p.context())
    seen = p.git.read_blob(action.tree, "model/env.txt").decode()
    assert "MODEL_KEY=model-key-1" in seen
    assert "hunter2-operator" not in seen


def test_a_channel_replaced_by_a_symlink_ends_the_attempt_not_the_campaign(agent_project, write_script,
                                                                            tmp_path):
    p = agent_project
    body = (f"{TOOL} launch --name a -- true\nrm -rf .ratchet-sys\nmkdir -p /tmp/x\nln -s /tmp/x .ratchet-sys\n"
            "echo swapped the channel for a symlink\n")
    p.set_agent("sh " + write_script(p.root, "swap.sh", body))
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and not action.stops_campaign
    assert "symlink" in action.reason
    leg = p.recorder.legs()[-1]
    assert leg["outcome"] == "channel_refused"
    assert p.recorder.text(leg["stdout_blob"]).endswith("swapped the channel for a symlink\n"), \
        "the refused leg's output is kept"


def test_requests_refused_by_the_kernel_are_named_in_the_next_wake(agent_project, write_script):
    p = agent_project
    bad = '{"kind": "launch", "name": "b", "command": "true", "array": true}'
    body = (f"mkdir -p .ratchet-sys/requests\necho '{bad}' > .ratchet-sys/requests/0001-b.json\n"
            f"{TOOL} launch --name ok --minutes 1 -- true\n{TOOL} sleep\n")
    p.set_agent("sh " + write_script(p.root, "bad.sh", body))
    agent = p.agent()
    action = agent.start(p.context())
    assert isinstance(action, Launch) and [j.group for j in action.jobs] == ["ok"]
    assert action.jobs[0].env == {"SWEEP_INDEX": "0"}
    assert any("array: Input should be a valid integer" in n for n in agent.attempt.notices)


def test_without_a_working_bwrap_the_command_agent_is_refused_with_exit_2(agent_project):
    with pytest.raises(SandboxError) as err:
        agent_project.agent(bwrap="/bin/false")
    assert err.value.code == "agent.sandbox_unavailable" and err.value.exit_code == 2


def test_a_restarted_kernel_resumes_mid_launch_and_wakes_the_agent_once(agent_project):
    from command_drive import LaunchSettings, run_launch

    from ratchet.compute.base import SandboxSpec

    p = agent_project
    first = p.agent()
    launch = first.start(p.context())
    assert isinstance(launch, Launch) and len(launch.jobs) == 2
    # the kernel dies here, after the leg was recorded and before the launches ran; a new one resumes
    legs = p.recorder.leg_payloads()
    second = p.agent()
    assert second.resume(p.context(), legs, lambda digest: p.recorder.blobs[digest])
    settings = LaunchSettings(p.work / "launches", metric="score", sandbox=SandboxSpec("bwrap", False))
    action = second.wake(p.context(), run_launch(p.git, launch, 1, 1, settings))
    assert isinstance(action, Submit) and "WINDOW = 25" in p.git.read_blob(action.tree, "model/smooth.py").decode()
    assert [(leg["kind"], leg["leg"]) for leg in p.recorder.legs()] == [("start", 1), ("wake", 2)]


def test_nothing_to_resume_before_a_leg_was_recorded(agent_project):
    assert not agent_project.agent().resume(agent_project.context(), [], lambda d: b"")


def test_each_leg_records_its_command_line_and_its_output_as_blobs(agent_project, write_script):
    p = agent_project
    body = f"echo thinking\necho 'a warning' >&2\n{TOOL} submit --report 'done'\necho after the submit\n"
    p.set_agent("sh " + write_script(p.root, "talk.sh", body) + " {prompt}")
    action = p.agent().start(p.context())
    assert isinstance(action, Submit)
    (leg,) = p.recorder.legs()
    argv = json.loads(p.recorder.blobs[leg["argv_blob"]])
    assert argv[0].startswith("/") and Path(argv[0]).name == "sh", "the program as found on the leg's PATH"
    assert argv[1:2] == ["agent/talk.sh"] and argv[2].endswith("/.ratchet-sys/prompt.md")
    out = p.recorder.text(leg["stdout_blob"])
    assert out.startswith("thinking\n") and out.endswith("after the submit\n")
    assert p.recorder.text(leg["stderr_blob"]) == "a warning\n"
    assert (leg["stdout_bytes"], leg["stderr_bytes"]) == (len(out.encode()), len(b"a warning\n"))
    assert leg["stdout_truncated"] is False and leg["stderr_truncated"] is False


def test_a_leg_printing_more_than_the_cap_keeps_the_end_and_says_it_was_cut(agent_project, write_script):
    p = agent_project
    body = f"seq 1 100000\n{TOOL} submit --report 'loud'\necho LAST LINE\n"
    p.set_agent("sh " + write_script(p.root, "loud.sh", body))
    assert isinstance(p.agent().start(p.context()), Submit)
    (leg,) = p.recorder.legs()
    kept = p.recorder.blobs[leg["stdout_blob"]]
    numbers = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert len(kept) == LEG_OUTPUT_CAP_BYTES and kept.endswith(b"\nLAST LINE\n")
    assert leg["stdout_truncated"] is True and leg["stdout_bytes"] > len(numbers) > LEG_OUTPUT_CAP_BYTES
    after_numbers = leg["stdout_bytes"] - len(numbers)  # what the tool said, then LAST LINE
    stream = numbers + kept[-after_numbers:]
    assert kept == stream[-LEG_OUTPUT_CAP_BYTES:], "the blob is the stream's last bytes, contiguous"
    assert leg["stderr_truncated"] is False and p.recorder.blobs[leg["stderr_blob"]] == b""


def test_a_missing_binary_leaves_its_error_in_the_legs_record(agent_project):
    p = agent_project
    p.set_agent("no-such-agent-cli {prompt}")
    action = p.agent().start(p.context())
    assert isinstance(action, GiveUp) and action.unresponsive
    (leg,) = p.recorder.legs()  # start_failed: not reminded
    assert leg["outcome"] == "start_failed" and leg["exit_code"] != 0
    assert "no-such-agent-cli" in p.recorder.text(leg["stderr_blob"])
    assert json.loads(p.recorder.blobs[leg["argv_blob"]])[0] == "no-such-agent-cli", "not found: run as written"
