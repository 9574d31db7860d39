"""The names of one job's files, for every writer and reader of them (pure path arithmetic: nothing
here touches a file).

```
<jobs_dir>/<job_id>/    the job's directory (a run's `jobs/`, or an executor's own jobs_dir)
    stdout, stderr      the job's output, capped at its spec's output_cap_bytes each
    result.json         its JobResult, written by the executor when the job ends
    judged.jsonl        examples shards: the kernel's verdict per example (checks, reason), for the report
    scratch/            its private HOME and TMPDIR, removed when it ends
    task.json, stdin    Slurm only: what the task wrapper runs, and the job's stdin bytes
    outcome.json        Slurm only: how the wrapper saw the job end (written atomically)
<pid_dir>/<job_id>.pid  a running local job's pid record (a run's `pids/`)
<run>/artifacts/<job_id>/  the files a launched job declared, copied back from its checkout
```

The Slurm task wrapper (`compute/slurm_task.py`, standard library only) repeats the names it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STDOUT_NAME = "stdout"
STDERR_NAME = "stderr"
RESULT_NAME = "result.json"
SCRATCH_NAME = "scratch"
TASK_NAME = "task.json"
STDIN_NAME = "stdin"
OUTCOME_NAME = "outcome.json"
JUDGED_NAME = "judged.jsonl"

PID_SUFFIX = ".pid"
"""A pid record is `<pid_dir>/<job_id>.pid`."""

ARTIFACTS_DIR = "artifacts"
"""Under the run directory: `artifacts/<job_id>/`, the files a launched job declared, copied back."""


@dataclass(frozen=True)
class JobFiles:
    """The files in one job's directory `dir` (`<jobs_dir>/<job_id>/`; see the module docstring).
    Creates nothing, checks nothing: an executor validates job ids before naming their files."""

    dir: Path

    @classmethod
    def of(cls, jobs_dir: str | Path, job_id: str) -> JobFiles:
        """The files of job `job_id` under `jobs_dir`."""
        return cls(Path(jobs_dir) / job_id)

    @property
    def job_id(self) -> str:
        """The job's id: its directory's name."""
        return self.dir.name

    @property
    def stdout(self) -> Path:
        """The job's stdout (capped)."""
        return self.dir / STDOUT_NAME

    @property
    def judged(self) -> Path:
        """An examples shard's per-example verdicts, one JSON line each (targets.examples_target)."""
        return self.dir / JUDGED_NAME

    @property
    def stderr(self) -> Path:
        """The job's stderr (capped)."""
        return self.dir / STDERR_NAME

    @property
    def result(self) -> Path:
        """The job's JobResult as JSON."""
        return self.dir / RESULT_NAME

    @property
    def scratch(self) -> Path:
        """The job's private HOME and TMPDIR (a directory)."""
        return self.dir / SCRATCH_NAME

    @property
    def task(self) -> Path:
        """Slurm: what the task wrapper runs (JSON)."""
        return self.dir / TASK_NAME

    @property
    def stdin(self) -> Path:
        """Slurm: the job's stdin bytes."""
        return self.dir / STDIN_NAME

    @property
    def outcome(self) -> Path:
        """Slurm: how the task wrapper saw the job end (JSON)."""
        return self.dir / OUTCOME_NAME


def pid_file(pid_dir: str | Path, job_id: str) -> Path:
    """`<pid_dir>/<job_id>.pid`: the record of a running local job."""
    return Path(pid_dir) / f"{job_id}{PID_SUFFIX}"
