"""Fixtures for the executor tests (helpers are in jobkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A job's working directory (a stand-in for a clean checkout)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def jobs_dir(tmp_path: Path) -> Path:
    """Where the executor writes `<job_id>/` directories (as under `.ratchet/runs/<run>/jobs`)."""
    return tmp_path / "project" / ".ratchet" / "runs" / "r1" / "jobs"
