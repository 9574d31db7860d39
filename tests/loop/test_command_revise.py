"""A command agent's two ways to submit, and submit-then-revise, in real campaigns: an edit-only CLI
(a script that edits, writes REPORT.md and exits) has its workspace harvested as its submission
under `submit = "on_exit"` and is reminded, then given up on, under `submit = "channel"`; a session
told its verdict revises its change as the next attempt (`attempt.started` data.revises), in the same
CLI session when it can resume one, else a fresh one shown its diff (also after a kernel restart);
`max_submits = 1` ends every session at its first submission; an author that does not revise ends
its attempt, not the run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, ratchet
from repo_fixture import git

from ratchet.compute.sandbox import probe_bwrap
from ratchet.ledger.blobs import BlobStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not probe_bwrap().available, reason="the command agent needs a working bwrap")]

EDIT_BOT = '''"""An edit-only CLI: edits model/smooth.py, writes REPORT.md, prints its session, exits 0."""
import json, re, sys
message = open(sys.argv[1]).read()
revising = "was judged:" in message
window = %(revise)r if revising else %(first)r
if window is not None:
    source = open("model/smooth.py").read()
    if window == "comment":
        source += "\\n# a cosmetic change: the same smoothing\\n"
    else:
        source = re.sub(r"^WINDOW = \\d+", f"WINDOW = {window}", source, flags=re.M)
    open("model/smooth.py", "w").write(source)
    with open("REPORT.md", "w") as f:
        f.write(f"# window {window}\\n\\nHypothesis: a moving average over {window} samples denoises.\\n")
print("editbot: revising" if revising else "editbot: first leg", "argv", sys.argv[2:])
print(json.dumps({"session_id": "s-edit"}))
'''


def edit_project(root: Path, first: object, revise: object, contract: dict[str, str] | None = None) -> Path:
    """The agent example with its CLI replaced by the edit-only bot: `first` is the window of its
    first leg ("comment": a change measuring the same), `revise` that of a revision leg (None: no
    change); `contract` holds text replacements in ratchet.toml."""
    shutil.copytree(EXAMPLE, root)
    (root / "agent" / "editbot.py").write_text(EDIT_BOT % {"first": first, "revise": revise})
    replace = {"agent/bot.py {prompt}": "agent/editbot.py {prompt}", "max_attempts = 2": "max_attempts = 3",
               **(contract or {})}
    path = root / "ratchet.toml"
    text = path.read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


def legs_of(evs: list[dict]) -> list[tuple[int, str, str]]:
    return [(e["data"]["attempt"], e["data"]["kind"], e["data"]["outcome"]) for e in evs if e["kind"] == "agent.leg"]


def blobs_of(root: Path, run_id: str) -> BlobStore:
    return BlobStore(root / ".ratchet" / "runs" / run_id / "blobs")


def test_an_edit_only_cli_that_exits_with_changes_is_harvested_and_promoted(tmp_path: Path):
    root = edit_project(tmp_path / "p", first=25, revise=None)
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    run_id = out["result"]["run_id"]
    assert out["result"]["promotions"] == 1
    evs = events(root, run_id)
    assert legs_of(evs)[0] == (1, "start", "on_exit")
    harvested = next(e["data"] for e in evs if e["kind"] == "agent.harvested")
    assert harvested["use"] == "submit" and harvested["taken"] == ["model/smooth.py"]
    assert "REPORT.md" in harvested["ignored"], "the report is never part of the candidate"
    submitted = next(e["data"] for e in evs if e["kind"] == "attempt.submitted" and e["data"]["attempt"] == 1)
    report = blobs_of(root, run_id).get_bytes(submitted["report_blob"]).decode()
    assert report.startswith("# window 25") and submitted["summary"] == "window 25"
    promoted = next(e["data"] for e in evs if e["kind"] == "champion.promoted")
    assert git(root, "ls-tree", "--name-only", promoted["commit"]).split().count("REPORT.md") == 0
    prompt = blobs_of(root, run_id).get_bytes(next(e["data"] for e in evs if e["kind"] == "agent.leg")["message_blob"])
    assert b"write your report to `REPORT.md`" in prompt, "the prompt teaches the exit submission"


def test_under_submit_channel_the_same_cli_is_reminded_then_the_attempt_ends(tmp_path: Path):
    root = edit_project(tmp_path / "p", first=25, revise=None,
                        contract={'brief = "BRIEF.md"\n': 'brief = "BRIEF.md"\nsubmit = "channel"\n',
                                  "max_attempts = 3": "max_attempts = 1"})
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    evs = events(root, out["result"]["run_id"])
    assert legs_of(evs) == [(1, "start", "none"), (1, "nudge", "none")]
    assert not [e for e in evs if e["kind"] in ("agent.harvested", "attempt.submitted")]
    (gave_up,) = [e["data"] for e in evs if e["kind"] == "attempt.gave_up"]
    assert "again after a reminder" in gave_up["reason"]


def test_a_rejected_submission_is_revised_in_the_same_session_as_the_next_attempt(tmp_path: Path):
    wake = 'wake_command = "python3 agent/editbot.py {prompt} --resume {session}"\n'
    root = edit_project(tmp_path / "p", first="comment", revise=25,
                        contract={'brief = "BRIEF.md"\n': f'brief = "BRIEF.md"\n{wake}'})
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    run_id = out["result"]["run_id"]
    evs = events(root, run_id)
    assert legs_of(evs)[:2] == [(1, "start", "on_exit"), (2, "revise", "on_exit")]
    started = {e["data"]["attempt"]: e["data"] for e in evs if e["kind"] == "attempt.started"}
    assert "revises" not in started[1] and started[2]["revises"] == 1
    judged = {e["data"]["attempt"]: e["data"] for e in evs
              if e["kind"] == "trial.judged" and e["data"]["stage"] == "trial"}
    assert judged[1]["verdict"] != "accepted" and judged[2]["verdict"] == "accepted"
    assert [e["data"]["attempt"] for e in evs if e["kind"] == "champion.promoted"] == [2]
    blobs = blobs_of(root, run_id)
    revise = next(e["data"] for e in evs if e["kind"] == "agent.leg" and e["data"]["kind"] == "revise")
    argv = json.loads(blobs.get_bytes(revise["argv_blob"]))
    assert argv[-2:] == ["--resume", "s-edit"], "the revision continues the CLI's own session"
    message = blobs.get_bytes(revise["message_blob"]).decode()
    assert f"was judged: {judged[1]['verdict']} ({judged[1]['reason']})" in message
    assert "submission 2 of at most 3" in message and "judged as attempt 2" in message
    assert "## Your submitted change" not in message, "a resumed session holds its change: no diff is repeated"
    # The same workspace: the revision's harvest still takes the file the first submission changed.
    harvests = [e["data"] for e in evs if e["kind"] == "agent.harvested"]
    assert [h["attempt"] for h in harvests][:2] == [1, 2] and harvests[1]["taken"] == ["model/smooth.py"]
    code, report, _ = ratchet("report", run_id, "--attempt", "2", "--dir", str(root))
    assert code == 0 and report["result"]["revises"] == 1, report
    code, verified, _ = ratchet("verify", run_id, "--dir", str(root))
    assert code == 0, verified
    assert [leg["kind"] for leg in report["result"]["legs"]][:1] == ["revise"], report


def test_a_cli_without_a_session_is_shown_its_diff_and_max_submits_1_never_revises(tmp_path: Path):
    root = edit_project(tmp_path / "p", first="comment", revise=25)
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    run_id = out["result"]["run_id"]
    evs = events(root, run_id)
    revise = next(e["data"] for e in evs if e["kind"] == "agent.leg" and e["data"]["kind"] == "revise")
    message = blobs_of(root, run_id).get_bytes(revise["message_blob"]).decode()
    assert "## Your submitted change" in message and "+# a cosmetic change: the same smoothing" in message
    assert "# Ratchet, attempt 2" in message, "a fresh session is told the task again"

    once = edit_project(tmp_path / "q", first="comment", revise=25,
                        contract={'brief = "BRIEF.md"\n': 'brief = "BRIEF.md"\nmax_submits = 1\n',
                                  "max_attempts = 3": "max_attempts = 2"})
    code, out, _ = ratchet("run", str(once))
    assert code == 0, out
    evs = events(once, out["result"]["run_id"])
    assert [(a, k) for a, k, _ in legs_of(evs)] == [(1, "start"), (2, "start")]
    assert all("revises" not in e["data"] for e in evs if e["kind"] == "attempt.started")


def test_an_author_that_does_not_revise_ends_its_attempt_not_the_run(tmp_path: Path):
    root = edit_project(tmp_path / "p", first="comment", revise=None, contract={"max_attempts = 3": "max_attempts = 2"})
    code, out, _ = ratchet("run", str(root))
    assert code == 0, out
    assert out["result"]["stop_reason"] == "budget_exhausted"
    evs = events(root, out["result"]["run_id"])
    assert legs_of(evs) == [(1, "start", "on_exit"), (2, "revise", "none")]
    (gave_up,) = [e["data"] for e in evs if e["kind"] == "attempt.gave_up"]
    assert gave_up["attempt"] == 2 and "did not revise" in gave_up["reason"]
    assert "unresponsive" not in gave_up, "declining to revise is a choice, not an agent that did not work"


def test_a_kernel_killed_as_a_revision_starts_resumes_it_in_a_fresh_session_on_the_revised_tree(tmp_path: Path):
    root = edit_project(tmp_path / "p", first="comment", revise=25)
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:attempt.started:2"}
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env=env, timeout=300)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    assert [e["data"].get("revises") for e in events(root, run_id) if e["kind"] == "attempt.started"] == [None, 1]
    code, out, _ = ratchet("run", str(root), "--resume", run_id)
    assert code == 0, out
    evs = events(root, run_id)
    assert legs_of(evs)[:2] == [(1, "start", "on_exit"), (2, "revise", "on_exit")]
    revise = next(e["data"] for e in evs if e["kind"] == "agent.leg" and e["data"]["kind"] == "revise")
    message = blobs_of(root, run_id).get_bytes(revise["message_blob"]).decode()
    assert "+# a cosmetic change: the same smoothing" in message, "the fresh session is shown the change it revises"
    harvest = next(e["data"] for e in evs if e["kind"] == "agent.harvested" and e["data"]["attempt"] == 2)
    # Seeded with attempt 1's tree, the revision keeps its comment and adds the window.
    tree = harvest["tree"]
    source = git(root, "show", f"{tree}:model/smooth.py")
    assert "WINDOW = 25" in source and "# a cosmetic change" in source
    assert [e["data"]["attempt"] for e in evs if e["kind"] == "champion.promoted"] == [2]
