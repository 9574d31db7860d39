"""Several attempts at once (`agent.workers`): real `ratchet run`s on real temporary git repositories
with real jobs. Each job of these benchmarks records when it ran (a file per job in a spy folder
passed through `sandbox.pass_env`), so the tests see from the jobs themselves whether two attempts'
jobs overlapped and how many jobs ran at once; the ledger says the rest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from helpers import events, interrupted_at, ratchet, set_contract
from repo_fixture import git

from ratchet.loop.kernel import CRASH_AT_ENV

SPY_BENCH = """\
import json, os, random, time, tomllib

start = time.time()
with open("params.toml", "rb") as f:
    x = float(tomllib.load(f).get("x", 0.0))
y = 0.0
if os.path.exists("y.toml"):
    with open("y.toml", "rb") as f:
        y = float(tomllib.load(f).get("y", 0.0))
seed = int(os.environ.get("RATCHET_SEED", "0"))
time.sleep(0.3)
noise = random.Random(seed).gauss(0.0, 0.1)
end = time.time()
spy = os.environ["SPY_DIR"]
with open(os.path.join(spy, f"{os.getpid()}-{random.random()}"), "w") as f:
    f.write(f"{start} {end}\\n")
print(json.dumps({"score": -(x - 3.0) ** 2 - (y - 1.0) ** 2 + noise}))
"""

WORKERS = """
[gate]
units = [6, 12]
holdout_units = 6
confirm = false
[sandbox]
mode = "none"
pass_env = ["SPY_DIR"]
[compute]
max_parallel = {max_parallel}
"""


def _project(root: Path, workers: int, max_parallel: int, budget: str, agent: str = "") -> None:
    (root / "bench.py").write_text(SPY_BENCH)
    (root / "y.toml").write_text("y = 0.0\n")
    replace = {'kind = "search"': f'kind = "search"\nworkers = {workers}',
               "timeout_s = 60": "timeout_s = 60\ncache = false"}
    if agent:
        replace['kind = "search"'] = f'kind = "files"\nworkers = {workers}\n[agent.files]\npath = "candidates/"'
    set_contract(root, replace=replace, append=WORKERS.format(max_parallel=max_parallel) + budget)


def _spans(spy: Path) -> list[tuple[float, float]]:
    return [tuple(map(float, p.read_text().split())) for p in spy.iterdir()]  # type: ignore[misc]


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda t: (t[0], t[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def _job_spans(evs: list[dict]) -> dict[int, list[tuple[str, str]]]:
    """attempt -> (started ts, finished ts) of each of its jobs, from the ledger."""
    started = {e["data"]["job_id"]: e for e in evs if e["kind"] == "job.started"}
    out: dict[int, list[tuple[str, str]]] = {}
    for e in evs:
        if e["kind"] == "job.finished" and e["data"]["job_id"] in started:
            out.setdefault(e["data"]["attempt"], []).append((started[e["data"]["job_id"]]["ts"], e["ts"]))
    return out


def _overlapping_attempts(evs: list[dict]) -> bool:
    spans = {a: (min(s for s, _ in js), max(f for _, f in js)) for a, js in _job_spans(evs).items() if a > 0}
    items = sorted(spans.items())
    return any(a1 != a2 and s1 < f2 and s2 < f1 for a1, (s1, f1) in items for a2, (s2, f2) in items)


def _linear_promotions(root: Path, run_id: str, evs: list[dict]) -> None:
    """Every promotion is a commit on the champion branch whose parent is the champion before it,
    and no attempt is promoted twice."""
    promoted = [e["data"] for e in evs if e["kind"] == "champion.promoted"]
    assert len({p["attempt"] for p in promoted}) == len(promoted), promoted
    parent = next(e["data"]["baseline"]["commit"] for e in evs if e["kind"] == "run.started")
    for p in promoted:
        assert git(root, "rev-parse", f"{p['commit']}^") == parent
        parent = p["commit"]
    if promoted:
        assert git(root, "rev-parse", f"ratchet/{run_id}/champion") == parent


def test_three_search_workers_overlap_and_share_max_parallel(bench_repo: Path, tmp_path: Path):
    spy = tmp_path / "spy"
    spy.mkdir()
    _project(bench_repo, workers=3, max_parallel=2, budget="[budget]\nmax_attempts = 6\n")
    code, out, err = ratchet("run", str(bench_repo), env={"SPY_DIR": str(spy)}, timeout=600)
    assert code == 0, err
    result = out["result"]
    assert result["stop_reason"] == "budget_exhausted" and result["budget"] == "max_attempts", err
    evs = events(bench_repo, result["run_id"])
    started = [e["data"] for e in evs if e["kind"] == "attempt.started"]
    assert [s["attempt"] for s in started] == list(range(1, len(started) + 1))  # numbered in start order
    assert {s["worker"] for s in started} == {1, 2, 3}
    assert _overlapping_attempts(evs), "no two attempts' jobs ran at the same time"
    spans = _spans(spy)
    assert len(spans) >= 12
    assert _most_at_once(spans) <= 2, "more jobs ran at once than compute.max_parallel = 2"
    # The search agent's workers never proposed the same point twice.
    params = [e["data"]["params"]["x"] for e in evs if e["kind"] == "attempt.submitted"]
    assert len(set(params)) == len(params)
    _linear_promotions(bench_repo, result["run_id"], evs)
    status = ratchet("status", result["run_id"], "--dir", str(bench_repo))[1]["result"]
    assert {a["worker"] for a in status["attempts"]} == {1, 2, 3}
    code, out, err = ratchet("verify", result["run_id"], "--dir", str(bench_repo))
    assert code == 0, (out, err)


def _conflicting_candidates(root: Path) -> None:
    c = root / "candidates"
    for name, path, text in (("1-x", "params.toml", "x = 3.0\n"), ("2-x-too", "params.toml", "x = 2.9\n"),
                             ("3-y", "y.toml", "y = 1.0\n")):
        (c / name).mkdir(parents=True)
        (c / name / path).write_text(text)


def test_a_moved_champion_rebases_cleanly_or_ends_stale(bench_repo: Path, tmp_path: Path):
    spy = tmp_path / "spy"
    spy.mkdir()
    _conflicting_candidates(bench_repo)
    set_contract(bench_repo, replace={'allowed = ["params.toml"]': 'allowed = ["params.toml", "y.toml"]'})
    _project(bench_repo, workers=3, max_parallel=4, budget="[budget]\nmax_attempts = 9\n", agent="files")
    code, out, err = ratchet("run", str(bench_repo), env={"SPY_DIR": str(spy)}, timeout=600)
    assert code == 0, err
    result = out["result"]
    assert result["stop_reason"] == "agent_stopped", err
    evs = events(bench_repo, result["run_id"])
    started = {e["data"]["attempt"]: e["data"] for e in evs if e["kind"] == "attempt.started"}
    judged = {e["data"]["attempt"]: e["data"] for e in evs if e["kind"] == "trial.judged"
              and e["data"]["stage"] == "trial"}
    planned = {e["data"]["attempt"] for e in evs if e["kind"] == "trial.planned" and e["data"]["stage"] == "trial"}
    # Both x candidates change the same line: once either is the champion, the other cannot re-base.
    stale = [a for a, j in judged.items() if j["reason"] == "stale"]
    assert len(stale) == 1, judged
    assert stale[0] not in planned and "conflicts in params.toml" in judged[stale[0]]["reason_text"]
    # The y candidate (another file) re-bases cleanly: some re-base attempt was measured again.
    rebased = [a for a, s in started.items() if s.get("rebases") is not None]
    assert any(a in planned for a in rebased), started
    promoted = [e["data"] for e in evs if e["kind"] == "champion.promoted"]
    assert len(promoted) == 2, promoted  # one x candidate and the y change, each on the champion before it
    _linear_promotions(bench_repo, result["run_id"], evs)
    final = git(bench_repo, "show", f"ratchet/{result['run_id']}/champion:y.toml")
    assert final == "y = 1.0"
    code, out, err = ratchet("verify", result["run_id"], "--dir", str(bench_repo))
    assert code == 0, (out, err)


def test_kill_9_with_attempts_in_flight_then_resume(bench_repo: Path, tmp_path: Path):
    spy = tmp_path / "spy"
    spy.mkdir()
    _project(bench_repo, workers=3, max_parallel=3, budget="[budget]\nmax_attempts = 5\n")
    env = {**os.environ, "SPY_DIR": str(spy), CRASH_AT_ENV: "after:job.finished:14"}
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(bench_repo), "--json"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    run_id = next(p.name for p in (bench_repo / ".ratchet" / "runs").iterdir())
    before = events(bench_repo, run_id)
    in_flight = {e["data"]["attempt"] for e in before if e["kind"] == "attempt.started"} - {
        e["data"]["attempt"] for e in before if e["kind"] in ("trial.judged", "attempt.gave_up")}
    assert len(in_flight) >= 2, "the kill should find several attempts in flight"
    ok_before = {e["data"]["job_id"] for e in before if e["kind"] == "job.finished" and e["data"]["state"] == "ok"}
    code, out, err = ratchet("run", str(bench_repo), "--resume", run_id, env={"SPY_DIR": str(spy)}, timeout=600)
    assert code == 0, err
    evs = events(bench_repo, run_id)
    judged = {e["data"]["attempt"] for e in evs if e["kind"] == "trial.judged" and e["data"]["stage"] == "trial"}
    assert in_flight <= judged  # every attempt in flight was finished by the resume
    rerun = [e["data"]["job_id"] for e in evs[len(before):] if e["kind"] == "job.started"
             and e["data"]["job_id"] in ok_before]
    assert rerun == [], "a job that finished before the kill ran again"
    resumed_workers = {e["data"]["attempt"]: e["data"]["worker"] for e in evs if e["kind"] == "attempt.started"}
    assert set(resumed_workers.values()) <= {1, 2, 3}
    _linear_promotions(bench_repo, run_id, evs)
    code, out, err = ratchet("verify", run_id, "--dir", str(bench_repo))
    assert code == 0, (out, err)


def test_two_command_agents_each_their_own_session_and_workspace(tmp_path: Path):
    from ratchet.compute.sandbox import probe_bwrap

    if not probe_bwrap().available:
        import pytest

        pytest.skip("the command agent needs a working bwrap")
    root = tmp_path / "p"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "agent", root)
    text = (root / "ratchet.toml").read_text().replace('kind = "command"', 'kind = "command"\nworkers = 2', 1)
    (root / "ratchet.toml").write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    code, out, err = ratchet("run", str(root), timeout=600)
    assert code == 0, err
    evs = events(root, out["result"]["run_id"])
    started = {e["data"]["attempt"]: e["data"]["worker"] for e in evs if e["kind"] == "attempt.started"}
    assert sorted(started.values()) == [1, 2], started
    legs = {e["data"]["attempt"] for e in evs if e["kind"] == "agent.leg"}
    assert legs == {1, 2}  # each attempt's own CLI session
    _linear_promotions(root, out["result"]["run_id"], evs)
    code, out, err = ratchet("verify", out["result"]["run_id"], "--dir", str(root))
    assert code == 0, (out, err)


def test_ctrl_c_stops_every_worker_and_the_run_resumes(bench_repo: Path, tmp_path: Path, monkeypatch):
    spy = tmp_path / "spy"
    spy.mkdir()
    monkeypatch.setenv("SPY_DIR", str(spy))
    _project(bench_repo, workers=3, max_parallel=3, budget="[budget]\nmax_attempts = 4\n")
    code, out, err = interrupted_at(bench_repo, ["run", str(bench_repo)],
                                    lambda d: d["attempt"] >= 2 and d["stage"] == "trial")
    assert code == 130, err
    run_id = out["result"]["run_id"]
    evs = events(bench_repo, run_id)
    assert evs[-1]["kind"] == "run.stopped" and evs[-1]["data"]["stop_reason"] == "interrupted"
    started = {e["data"]["job_id"] for e in evs if e["kind"] == "job.started"}
    ended = {e["data"]["job_id"] for e in evs if e["kind"] == "job.finished"}
    assert started <= ended, "a job of some worker was left running"
    code, out, err = ratchet("run", str(bench_repo), "--resume", run_id)
    assert code == 0, err
    _linear_promotions(bench_repo, run_id, events(bench_repo, run_id))
