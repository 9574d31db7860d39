"""Shared fixtures for the ledger tests: a real run directory and a realistic campaign's events."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ratchet.ledger.events import EventLog
from ratchet.ledger.rundir import RunDir

SRC = Path(__file__).resolve().parents[2] / "src"

T0 = dt.datetime(2026, 11, 30, 6, 36, 50, tzinfo=dt.UTC)


def ts(seconds: float) -> str:
    """An ISO-8601 UTC timestamp `seconds` after T0."""
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _job(job_id: str, attempt: int, stage: str, variant: str, unit: int, value: float, cached: bool = False):
    started = {
        "job_id": job_id,
        "attempt": attempt,
        "stage": stage,
        "variant": variant,
        "unit": unit,
        "pid": 4000,
    }
    finished = {
        "job_id": job_id,
        "attempt": attempt,
        "stage": stage,
        "variant": variant,
        "unit": unit,
        "state": "ok",
        "value": value,
        "reason": None,
        "elapsed_s": 1.5,
        "cpu_s": 36.0,
        "cached": cached,
        "units_charged": 0 if cached else 1,
    }
    return [("job.started", started), ("job.finished", finished)]


def campaign() -> list[tuple[str, dict[str, Any], str]]:
    """(kind, data, ts) of a two-session campaign: attempt 1 accepted + confirmed + promoted,
    attempt 2 rejected, attempt 3 gave up, interrupted, resumed, stopped on patience, holdout."""
    baseline = {"commit": "c0" * 20, "tree": "t0" * 20}
    limits = {
        "max_attempts": 5,
        "max_evaluations": 0,
        "max_cpu_hours": 0.0,
        "max_gpu_hours": 0.0,
        "max_wall_s": 0,
        "max_val_trials": 0,
    }
    items: list[tuple[str, dict[str, Any]]] = [
        (
            "run.started",
            {
                "run_id": "20261130-063650-ab12",
                "contract_digest": "sha256:" + "1" * 64,
                "baseline": baseline,
                "salt": "s41t",
                "sandbox": "none",
                "target_kind": "benchmark",
                "direction": "max",
                "limits": limits,
                "holdout_reserve": 4,
                "extra": "tolerated",
            },
        ),
        ("attempt.started", {"attempt": 1}),
        ("agent.launched", {"attempt": 1, "launch": 1, "jobs": ["x1"], "note": "probe"}),
        (
            "attempt.submitted",
            {
                "attempt": 1,
                "tree": "a1" * 20,
                "summary": "bigger C",
                "report_blob": None,
                "params": {"C": 10.0},
            },
        ),
        (
            "trial.planned",
            {
                "attempt": 1,
                "trial": 1,
                "stage": "trial",
                "plan_digest": "sha256:" + "2" * 64,
                "plan_blob": "sha256:" + "2" * 64,
                "level": 0.025,
                "looks": [2],
                "jobs": 4,
            },
        ),
        *_job("j1", 1, "trial", "champion", 0, 0.5),
        *_job("j2", 1, "trial", "candidate", 0, 0.7),
        *_job("j3", 1, "trial", "champion", 1, 0.5, cached=True),
        *_job("j4", 1, "trial", "candidate", 1, 0.8),
        (
            "trial.planned",
            {
                "attempt": 1,
                "trial": 1,
                "stage": "confirm",
                "plan_digest": "sha256:" + "3" * 64,
                "plan_blob": "sha256:" + "3" * 64,
                "level": 0.025,
                "looks": [2],
                "jobs": 4,
            },
        ),
        (
            "trial.judged",
            {
                "attempt": 1,
                "stage": "confirm",
                "verdict": "accepted",
                "reason": "significant",
                "reason_text": "p below level",
                "estimate": 0.2,
                "interval": [0.1, 0.3],
                "p_value": 0.01,
                "units": 2,
                "level": 0.025,
            },
        ),
        (
            "trial.judged",
            {
                "attempt": 1,
                "stage": "trial",
                "verdict": "accepted",
                "reason": "significant",
                "reason_text": "p below level",
                "estimate": 0.25,
                "interval": [0.15, 0.35],
                "p_value": 0.004,
                "units": 2,
                "level": 0.025,
            },
        ),
        (
            "champion.promoted",
            {"attempt": 1, "commit": "c1" * 20, "tree": "a1" * 20, "estimate": 0.2, "interval": [0.1, 0.3]},
        ),
        ("attempt.started", {"attempt": 2}),
        (
            "attempt.submitted",
            {"attempt": 2, "tree": "a2" * 20, "summary": "smaller C", "report_blob": None, "params": None},
        ),
        (
            "trial.planned",
            {
                "attempt": 2,
                "trial": 2,
                "stage": "trial",
                "plan_digest": "sha256:" + "4" * 64,
                "plan_blob": "sha256:" + "4" * 64,
                "level": 0.0125,
                "looks": [2],
                "jobs": 2,
            },
        ),
        *_job("j5", 2, "trial", "champion", 2, 0.7),
        (
            "job.started",
            {"job_id": "j6", "attempt": 2, "stage": "trial", "variant": "candidate", "unit": 2, "pid": 4242},
        ),
        ("run.stopped", {"stop_reason": "interrupted", "budget": None, "detail": "SIGINT"}),
        ("run.resumed", {"pid": 99}),
        (
            "job.finished",
            {
                "job_id": "j6",
                "attempt": 2,
                "stage": "trial",
                "variant": "candidate",
                "unit": 2,
                "state": "ok",
                "value": 0.6,
                "reason": None,
                "elapsed_s": 2.0,
                "cpu_s": 72.0,
                "cached": False,
                "units_charged": 1,
            },
        ),
        (
            "trial.judged",
            {
                "attempt": 2,
                "stage": "trial",
                "verdict": "rejected",
                "reason": "futility",
                "reason_text": "worse",
                "estimate": -0.1,
                "interval": None,
                "p_value": 0.9,
                "units": 1,
                "level": 0.0125,
            },
        ),
        ("attempt.started", {"attempt": 3}),
        ("attempt.gave_up", {"attempt": 3, "reason": "no idea"}),
        (
            "trial.planned",
            {
                "attempt": None,
                "trial": 3,
                "stage": "holdout",
                "plan_digest": "sha256:" + "5" * 64,
                "plan_blob": "sha256:" + "5" * 64,
                "level": 0.05,
                "looks": [4],
                "jobs": 8,
            },
        ),
        (
            "trial.judged",
            {
                "attempt": None,
                "stage": "holdout",
                "verdict": "accepted",
                "reason": "significant",
                "reason_text": "holds",
                "estimate": 0.18,
                "interval": [0.05, 0.3],
                "p_value": 0.02,
                "units": 4,
                "level": 0.05,
            },
        ),
        ("run.stopped", {"stop_reason": "plateau", "budget": None, "detail": "patience 1"}),
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
