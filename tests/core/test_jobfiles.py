"""The names of a job's files: one definition, and the names on disk a recorded run already holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.core.errors import LedgerError
from ratchet.core.jobfiles import JobFiles, pid_file
from ratchet.ledger.rundir import RunDir


def test_a_jobs_files_keep_the_names_recorded_runs_hold():
    files = JobFiles.of(Path("/r/jobs"), "a0001-trial1-u000-champion")
    assert files.dir == Path("/r/jobs/a0001-trial1-u000-champion") and files.job_id == "a0001-trial1-u000-champion"
    named = {p.name for p in (files.stdout, files.stderr, files.result, files.scratch, files.task, files.stdin,
                              files.outcome)}
    assert named == {"stdout", "stderr", "result.json", "scratch", "task.json", "stdin", "outcome.json"}
    assert all(p.parent == files.dir for p in (files.stdout, files.result, files.outcome))
    assert pid_file(Path("/r/pids"), "j1") == Path("/r/pids/j1.pid")


def test_a_runs_job_files_are_under_its_jobs_directory(tmp_path: Path):
    run = RunDir(tmp_path, "20261130-063650-ab12")
    assert run.job_files("t1-candidate-u3") == JobFiles.of(run.jobs, "t1-candidate-u3")
    assert run.job_files("t1-candidate-u3").dir == run.job_dir("t1-candidate-u3")
    assert run.artifacts / "j" == run.root / "artifacts" / "j"
    assert run.work == run.root / "work"
    with pytest.raises(LedgerError) as caught:
        run.job_files("../escape")
    assert caught.value.code == "ledger.bad_job_id"
