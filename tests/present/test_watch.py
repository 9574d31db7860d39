"""`ratchet watch`: one frame from a run's status and ledger tail, without its lock; live under tmux
through a crash, a resume and the run's end; `q` and Ctrl-C leave."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ratchet, set_contract
from repo_fixture import make_bench_repo

from ratchet.commands.watch import tail_events
from ratchet.core.payloads import PAYLOADS
from ratchet.present.watch import build_frame, current_trial, latest_launch, render_frame

PANE_WAIT_S = 60.0
"""How long a tmux test waits for text to appear in the pane (a generous bound, not a timing claim)."""


FILLERS = {
    "attempt.submitted": {"tree": "t", "summary": "s", "report_blob": None, "params": None},
    "trial.planned": {"plan_digest": "d", "plan_blob": "b", "level": 0.05},
    "job.finished": {"seed": 0, "reason": "ok", "elapsed_s": 1.0, "cpu_s": 1.0, "cached": False, "units_charged": 1},
    "trial.judged": {"reason": "r", "reason_text": "t", "estimate": None, "interval": None, "p_value": None,
                     "units": 0, "look": 0, "level": 0.05},
}
"""What a test's events do not care about, filled in so each is a valid payload."""


def _ev(kind: str, **data):
    return PAYLOADS[kind](**{**FILLERS.get(kind, {}), **data})


def _job(attempt: int, unit: int, variant: str, value: float, stage: str = "trial") -> list:
    job_id = f"a{attempt:04d}-{stage}-u{unit:03d}-{variant}"
    common = {"job_id": job_id, "attempt": attempt, "stage": stage, "variant": variant, "unit": unit}
    return [_ev("job.started", **common, pid=1), _ev("job.finished", **common, state="ok", value=value)]


def test_current_trial_counts_finished_pairs_and_the_look_they_reach():
    tail = [_ev("attempt.started", attempt=3), _ev("attempt.submitted", attempt=3),
            _ev("trial.planned", attempt=3, trial=3, stage="trial", looks=[2, 4], jobs=8)]
    for unit, (champ, cand) in enumerate([(1.0, 1.5), (2.0, 2.1), (1.0, 0.8)]):
        tail += _job(3, unit, "champion", champ) + _job(3, unit, "candidate", cand)
    tail += _job(3, 3, "champion", 5.0)[:1]  # started, not finished
    cur = current_trial(tail, {"target_kind": "benchmark", "direction": "max"})
    assert cur["pairs"] == 3 and cur["look"] == 2 and cur["jobs_running"] == 1
    # look 2's jobs (units 2 and 3), as `ratchet run`'s bar counts them; the trial's are 8
    assert (cur["jobs_done"], cur["jobs_total"], cur["trial_jobs"]) == (2, 4, 8)
    assert cur["estimate"] == pytest.approx((0.5 + 0.1 - 0.2) / 3) and cur["judged"] is None
    assert current_trial(tail, {"target_kind": "benchmark", "direction": "min"})["estimate"] == pytest.approx(
        -(0.5 + 0.1 - 0.2) / 3)
    judged = current_trial(tail + [_ev("trial.judged", attempt=3, stage="trial", verdict="rejected")], {})
    assert judged["judged"] == "rejected"


def test_watch_counts_a_looks_jobs_as_the_runner_measures_them():
    """The run's job bar counts `Plan.jobs_for_look(k)` (loop.trial.measure_looks); watch, reading
    only the ledger, must reach the same total and done at every look of a real plan."""
    from ratchet.core.plan import compile_plan

    looks = (8, 16, 32)
    plan = compile_plan(stage="trial", attempt=2, trial=2, champion_tree="a" * 40, candidate_tree="b" * 40,
                        target={"command": "python3 bench.py"}, looks=looks, run_salt="s")
    facts = {"target_kind": "benchmark", "direction": "max"}
    tail = [_ev("attempt.started", attempt=2),
            _ev("trial.planned", attempt=2, trial=2, stage="trial", looks=list(looks), jobs=len(plan.jobs))]
    for k in range(len(looks)):
        first, *rest = plan.jobs_for_look(k)
        tail += [_ev("job.started", job_id=first.job_id, attempt=2, stage="trial", variant=first.variant,
                     unit=first.unit, pid=1)]
        cur = current_trial(tail, facts)
        assert (cur["jobs_done"], cur["jobs_total"]) == (0, len(plan.jobs_for_look(k))), k
        for job in (first, *rest):
            tail += _job(2, job.unit, job.variant, 1.0)[1:]
        cur = current_trial(tail, facts)
        assert (cur["jobs_done"], cur["jobs_total"]) == (len(plan.jobs_for_look(k)),) * 2, k
        assert cur["trial_jobs"] == 64 and cur["jobs_running"] == 0


def test_an_interrupted_runs_jobs_are_not_shown_running():
    tail = [_ev("attempt.started", attempt=1),
            _ev("trial.planned", attempt=1, trial=1, stage="trial", looks=[4], jobs=8)]
    tail += _job(1, 0, "champion", 1.0)[:1] + _job(1, 0, "candidate", 1.0)[:1]
    status = {"run_id": "r", "state": "running", "champion": {"attempt": None}, "promotions": 0,
              "budget": {"used": {"attempts": 1}, "limits": {}}, "attempts": []}
    assert build_frame(status, tail, {})["current"]["jobs_running"] == 2
    for state in ("interrupted", "stopped"):
        frame = build_frame({**status, "state": state}, tail, {})
        assert frame["current"]["jobs_running"] == 0, state
        assert "running)" not in _text(render_frame(frame))


def test_the_preflight_shows_as_the_current_step_before_attempt_1():
    job = {"job_id": "a0000-preflight-u000-champion", "attempt": 0, "stage": "preflight", "variant": "champion",
           "unit": 0}
    tail = [_ev("job.started", **job, pid=1)]
    cur = current_trial(tail, {})
    assert cur == {"attempt": None, "stage": "preflight", "jobs_total": 1, "jobs_done": 0, "jobs_running": 1}
    status = {"run_id": "r", "state": "running", "champion": {"attempt": None}, "promotions": 0,
              "budget": {"used": {"attempts": 0}, "limits": {}}, "attempts": []}
    assert "preflight: the baseline measured once  jobs 0/1 (1 running)" in _text(
        render_frame(build_frame(status, tail, {})))


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


def test_an_attempt_without_a_plan_shows_the_agent_working_and_its_launch():
    tail = [_ev("attempt.started", attempt=5),
            _ev("agent.launched", attempt=5, launch=1, jobs=["a0005-launch1-j00", "a0005-launch1-j01"], note="probe")]
    tail += [_ev("job.finished", job_id="a0005-launch1-j00", attempt=5, stage="launch", variant="experiment", unit=0,
                 state="ok", value=1.0)]
    assert current_trial(tail, {}) == {"attempt": 5, "stage": None}
    assert latest_launch(tail) == {"attempt": 5, "launch": 1, "jobs": 2, "jobs_done": 1, "note": "probe"}


def test_the_tail_starts_at_the_last_attempt_and_leaves_out_a_line_being_written(finished_run, tmp_path: Path):
    root, run_id = finished_run
    ledger = tmp_path / "events.jsonl"
    lines = (root / ".ratchet" / "runs" / run_id / "events.jsonl").read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(lines) + b'{"data":{"attempt":7},"kind":"attempt.st')
    tail = tail_events(ledger, limit=1 << 20)
    kinds = [e.kind for e in tail]
    assert kinds[0] == "attempt.started" and tail[0].attempt == 6 and kinds[-1] == "run.stopped"
    assert tail_events(ledger, limit=4096)[-1].kind == "run.stopped"  # a short window: the tail only
    assert tail_events(tmp_path / "missing.jsonl") == []


def test_once_prints_one_frame_of_a_real_run(finished_run):
    root, run_id = finished_run
    code, out, err = ratchet("watch", "--once", "--dir", str(root))
    assert code == 0, err
    frame = out["result"]
    assert frame["run_id"] == run_id and frame["state"] == "stopped" and frame["attempts"] == 6
    assert frame["current"]["stage"] == "holdout" and frame["current"]["judged"] == "accepted"
    assert {b["name"] for b in frame["budgets"]} >= {"attempts", "job-units"}
    assert frame["budgets"][0] == {"name": "attempts", "used": 6, "limit": 6, "share": 1.0}
    human = subprocess.run([sys.executable, "-m", "ratchet", "watch", run_id, "--once", "--dir", str(root)],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"})
    assert human.returncode == 0, human.stderr
    assert "champion  attempt" in human.stdout and "last 6 of 6 attempts" in human.stdout


def test_a_frame_shows_what_the_status_result_holds():
    status = {"run_id": "r", "state": "running", "stop_reason": None, "stop_budget": None, "kernel_pid": 9,
              "champion": {"attempt": None}, "promotions": 0, "holdout": None,
              "budget": {"used": {"attempts": 2, "evaluations": 10, "cpu_hours": 0.5, "gpu_hours": 0.0, "wall_s": 60},
                         "limits": {"max_attempts": 4, "max_cpu_hours": 2.0}},
              "attempts": [{"attempt": n} for n in range(1, 12)]}
    frame = build_frame(status, [], {})
    assert [a["attempt"] for a in frame["last_attempts"]] == list(range(4, 12)) and frame["current"] is None
    budgets = {b["name"]: b for b in frame["budgets"]}
    assert budgets["CPU hours"]["share"] == 0.25 and budgets["job-units"]["limit"] is None
    assert "GPU hours" not in budgets  # neither limited nor used


class Tmux:
    """A private tmux server (its own socket, no config) with one pane running `command`."""

    def __init__(self, name: str, command: str, cwd: Path):
        self.base = ["tmux", "-L", name, "-f", "/dev/null"]
        subprocess.run([*self.base, "new-session", "-d", "-s", "w", "-x", "100", "-y", "45", "-c", str(cwd),
                        command], check=True, env=os.environ)

    def pane(self) -> str:
        return subprocess.run([*self.base, "capture-pane", "-p", "-t", "w"], capture_output=True, text=True,
                              check=True).stdout

    def wait_for(self, *needles: str) -> str:
        deadline = time.monotonic() + PANE_WAIT_S
        while True:
            text = self.pane()
            if all(n in text for n in needles):
                return text
            assert time.monotonic() < deadline, f"{needles} never appeared; the pane shows:\n{text}"
            time.sleep(0.3)

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "w", *keys], check=True)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


@pytest.fixture
def tmux(request):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (`.ci/run` installs it)")
    sessions = []

    def start(command: str, cwd: Path) -> Tmux:
        session = Tmux(f"ratchet-test-{os.getpid()}-{len(sessions)}", command, cwd)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def _watch_command(*args: str) -> str:
    # The pane's shell traps SIGINT (a handler, which its children do not inherit) so Ctrl-C reaches
    # watch alone and the shell lives on to print watch's exit code.
    return f"trap true INT; {sys.executable} -m ratchet watch {' '.join(args)}; echo WATCH-EXIT=$?; sleep 120"


@pytest.mark.slow
def test_watch_follows_a_run_through_a_crash_its_resume_and_its_end_under_tmux(tmux, small_run, tmp_path: Path):
    root = make_bench_repo(tmp_path / "repo")
    set_contract(root, append=small_run)
    crashed = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                             env={**os.environ, "RATCHET_TEST_CRASH_AT": "after:trial.judged:2"}, timeout=300)
    assert crashed.returncode == -signal.SIGKILL
    run_id = next((root / ".ratchet" / "runs").iterdir()).name
    pane = tmux(_watch_command(), root)
    pane.wait_for(run_id, "interrupted", "last 2 of 2 attempts", "q or Ctrl-C")
    resumed = subprocess.Popen([sys.executable, "-m", "ratchet", "run", str(root), "--resume", run_id, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert json.loads(out)["result"]["stop_reason"] == "budget_exhausted"
    text = pane.wait_for("stopped (budget_exhausted", "last 6 of 6 attempts", "holdout")
    assert "interrupted" not in text
    pane.keys("q")
    pane.wait_for("WATCH-EXIT=0")


@pytest.mark.slow
def test_watch_started_before_the_run_waits_for_it_then_follows_it_under_tmux(tmux, small_run, tmp_path: Path):
    root = make_bench_repo(tmp_path / "repo")
    set_contract(root, append=small_run)
    pane = tmux(_watch_command(), root)
    pane.wait_for("waiting for a run to start", "q or Ctrl-C to leave")
    run = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)["result"]["run_id"]
    text = pane.wait_for(run_id, "stopped (budget_exhausted", "last 6 of 6 attempts")
    assert "WATCH-EXIT" not in text and "run.not_found" not in text
    pane.keys("q")
    pane.wait_for("WATCH-EXIT=0")


@pytest.mark.slow
def test_ctrl_c_leaves_watch_cleanly_under_tmux(finished_run, tmux):
    root, run_id = finished_run
    pane = tmux(_watch_command(run_id), root)
    pane.wait_for("last 6 of 6 attempts")
    pane.keys("C-c")
    pane.wait_for("WATCH-EXIT=0")


def test_watch_without_a_run_says_so(tmp_path: Path):
    code, out, _ = ratchet("watch", "--once", "--dir", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "run.not_found" and "ratchet run" in out["error"]["hint"]
    code, out, _ = ratchet("watch", "not-a-run", "--dir", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "run.bad_id"


def test_a_tampered_ledger_is_an_error_for_once_and_a_line_in_the_live_view(finished_run, tmp_path: Path):
    from ratchet.commands.watch import live_frame
    from ratchet.ledger.rundir import RunDir
    from ratchet.present.watch import render_frame

    root, run_id = finished_run
    copy = tmp_path / "copy"
    shutil.copytree(root / ".ratchet", copy / ".ratchet")
    ledger = copy / ".ratchet" / "runs" / run_id / "events.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"attempt":1', b'"attempt":9')
    ledger.write_bytes(b"".join(lines))
    (ledger.parent / "index.sqlite").unlink()
    code, out, _ = ratchet("watch", run_id, "--once", "--dir", str(copy))
    assert code == 2 and out["error"]["code"].startswith("ledger.")
    frame = live_frame(RunDir(copy, run_id), {})
    assert frame["error"]["code"] == out["error"]["code"]
    assert "cannot read the ledger" in str(render_frame(frame))


def test_the_next_stop_is_the_budget_that_runs_out_first_at_the_mean_cost():
    from ratchet.present.watch import next_stop

    used = {"attempts": 4, "evaluations": 400, "cpu_hours": 0.1, "wall_s": 100.0}
    limits = {"max_attempts": 20, "max_evaluations": 1000, "max_wall_s": 3600}
    assert next_stop(used, limits) == {"budget": "job-units", "attempts_left": 6}
    assert next_stop({**used, "evaluations": 40}, limits) == {"budget": "attempts", "attempts_left": 16}
    assert next_stop({"attempts": 0}, limits) is None
