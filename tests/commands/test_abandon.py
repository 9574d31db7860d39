"""`ratchet abandon RUN` (issue 16, item 1): an interrupted run whose contract changed no longer
blocks the project; nothing of the run is deleted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, ratchet, rechain, set_contract

from ratchet.core.payloads import RunAbandoned, check_payload
from ratchet.ledger.lock import acquire_lock
from ratchet.loop.kernel import CRASH_AT_ENV
from ratchet.loop.life import interrupted_runs

pytestmark = pytest.mark.slow


def _killed_run(root: Path) -> str:
    """Start `ratchet run` and SIGKILL it right after attempt 1 starts; returns the run id."""
    env = {**os.environ, CRASH_AT_ENV: "after:attempt.started:1"}
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (run_id,) = os.listdir(root / ".ratchet" / "runs")
    return run_id


def _kept_files(run_dir: Path) -> set[str]:
    """The run's record (lock.pid and SQLite's -wal/-shm come and go with their writers)."""
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
            if p.name != "lock.pid" and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def project(make_repo, tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    set_contract(root, append='\n[sandbox]\nmode = "none"\n')
    return root


def test_a_changed_contract_blocks_both_ways_out_and_both_hints_name_abandon(project: Path):
    run_id = _killed_run(project)
    set_contract(project, replace={'name = "bench"': 'name = "bench2"'})
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "contract.changed"
    assert f"ratchet abandon {run_id}" in out["error"]["hint"]
    code, out, _ = ratchet("run", str(project))
    assert code == 2 and out["error"]["code"] == "run.interrupted_exists"
    assert f"ratchet abandon {run_id}" in out["error"]["hint"]


def test_abandon_stops_the_run_for_good_and_deletes_nothing(project: Path):
    run_id = _killed_run(project)
    run_dir = project / ".ratchet" / "runs" / run_id
    before_files = _kept_files(run_dir)
    before = events(project, run_id)

    code, out, err = ratchet("abandon", run_id, "--dir", str(project))
    assert code == 0, err
    assert out["result"] == {"run_id": run_id, "state_before": "running", "stop_reason": "abandoned",
                             "killed_jobs": []}
    after = events(project, run_id)
    assert after[: len(before)] == before and [e["kind"] for e in after[len(before):]] == ["run.abandoned"]
    abandoned = after[-1]["data"]
    check_payload(RunAbandoned.kind, abandoned)  # the documented payload: pid and reason, nothing else
    assert set(abandoned) == {"pid", "reason"} and "(state running)" in abandoned["reason"]
    assert before_files and before_files <= _kept_files(run_dir)
    assert interrupted_runs(project) == []  # a plain `ratchet run` is no longer blocked

    code, out, _ = ratchet("status", run_id, "--dir", str(project))
    assert code == 0 and out["result"]["state"] == "stopped" and out["result"]["stop_reason"] == "abandoned"
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "run.finished"
    code, out, _ = ratchet("abandon", run_id, "--dir", str(project))
    assert code == 2 and out["error"]["code"] == "run.finished"


def test_an_abandoned_run_keeps_the_wall_time_it_used(project: Path):
    from ratchet.core.state import fold
    from ratchet.ledger.events import scan_log

    run_id = _killed_run(project)
    ledger = project / ".ratchet" / "runs" / run_id / "events.jsonl"
    used = fold(scan_log(ledger)[0]).budget_used.wall_s
    assert used > 0, "the killed run spent its preflight and attempt 1's start: some wall time"
    code, _, err = ratchet("abandon", run_id, "--dir", str(project))
    assert code == 0, err
    code, out, _ = ratchet("status", run_id, "--dir", str(project))
    assert code == 0 and out["result"]["ledger"]["state_from"] == "index"  # the abandon synced the index
    assert out["result"]["budget"]["used"]["wall_s"] == pytest.approx(used)
    assert fold(scan_log(ledger)[0]).budget_used.wall_s == pytest.approx(used)


def test_abandon_refuses_a_run_another_process_is_writing_naming_its_pid(project: Path):
    run_id = _killed_run(project)
    with acquire_lock(project / ".ratchet" / "runs" / run_id):
        code, out, _ = ratchet("abandon", run_id, "--dir", str(project))
    assert code == 2 and out["error"]["code"] == "ledger.locked"
    assert f"pid {os.getpid()}" in out["error"]["message"]
    assert events(project, run_id)[-1]["kind"] == "attempt.started"


def test_abandon_of_an_unknown_run_is_refused(project: Path):
    code, out, _ = ratchet("abandon", "20260101-000000-abcd", "--dir", str(project))
    assert code == 2 and out["error"]["code"] == "run.not_found"


def test_a_run_whose_events_do_not_read_as_their_models_blocks_new_runs_until_abandoned(project: Path):
    run_id = _killed_run(project)
    ledger = project / ".ratchet" / "runs" / run_id / "events.jsonl"

    def drop_digest(event: dict) -> bool:
        return event["kind"] == "run.started" and event["data"].pop("contract_digest", None) is not None

    rechain(ledger, drop_digest)  # a chain-valid ledger whose run.started misses a required key
    assert interrupted_runs(project) == [run_id]
    code, out, _ = ratchet("run", str(project))
    assert code == 2 and out["error"]["code"] == "run.interrupted_exists"
    code, out, _ = ratchet("abandon", run_id, "--dir", str(project))
    assert code == 0 and out["result"]["state_before"] == "unreadable", out
    assert interrupted_runs(project) == []
    assert events(project, run_id)[-1]["kind"] == "run.abandoned"
