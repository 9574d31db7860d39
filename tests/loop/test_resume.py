"""Crash safety (issue #6): `ratchet run` killed with SIGKILL at many points, then resumed with
`--resume RUN_ID`, loses nothing and doubles nothing; Ctrl-C stops cleanly; orphans are killed.

How the comparison is made meaningful: unit seeds come from a random per-run salt, so two runs
never share seeds. The benchmark here therefore ignores the seed: its noise is drawn from the job
id (`a0002-trial-u003-candidate`, identical in every run of the same contract), so every job of
every run of this contract measures exactly the same number. A killed-and-resumed run must then
reproduce an uninterrupted reference run exactly: the same job ids finished once each, the same
verdicts, estimates, intervals and p-values, the same champion tree, the same holdout.

Kills come from two places: from outside (the test sends SIGKILL while a job sleeps, or truncates
the ledger's last line as a mid-write kill would), and from inside through the kernel's test hook
`RATCHET_TEST_CRASH_AT=before|after:<event kind>:<n>` (an exact step: between a job's end and its
`job.finished`, between a branch update and `champion.promoted`, ...). Jobs run with
`sandbox.mode = "none"`, so a killed kernel's jobs really survive it (bwrap would take them down
with it): every benchmark process appends its pid to a file, and no process listed there may be
alive once a resume has finished.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import events, ratchet, rechain

from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.plan import unit_seeds
from ratchet.ledger.events import read_events
from ratchet.loop.kernel import CRASH_AT_ENV
from ratchet.loop.life import interrupted_runs

pytestmark = pytest.mark.slow

BENCH = """\
import json, os, random, re, sys, time, tomllib

SHARED = {shared!r}
with open("/proc/self/stat") as f:
    started = f.read().rsplit(")", 1)[1].split()[19]  # start time: tells a reused pid apart
with open(os.path.join(SHARED, "pids"), "a") as f:
    f.write(f"{{os.getpid()}} {{started}}\\n")
job = os.environ.get("RATCHET_JOB_ID", "")
try:
    with open(os.path.join(SHARED, "slow")) as f:
        slow = f.read().strip()
except FileNotFoundError:
    slow = ""
if slow and slow in job:
    time.sleep(60)  # a long job the test can kill the kernel under
with open("params.toml", "rb") as f:
    x = float(tomllib.load(f).get("x", 0.0))
# Noise from the job id (without a retry suffix), not the seed: the same in every run of this contract.
noise = random.Random(re.sub(r"-r\\d+$", "", job)).gauss(0.0, 0.1)
print(json.dumps({{"score": -(x - 3.0) ** 2 + noise}}))
"""

# Campaign seed 10 makes the search agent (Optuna, seeded per attempt) propose x = 0.59, 2.72, -0.51:
# attempt 1 is promoted, attempt 2 is promoted over it, attempt 3 is rejected; then the holdout.
CONTRACT = """\
[campaign]
name = "resume"
seed = 10

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
direction = "max"
timeout_s = 120

[scope]
allowed = ["params.toml"]
protected = ["bench.py"]

[agent]
kind = "search"

[agent.search]
file = "params.toml"

[agent.search.space]
x = { type = "float", low = -5.0, high = 5.0 }

[gate]
units = [4, 8]
holdout_units = 8

[budget]
max_attempts = 3
max_evaluations = 150

[compute]
max_parallel = 2

[sandbox]
mode = "none"
"""

CAMPAIGN_SEED = 10
MAX_EVALUATIONS = 150
WAIT_S = 60.0


# -- fixtures and helpers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    """The directory bench.py writes pids to and reads its `slow` switch from (one per module, so
    every repository of this module holds byte-identical files and the same git trees)."""
    return tmp_path_factory.mktemp("resume-shared")


@pytest.fixture
def project(make_repo, shared: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh repository with the deterministic benchmark and CONTRACT."""
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH.format(shared=str(shared)),
                                                "ratchet.toml": CONTRACT})
    yield root
    _slow(shared, "")
    for pid in _alive_benches(shared):  # never leave a sleeping benchmark behind a failed test
        os.kill(pid, signal.SIGKILL)


_ONCE: dict[str, Any] = {}
"""Scenarios several tests read, run once per session (function-scoped fixtures such as make_repo
cannot feed a module-scoped one)."""


@pytest.fixture
def reference(make_repo, shared: Path, tmp_path_factory) -> dict[str, Any]:
    """An uninterrupted run of CONTRACT: its outcome and ledger facts."""
    if "reference" not in _ONCE:
        root = make_repo(tmp_path_factory.mktemp("reference") / "repo",
                         files={"bench.py": BENCH.format(shared=str(shared)), "ratchet.toml": CONTRACT})
        code, out, err = ratchet("run", str(root))
        assert code == 0, err
        facts = _facts(root, out["result"]["run_id"])
        # The contract exercises what the kill points need: two promotions, a rejection, the holdout.
        assert facts["status"]["promotions"] == 2, err
        verdicts = [a["verdict"] for a in facts["status"]["attempts"]]
        assert verdicts == ["accepted", "accepted", "rejected"], err
        assert facts["status"]["holdout"]["verdict"] == "accepted"
        _ONCE["reference"] = facts
    return _ONCE["reference"]


def _git(root: Path, *args: str) -> str:
    """Read-only git in `root` (rev-parse, rev-list): stdout, stripped."""
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


class Child:
    """`python -m ratchet run ROOT [--resume RUN_ID] --json` running in the background."""

    def __init__(self, root: Path, *args: str, crash_at: str | None = None):
        env = {k: v for k, v in os.environ.items() if k != CRASH_AT_ENV}
        if crash_at:
            env[CRASH_AT_ENV] = crash_at
        self.root = root
        self.out = root.parent / f"stdout-{time.monotonic_ns()}"
        self.err = self.out.with_name(self.out.name.replace("stdout", "stderr"))
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "ratchet", "run", str(root), *args, "--json"],
                                         stdout=out, stderr=err, env=env)

    def wait(self, timeout: float = 120) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.wait() == -signal.SIGKILL

    def envelope(self) -> dict[str, Any]:
        lines = [line for line in self.out.read_text().splitlines() if line.strip()]
        assert len(lines) == 1, f"stdout {lines!r}\nstderr: {self.stderr()}"
        return json.loads(lines[0])

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")


def _slow(shared: Path, job_part: str) -> None:
    """Make benchmark jobs whose id contains `job_part` sleep for a minute ("" : none)."""
    (shared / "slow").write_text(job_part)


def _alive_benches(shared: Path) -> list[int]:
    """Benchmark processes of this module still running: pids from the pid file whose process has
    the same start time (pids wrap, and other test runs start bench.py too) and is not a zombie."""
    alive = []
    path = shared / "pids"
    for line in path.read_text().splitlines() if path.exists() else []:
        pid, started = line.split()
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat[19] == started and stat[0] not in ("Z", "X"):
            alive.append(int(pid))
    return alive


def _run_id(root: Path) -> str:
    runs = sorted(p.name for p in (root / ".ratchet" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def _ledger(root: Path) -> list[dict[str, Any]]:
    """The complete lines of the (single) run's ledger; a torn last line is left out."""
    runs = root / ".ratchet" / "runs"
    if not runs.exists() or not any(runs.iterdir()):
        return []
    raw = (runs / _run_id(root) / "events.jsonl")
    if not raw.exists():
        return []
    out = []
    for line in raw.read_bytes().split(b"\n")[:-1]:
        try:
            out.append(json.loads(line))
        except ValueError:
            break
    return out


def _wait_for(root: Path, what: Callable[[list[dict[str, Any]]], bool], child: Child) -> None:
    deadline = time.monotonic() + WAIT_S
    while not what(_ledger(root)):
        assert child.proc.poll() is None, f"the run ended before the kill point\n{child.stderr()}"
        assert time.monotonic() < deadline, f"kill point not reached\n{child.stderr()}"
        time.sleep(0.02)


def _running(ledger: list[dict[str, Any]]) -> set[str]:
    """Job ids started and not finished in `ledger`."""
    started = {e["data"]["job_id"] for e in ledger if e["kind"] == "job.started"}
    return started - {e["data"]["job_id"] for e in ledger if e["kind"] == "job.finished"}


def _resume(root: Path, run_id: str, crash_at: str | None = None, timeout: float = 120) -> Child:
    child = Child(root, "--resume", run_id, crash_at=crash_at)
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(f"the resume did not finish in {timeout} s\n{child.stderr()[-3000:]}") from None
    return child


def _facts(root: Path, run_id: str) -> dict[str, Any]:
    """What a finished run must agree on with the reference, after checking the ledger verifies."""
    path = root / ".ratchet" / "runs" / run_id / "events.jsonl"
    verified = read_events(path)  # seq contiguous from 0, hash chain intact, no torn line
    assert [e.seq for e in verified] == list(range(len(verified)))
    code, out, err = ratchet("status", run_id, "--dir", str(root))
    assert code == 0, err
    status = out["result"]
    evs = events(root, run_id)
    finished = Counter(e["data"]["job_id"] for e in evs  # a job a stop cancelled ran again: counted once
                       if e["kind"] == "job.finished" and e["data"]["state"] != "cancelled")
    started = Counter(e["data"]["job_id"] for e in evs if e["kind"] == "job.started")
    return {
        "status": status,
        "events": evs,
        "finished": finished,
        "started": started,
        "attempts_started": Counter(e["data"]["attempt"] for e in evs if e["kind"] == "attempt.started"),
        "promoted": [e["data"] for e in evs if e["kind"] == "champion.promoted"],
        "branch": _git(root, "rev-list", f"ratchet/{run_id}/champion") if status["promotions"] else "",
    }


def _numbers(status: dict[str, Any]) -> dict[str, Any]:
    """The report's numbers: stop reason, champion tree and estimate, holdout, every attempt's row."""
    return {
        "state": status["state"],
        "stop_reason": status["stop_reason"],
        "stop_budget": status["stop_budget"],
        "promotions": status["promotions"],
        "champion": {k: status["champion"][k] for k in ("tree", "estimate", "interval", "attempt")},
        "holdout": status["holdout"],
        "attempts": [{k: v for k, v in a.items()} for a in status["attempts"]],
        "evaluations": status["budget"]["used"]["evaluations"],
        "attempts_used": status["budget"]["used"]["attempts"],
    }


def assert_like_reference(root: Path, run_id: str, reference: dict[str, Any], rerun: int,
                          shared: Path) -> dict[str, Any]:
    """The resumed run lost nothing and doubled nothing: see the module docstring. `rerun`: the
    jobs that were running at the kills (the only ones allowed to start twice)."""
    facts = _facts(root, run_id)
    assert facts["status"]["state"] == "stopped", facts["status"]
    assert all(n == 1 for n in facts["attempts_started"].values()), facts["attempts_started"]
    assert sorted(facts["attempts_started"]) == list(range(1, len(facts["attempts_started"]) + 1))
    doubled = [job for job, n in facts["finished"].items() if n > 1]
    assert not doubled, f"jobs finished twice: {doubled}"
    assert set(facts["finished"]) == set(facts["started"]), "a started job never finished"
    assert facts["finished"] == reference["finished"], "not the reference's jobs"
    assert sum(facts["started"].values()) == sum(reference["started"].values()) + rerun, (
        "jobs were started again beyond those running at the kills")
    assert facts["status"]["budget"]["used"]["evaluations"] <= MAX_EVALUATIONS
    assert _numbers(facts["status"]) == _numbers(reference["status"])
    assert [p["tree"] for p in facts["promoted"]] == [p["tree"] for p in reference["promoted"]]
    # One commit per promotion on the champion branch (plus the baseline), the last one recorded.
    assert len(facts["branch"].split()) == len(reference["branch"].split())
    assert facts["branch"].split()[0] == facts["status"]["champion"]["commit"]
    assert (root / ".ratchet" / "runs" / run_id / "report.md").exists()
    _assert_seeds_from_the_recorded_salt(root, run_id, facts["events"])
    assert not _alive_benches(shared), "a job process of the killed run is still alive"
    assert not (root / ".ratchet" / "runs" / run_id / "pids").exists() or not any(
        (root / ".ratchet" / "runs" / run_id / "pids").glob("*.pid"))
    return facts


def _assert_seeds_from_the_recorded_salt(root: Path, run_id: str, evs: list[dict[str, Any]]) -> None:
    """Every plan's unit seeds derive from run.started's salt (the one in the run directory), and
    every job ran with its plan's seed, whichever session ran it (the benchmark ignores seeds, so
    the numbers alone would not show a resume drawing a fresh salt)."""
    run_dir = root / ".ratchet" / "runs" / run_id
    salt = evs[0]["data"]["salt"]
    assert evs[0]["kind"] == "run.started" and (run_dir / "salt").read_text() == salt
    ran = {e["data"]["job_id"]: e["data"]["seed"] for e in evs if e["kind"] == "job.finished"}
    for planned in (e["data"] for e in evs if e["kind"] == "trial.planned"):
        plan = json.loads((run_dir / "blobs" / planned["plan_blob"].split(":")[1]).read_text())
        assert plan["units"] == list(unit_seeds(CAMPAIGN_SEED, salt, plan["stage"], plan["trial"],
                                                len(plan["units"])))
        for job in plan["jobs"]:
            assert ran.get(job["job_id"], job["seed"]) == job["seed"], job["job_id"]


# -- kills from outside ---------------------------------------------------------------------------


def _slow_running(ledger: list[dict[str, Any]], slow_jobs: str) -> int:
    return len({job for job in _running(ledger) if slow_jobs in job})


def _kill_while_slow_jobs_run(child: Child, root: Path, shared: Path, slow_jobs: str) -> set[str]:
    """Wait until two jobs whose id contains `slow_jobs` run (and their benchmarks live), SIGKILL
    the kernel, check the jobs outlived it; returns the job ids running at the kill."""
    _wait_for(root, lambda ledger: _slow_running(ledger, slow_jobs) == 2 and len(_alive_benches(shared)) == 2,
              child)
    child.kill()
    interrupted = _running(_ledger(root))
    assert len(interrupted) == 2 and all(slow_jobs in job for job in interrupted), interrupted
    # The killed kernel's jobs outlive it (own sessions, no sandbox): the resume must kill them.
    assert len(_alive_benches(shared)) == 2
    return interrupted


def test_sigkill_from_outside_during_a_trial_job_and_the_holdout_then_resume(project: Path, shared: Path,
                                                                            reference: dict):
    _slow(shared, "a0002-trial")
    interrupted = _kill_while_slow_jobs_run(Child(project), project, shared, "a0002-trial")
    run_id = _run_id(project)
    code, out, _ = ratchet("status", run_id, "--dir", str(project))
    assert code == 0 and out["result"]["state"] == "interrupted" and out["result"]["kernel_pid"] is None
    # As if the kernel had died between starting these jobs and recording their pids: the resume
    # still finds them (by the scratch directory in their environment) and kills them.
    for record in (project / ".ratchet" / "runs" / run_id / "pids").glob("*.pid"):
        record.unlink()

    _slow(shared, "holdout")  # the resume kills the first kernel's orphans, then is killed in turn
    interrupted |= _kill_while_slow_jobs_run(Child(project, "--resume", run_id), project, shared, "holdout")

    _slow(shared, "")
    resumed = _resume(project, run_id)
    assert resumed.proc.returncode == 0, resumed.stderr()
    assert resumed.envelope()["result"]["stop_reason"] == "budget_exhausted"
    facts = assert_like_reference(project, run_id, reference, rerun=len(interrupted), shared=shared)
    kinds = [e["kind"] for e in facts["events"]]
    assert kinds.count("run.started") == 1 and kinds.count("run.resumed") == 2
    assert kinds.count("run.stopped") == 1 and kinds[-1] == "run.stopped"
    assert all(facts["started"][job] == 2 for job in interrupted)
    for job in interrupted:  # re-run from scratch: one complete output, nothing of the killed try
        out = (project / ".ratchet" / "runs" / run_id / "jobs" / job / "stdout").read_text()
        assert len(out.splitlines()) == 1 and "score" in out


def test_torn_last_line_is_repaired_and_the_downtime_is_not_charged(project: Path, shared: Path,
                                                                    reference: dict):
    child = Child(project, crash_at="after:job.finished:20")
    assert child.wait() == -signal.SIGKILL
    run_id = _run_id(project)
    path = project / ".ratchet" / "runs" / run_id / "events.jsonl"
    raw = path.read_bytes()
    last = raw[:-1].rfind(b"\n") + 1
    lost = json.loads(raw[last:])
    assert lost["kind"] == "job.finished"
    path.write_bytes(raw[: last + (len(raw) - last) // 2])  # a write cut in the middle of the line
    code, out, _ = ratchet("status", run_id, "--dir", str(project))
    assert code == 0 and "torn" in out["result"]["warnings"][0]
    code, out, _ = ratchet("run", str(project))  # a plain run points at the torn run
    assert code == 2 and out["error"]["code"] == "run.interrupted_exists"
    downtime_s = 2.0
    time.sleep(downtime_s)

    rerun = _running(_ledger(project))
    assert lost["data"]["job_id"] in rerun

    resumed = _resume(project, run_id)
    assert resumed.proc.returncode == 0, resumed.stderr()
    # The job whose job.finished was torn away is measured again: one more start, one finish.
    facts = assert_like_reference(project, run_id, reference, rerun=len(rerun), shared=shared)
    repaired = [e for e in facts["events"] if e["kind"] == "ledger.repaired"]
    assert len(repaired) == 1 and repaired[0]["data"]["line"] == lost["seq"] + 1
    assert facts["started"][lost["data"]["job_id"]] == 2
    # Wall time is charged per session: the seconds between the kill and the resume are not.
    first, final = facts["events"][0]["ts"], facts["events"][-1]["ts"]
    span = (_ts(final) - _ts(first)).total_seconds()
    assert facts["status"]["budget"]["used"]["wall_s"] <= span - downtime_s, (span, facts["status"]["budget"])


def _ts(text: str):
    import datetime as dt

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- kills at exact steps (the kernel's test hook) ------------------------------------------------


CHAINS = {
    "attempt-1": (
        # job.finished: 1 the preflight, 2-9 attempt 1's trial (4 units), 10-25 its confirmation (8
        # fresh units), 26-49 attempt 2, 50-57 attempt 3's trial, 58-73 the holdout.
        "before:job.finished:5",  # between a job's end (result.json written) and its job.finished
        "before:trial.judged:1",  # attempt 1's trial jobs all measured, the verdict not recorded
        "after:trial.judged:1",  # attempt 1 accepted by its trial, the confirmation not planned
        "before:champion.promoted:1",  # the champion branch created, the promotion not recorded
        "after:attempt.started:2",  # attempt 2 started, the agent not asked yet
    ),
    "attempt-2-to-stop": (
        "before:champion.promoted:2",  # the champion branch moved, the promotion not recorded
        "after:attempt.submitted:3",  # attempt 3 submitted, its trial not planned
        "before:job.finished:53",  # attempt 3's trial jobs: a job ended, its event not written
        "after:trial.planned:6",  # the holdout planned, none of its jobs started
        "before:run.stopped:1",  # the holdout judged, the stop not recorded
    ),
}


@pytest.mark.parametrize("chain", list(CHAINS))
def test_kills_at_exact_steps_resumed_each_time_cost_only_the_jobs_they_interrupted(
        project: Path, shared: Path, reference: dict, chain: str):
    run_id, rerun, branch_at_kill = None, 0, {}
    for crash_at in CHAINS[chain]:
        args = ("--resume", run_id) if run_id else ()
        child = Child(project, *args, crash_at=crash_at)
        assert child.wait() == -signal.SIGKILL, f"{crash_at}: {child.stderr()[-3000:]}"
        run_id = _run_id(project)
        at_kill = _ledger(project)
        running = len(_running(at_kill))
        # Only a kill between a job's end and its event leaves jobs to run again (that one, and maybe
        # the one running beside it); every other step runs while no job does.
        assert running >= 1 if crash_at.startswith("before:job.finished") else running == 0, crash_at
        rerun += running
        if crash_at.startswith("before:champion.promoted"):
            head = _git(project, "rev-parse", f"ratchet/{run_id}/champion")
            assert head not in {e["data"]["commit"] for e in at_kill if e["kind"] == "champion.promoted"}
            branch_at_kill[int(crash_at.rsplit(":", 1)[1])] = head

    resumed = _resume(project, run_id)
    assert resumed.proc.returncode == 0, resumed.stderr()
    facts = assert_like_reference(project, run_id, reference, rerun=rerun, shared=shared)
    assert [e["kind"] for e in facts["events"]].count("run.resumed") == len(CHAINS[chain])
    for n, head in branch_at_kill.items():  # the moved branch was adopted, not committed again
        assert facts["promoted"][n - 1]["commit"] == head


def test_kill_before_run_started_leaves_nothing_to_resume(project: Path):
    child = Child(project, crash_at="before:run.started:1")
    assert child.wait() == -signal.SIGKILL
    run_id = _run_id(project)
    assert interrupted_runs(project) == []  # a plain `ratchet run` is not blocked by it
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "run.not_started", out


# -- Ctrl-C, the lock, a plain run, a changed contract ----------------------------------------------


@pytest.fixture
def interrupted(make_repo, shared: Path, tmp_path_factory) -> dict[str, Any]:
    """A run stopped by Ctrl-C (SIGINT to the kernel) while attempt 1's trial jobs ran. Before the
    SIGINT a second kernel tried to resume it; after it, a plain `ratchet run` was tried."""
    if "interrupted" in _ONCE:
        return _ONCE["interrupted"]
    root = make_repo(tmp_path_factory.mktemp("ctrl-c") / "repo",
                     files={"bench.py": BENCH.format(shared=str(shared)), "ratchet.toml": CONTRACT})
    _slow(shared, "a0001-trial")
    child = Child(root)
    try:
        _wait_for(root, lambda ledger: _slow_running(ledger, "a0001-trial") == 2, child)
        run_id = _run_id(root)
        second = ratchet("run", str(root), "--resume", run_id)
        child.proc.send_signal(signal.SIGINT)
        code = child.wait()
    finally:
        _slow(shared, "")
        if child.proc.poll() is None:
            child.kill()
    plain = ratchet("run", str(root))
    _ONCE["interrupted"] = {"root": root, "run_id": run_id, "code": code, "child": child, "second": second,
                            "plain": plain}
    return _ONCE["interrupted"]


def test_a_second_kernel_on_a_running_run_is_refused_naming_the_holder(interrupted: dict):
    code, out, _ = interrupted["second"]
    assert code == 2 and out["error"]["code"] == "ledger.locked"
    assert f"pid {interrupted['child'].proc.pid}" in out["error"]["message"]


def test_plain_run_with_an_interrupted_run_gives_the_resume_command(interrupted: dict):
    code, out, _ = interrupted["plain"]
    run_id = interrupted["run_id"]
    assert code == 2 and out["error"]["code"] == "run.interrupted_exists"
    assert run_id in out["error"]["message"] and f"--resume {run_id}" in out["error"]["hint"]
    assert len(list((interrupted["root"] / ".ratchet" / "runs").iterdir())) == 1  # no second run opened


def test_ctrl_c_stops_with_exit_130_and_resume_completes(interrupted: dict, shared: Path, reference: dict):
    root, run_id, child = interrupted["root"], interrupted["run_id"], interrupted["child"]
    assert interrupted["code"] == 130, child.stderr()
    result = child.envelope()["result"]
    assert result["stop_reason"] == "interrupted" and f"--resume {run_id}" in result["resume"]
    ledger = _ledger(root)
    assert ledger[-1]["kind"] == "run.stopped" and ledger[-1]["data"]["stop_reason"] == "interrupted"
    assert not _running(ledger), "every job the stop cancelled is recorded"
    cancelled = [e["data"] for e in ledger if e["kind"] == "job.finished" and e["data"]["state"] == "cancelled"]
    assert len(cancelled) == 2 and all(d["units_charged"] == 0 for d in cancelled), cancelled
    assert not _alive_benches(shared), "Ctrl-C left a job running"

    resumed = _resume(root, run_id)
    assert resumed.proc.returncode == 0, resumed.stderr()
    assert_like_reference(root, run_id, reference, rerun=len(cancelled), shared=shared)


def test_a_changed_contract_refuses_the_resume_naming_the_keys(project: Path):
    child = Child(project, crash_at="after:attempt.started:1")
    assert child.wait() == -signal.SIGKILL
    run_id = _run_id(project)
    text = (project / "ratchet.toml").read_text()
    (project / "ratchet.toml").write_text(text.replace("max_attempts = 3", "max_attempts = 9")
                                          .replace("units = [4, 8]", "units = [4, 16]")
                                          + "# a comment alone is not a change\n")
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    assert code == 2 and out["error"]["code"] == "contract.changed"
    assert "budget.max_attempts" in out["error"]["message"] and "gate.units" in out["error"]["message"]
    assert "holdout_units" not in out["error"]["message"]
    assert _ledger(project)[-1]["kind"] == "attempt.started"  # the refused resume wrote nothing


@pytest.mark.parametrize("recorded, resumes", [(2, True), (1, False), (None, False)])
def test_a_resume_takes_the_ledger_formats_this_build_reads_and_refuses_older_ones(project: Path, recorded, resumes):
    child = Child(project, crash_at="after:attempt.started:1")
    assert child.wait() == -signal.SIGKILL
    run_id = _run_id(project)

    def set_format(event: dict[str, Any]) -> bool:
        if event["kind"] != "run.started":
            return False
        if recorded is None:
            del event["data"]["ledger_format"]  # before formats were recorded: format 1
        else:
            event["data"]["ledger_format"] = recorded
        return True

    rechain(project / ".ratchet" / "runs" / run_id / "events.jsonl", set_format)
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    if resumes:
        assert code == 0 and out["result"]["run_id"] == run_id, out
    else:
        assert code == 2 and out["error"]["code"] == "ledger.old_format", out
        assert f"ledger format {recorded or 1}" in out["error"]["message"]
        assert _ledger(project)[-1]["kind"] == "attempt.started"  # the refused resume wrote nothing


@pytest.mark.parametrize("recorded, resumes", [(GATE_RULES, True), (1, False), (None, False)])
def test_a_resume_takes_the_gate_rules_this_build_judges_by_and_refuses_older_ones(project: Path, recorded,
                                                                                    resumes):
    child = Child(project, crash_at="after:attempt.started:1")
    assert child.wait() == -signal.SIGKILL
    run_id = _run_id(project)

    def set_rules(event: dict[str, Any]) -> bool:
        if event["kind"] != "run.started":
            return False
        if recorded is None:
            del event["data"]["gate"]["rules"]  # before the rules were recorded: rules 1
        else:
            event["data"]["gate"]["rules"] = recorded
        return True

    rechain(project / ".ratchet" / "runs" / run_id / "events.jsonl", set_rules)
    code, out, _ = ratchet("run", str(project), "--resume", run_id)
    if resumes:
        assert code == 0 and out["result"]["run_id"] == run_id, out
    else:
        assert code == 2 and out["error"]["code"] == "run.old_rules", out
        assert f"gate rules {recorded or 1}" in out["error"]["message"]
        assert _ledger(project)[-1]["kind"] == "attempt.started"  # the refused resume wrote nothing


# -- replays that must judge exactly as the first time ------------------------------------------------


def test_a_replayed_trial_is_judged_with_the_margin_recorded_with_its_plan(project: Path, git_cli):
    """With a relative margin, a stage's margin is min_effect_rel x |the champion's mean as last
    measured| (the preflight's before the first trial), recorded with its plan. A resume after the
    trial's verdict replays the trial with that recorded margin, not one recomputed from the
    trial's own later record, so it reaches the verdict it recorded and the attempt can finish."""
    text = CONTRACT.replace("units = [4, 8]\n", "units = [4, 8]\nmin_effect_rel = 0.2\n")
    (project / "ratchet.toml").write_text(text.replace("max_attempts = 3", "max_attempts = 1"))
    git_cli(project, "commit", "-q", "-am", "relative margin")
    child = Child(project, crash_at="after:trial.judged:1")
    assert child.wait() == -signal.SIGKILL, child.stderr()
    run_id = _run_id(project)
    resumed = _resume(project, run_id, timeout=60)
    assert resumed.proc.returncode == 0, resumed.stderr()
    evs = events(project, run_id)
    preflight = [e["data"]["value"] for e in evs if e["kind"] == "job.finished" and e["data"]["stage"] == "preflight"]
    planned = {e["data"]["stage"]: e["data"]["margin"] for e in evs if e["kind"] == "trial.planned"}
    assert planned["trial"] == pytest.approx(0.2 * abs(preflight[0]))
    judged = [(e["data"]["stage"], e["data"]["verdict"]) for e in evs if e["kind"] == "trial.judged"]
    assert [stage for stage, _ in judged].count("trial") == 1, judged
    assert judged[0] == ("trial", "accepted") and judged[1][0] == "confirm"


def test_files_agent_resume_measures_the_recorded_submission_and_stops_after_giving_up(project: Path,
                                                                                       shared: Path, git_cli):
    candidate = project / "candidates" / "1-good" / "params.toml"
    candidate.parent.mkdir(parents=True)
    candidate.write_text("x = 2.5\n")
    text = (project / "ratchet.toml").read_text().replace(
        'kind = "search"', 'kind = "files"\n[agent.files]\npath = "candidates/"')
    (project / "ratchet.toml").write_text(text)
    git_cli(project, "add", "-A")
    git_cli(project, "commit", "-q", "-m", "files agent")
    child = Child(project, crash_at="after:attempt.submitted:1")
    assert child.wait() == -signal.SIGKILL, child.stderr()
    run_id = _run_id(project)
    # The prepared candidate changes while the run is down: the resume measures what was submitted.
    candidate.write_text("x = -4.0\n")
    child = Child(project, "--resume", run_id, crash_at="after:attempt.gave_up:1")
    assert child.wait() == -signal.SIGKILL, child.stderr()
    resumed = _resume(project, run_id)
    assert resumed.proc.returncode == 0, resumed.stderr()
    assert resumed.envelope()["result"]["stop_reason"] == "agent_stopped"

    evs = events(project, run_id)
    assert [e["data"]["attempt"] for e in evs if e["kind"] == "attempt.started"] == [1, 2]
    assert [e["kind"] for e in evs].count("attempt.gave_up") == 1
    submitted = next(e["data"] for e in evs if e["kind"] == "attempt.submitted")
    blobs = project / ".ratchet" / "runs" / run_id / "blobs"
    for planned in (e["data"] for e in evs if e["kind"] == "trial.planned" and e["data"]["attempt"] == 1):
        plan = json.loads((blobs / planned["plan_blob"].split(":")[1]).read_text())
        assert plan["candidate_tree"] == submitted["tree"], planned["stage"]
    result = resumed.envelope()["result"]
    assert result["champion"]["tree"] == submitted["tree"] and result["holdout"]["estimate"] > 5.0
    assert not _alive_benches(shared)
