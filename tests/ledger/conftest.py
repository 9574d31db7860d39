"""Shared fixtures for the ledger tests: a real run directory and a realistic campaign's events."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from payload_data import ev

from ratchet.core.events import LEDGER_FORMAT
from ratchet.ledger.events import EventLog
from ratchet.ledger.rundir import RunDir

SRC = Path(__file__).resolve().parents[2] / "src"

T0 = dt.datetime(2026, 11, 30, 6, 36, 50, tzinfo=dt.UTC)


def ts(seconds: float) -> str:
    """An ISO-8601 UTC timestamp `seconds` after T0."""
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _job(job_id: str, attempt: int, stage: str, variant: str, unit: int, value: float, cached: bool = False):
    started = ev("job.started", job_id=job_id, attempt=attempt, stage=stage, variant=variant, unit=unit, pid=4000)
    finished = ev("job.finished", job_id=job_id, attempt=attempt, stage=stage, variant=variant, unit=unit, seed=unit,
                  state="ok", value=value, reason="ok", elapsed_s=1.5, cpu_s=36.0, cached=cached,
                  units_charged=0 if cached else 1)
    return [started, finished]


def _judged(attempt: int, stage: str, verdict: str, reason: str, text: str, estimate: float,
            interval: list[float] | None, p: float, units: int, level: float) -> tuple[str, dict[str, Any]]:
    return ev("trial.judged", attempt=attempt, stage=stage, verdict=verdict, reason=reason, reason_text=text,
              estimate=estimate, interval=interval, p_value=p, units=units, look=0, level=level)


def _planned(attempt: int, trial: int, stage: str, digit: str, level: float, looks: list[int], jobs: int):
    digest = "sha256:" + digit * 64
    return ev("trial.planned", attempt=attempt, trial=trial, stage=stage, plan_digest=digest, plan_blob=digest,
              level=level, looks=looks, jobs=jobs)


def campaign() -> list[tuple[str, dict[str, Any], str]]:
    """(kind, data, ts) of a two-session campaign: attempt 1 accepted + confirmed + promoted,
    attempt 2 rejected, attempt 3 gave up, interrupted, resumed, stopped on patience, holdout."""
    limits = {"max_attempts": 5, "max_evaluations": 0, "max_cpu_hours": 0.0, "max_gpu_hours": 0.0,
              "max_wall_s": 0, "max_val_trials": 0}
    items: list[tuple[str, dict[str, Any]]] = [
        ev("run.started", ledger_format=LEDGER_FORMAT, run_id="20261130-063650-ab12",
           contract_digest="sha256:" + "1" * 64, baseline={"commit": "c0" * 20, "tree": "t0" * 20}, salt="s41t",
           sandbox="none", target_kind="benchmark", direction="max", limits=limits, holdout_reserve=4),
        ev("attempt.started", attempt=1),
        ev("agent.launched", attempt=1, launch=1, jobs=["x1"], note="probe"),
        ev("attempt.submitted", attempt=1, tree="a1" * 20, summary="bigger C", report_blob=None, params={"C": 10.0}),
        _planned(1, 1, "trial", "2", 0.025, [2], 4),
        *_job("j1", 1, "trial", "champion", 0, 0.5),
        *_job("j2", 1, "trial", "candidate", 0, 0.7),
        *_job("j3", 1, "trial", "champion", 1, 0.5, cached=True),
        *_job("j4", 1, "trial", "candidate", 1, 0.8),
        _planned(1, 1, "confirm", "3", 0.025, [2], 4),
        _judged(1, "confirm", "accepted", "significant", "p below level", 0.2, [0.1, 0.3], 0.01, 2, 0.025),
        _judged(1, "trial", "accepted", "significant", "p below level", 0.25, [0.15, 0.35], 0.004, 2, 0.025),
        ev("champion.promoted", attempt=1, commit="c1" * 20, tree="a1" * 20, estimate=0.2, interval=[0.1, 0.3],
           mean=0.75, lcb=0.7, branch="ratchet/20261130-063650-ab12/champion"),
        ev("attempt.started", attempt=2),
        ev("attempt.submitted", attempt=2, tree="a2" * 20, summary="smaller C", report_blob=None, params=None),
        _planned(2, 2, "trial", "4", 0.0125, [2], 2),
        *_job("j5", 2, "trial", "champion", 2, 0.7),
        ev("job.started", job_id="j6", attempt=2, stage="trial", variant="candidate", unit=2, pid=4242),
        ev("run.stopped", stop_reason="interrupted", budget=None, detail="SIGINT"),
        ev("run.resumed", pid=99),
        ev("job.finished", job_id="j6", attempt=2, stage="trial", variant="candidate", unit=2, seed=2, state="ok",
           value=0.6, reason="ok", elapsed_s=2.0, cpu_s=72.0, cached=False, units_charged=1),
        _judged(2, "trial", "rejected", "futility", "worse", -0.1, None, 0.9, 1, 0.0125),
        ev("attempt.started", attempt=3),
        ev("attempt.gave_up", attempt=3, reason="no idea"),
        _planned(0, 0, "holdout", "5", 0.05, [4], 8),
        _judged(0, "holdout", "accepted", "significant", "holds", 0.18, [0.05, 0.3], 0.02, 4, 0.05),
        ev("run.stopped", stop_reason="plateau", budget=None, detail="patience 1"),
    ]
    # session 1: one event per 10 s from T0; session 2 starts an hour later, one event per 10 s
    resumed_at = next(i for i, (kind, _) in enumerate(items) if kind == "run.resumed")
    out = []
    for i, (kind, data) in enumerate(items):
        when = 10.0 * i if i < resumed_at else 3600.0 + 10.0 * (i - resumed_at)
        out.append((kind, data, ts(when)))
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    """A freshly created run directory inside a temporary project root."""
    return RunDir(tmp_path / "project", "20261130-063650-ab12").create()


@pytest.fixture
def written_log(run_dir: RunDir, campaign) -> RunDir:
    """A run directory whose events.jsonl holds the whole `campaign()`."""
    with EventLog.open(run_dir.events) as log:
        for kind, data, when in campaign:
            log.append(kind, data, when)
    return run_dir


@pytest.fixture(name="campaign")
def campaign_fixture() -> list[tuple[str, dict[str, Any], str]]:
    """The (kind, data, ts) triples of `campaign()`."""
    return campaign()


@pytest.fixture
def spawn():
    """Start `python -c code args...` children with ratchet importable (stdout piped as text);
    every child still alive at teardown is killed and reaped."""
    children: list[subprocess.Popen[str]] = []

    def start(code: str, *args: str) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(SRC))
        child = subprocess.Popen(
            [sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE, text=True
        )
        children.append(child)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
        if child.stdout:
            child.stdout.close()
