"""The run directory layout (docs/guide.md): `.ratchet/runs/<run_id>/` under the project root.

```
.ratchet/
  runs/<run_id>/contract.toml    the contract as the run started
               events.jsonl      the ledger (events.py)
               index.sqlite      derived index (index.py)
               blobs/<hex>       content-addressed files (blobs.py)
               jobs/<job_id>/    each job's stdout, stderr, exit code, result (core/jobfiles.py)
               pids/             process ids of running jobs (killed on resume)
               work/<job_id>/    each running job's checkout (removed when it ends)
               artifacts/<job_id>/ files a launched job declared, copied back
               report.md, plots/ the report
               lock, lock.pid    the run lock (lock.py)
  cache/                         measurements shared by runs
```
Run ids are `YYYYMMDD-HHMMSS-<rand>` in UTC, so sorting them as strings sorts them by start time.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from ratchet.core.errors import DataError, LedgerError
from ratchet.core.events import line_payload
from ratchet.core.jobfiles import ARTIFACTS_DIR, JobFiles
from ratchet.core.payloads import RunStarted, given
from ratchet.core.vocab import RunMode
from ratchet.ledger.files import PRIVATE_DIR_MODE, SHARED_FILE_MODE, make_dirs, read_nofollow, write_exclusive
from ratchet.ledger.lock import LOCK_NAME, PID_NAME

RATCHET_DIR = ".ratchet"
"""Ratchet's directory in the project root; excluded from git via .git/info/exclude."""

EXCLUDE_LINE = ".ratchet/"
"""The line ensure_ratchet_dir adds to .git/info/exclude."""

RUN_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-z]{4,16}$")
"""A run id: UTC date, UTC time, 4-16 lowercase letters or digits."""

JOB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""A job id usable as one directory name (no separators, no leading dot)."""

_EXCLUDE_EQUIVALENTS = frozenset({".ratchet/", "/.ratchet/", ".ratchet", "/.ratchet"})


def check_run_id(run_id: str) -> str:
    """Return `run_id` if it is well formed. Raises DataError `run.bad_id`."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise DataError(
            "run.bad_id",
            f"{run_id!r} is not a run id",
            "run ids look like 20261130-063650-ab12; `ratchet runs` lists the runs (`--dir DIR` for a project "
            "elsewhere)",
        )
    return run_id


def new_run_id(now_utc: dt.datetime, rand: str) -> str:
    """A new run id `YYYYMMDD-HHMMSS-<rand>` for a run started at `now_utc` (timezone-aware,
    converted to UTC). `rand`: 4-16 lowercase letters/digits chosen by the caller.
    Raises ValueError for a naive datetime or a bad `rand`."""
    if now_utc.utcoffset() is None:
        raise ValueError("new_run_id needs a timezone-aware datetime")
    run_id = f"{now_utc.astimezone(dt.UTC):%Y%m%d-%H%M%S}-{rand}"
    if not RUN_ID_RE.match(run_id):
        raise ValueError(f"rand {rand!r} must be 4-16 lowercase letters or digits")
    return run_id


@dataclass(frozen=True)
class RunDir:
    """The paths of one run. `project_root`: the directory holding ratchet.toml.
    Raises DataError `run.bad_id` for a malformed run id. Creates nothing until `create()`."""

    project_root: Path
    run_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "project_root", Path(self.project_root))
        check_run_id(self.run_id)

    @property
    def root(self) -> Path:
        """`.ratchet/runs/<run_id>/`."""
        return runs_dir(self.project_root) / self.run_id

    contract = property(lambda self: self.root / "contract.toml", doc="The contract as the run started.")
    events = property(lambda self: self.root / "events.jsonl", doc="The ledger.")
    index = property(lambda self: self.root / "index.sqlite", doc="The derived SQLite index.")
    blobs = property(lambda self: self.root / "blobs", doc="The content-addressed blob directory.")
    jobs = property(lambda self: self.root / "jobs", doc="The directory of per-job directories.")
    pids = property(lambda self: self.root / "pids", doc="Process ids of running jobs.")
    work = property(lambda self: self.root / "work", doc="Checkouts of running jobs (`work/<job_id>/`).")
    artifacts = property(lambda self: self.root / ARTIFACTS_DIR, doc="Artifacts copied back from launched jobs.")
    report = property(lambda self: self.root / "report.md", doc="The run's report.")
    plots = property(lambda self: self.root / "plots", doc="The report's plots (*.png).")
    lock = property(lambda self: self.root / LOCK_NAME, doc="The run lock file (lock.py).")
    lock_pid = property(lambda self: self.root / PID_NAME, doc="The lock holder's pid.")

    def job_dir(self, job_id: str) -> Path:
        """`jobs/<job_id>/` (not created). Raises LedgerError `ledger.bad_job_id` for an id that is
        not one safe directory name."""
        return self.job_files(job_id).dir

    def job_files(self, job_id: str) -> JobFiles:
        """The files of job `job_id` under `jobs/` (not created). Raises LedgerError
        `ledger.bad_job_id` for an id that is not one safe directory name."""
        if not isinstance(job_id, str) or not JOB_ID_RE.match(job_id):
            raise LedgerError("ledger.bad_job_id", f"{job_id!r} is not a valid job id")
        return JobFiles.of(self.jobs, job_id)

    def exists(self) -> bool:
        """True when the run's directory exists."""
        return self.root.is_dir()

    def create(self) -> RunDir:
        """Create `.ratchet/` (see ensure_ratchet_dir) and this run's directories, mode 0700 (the
        files the ledger writes in them are 0600).

        Raises LedgerError `ledger.run_exists` when the run directory already exists.
        """
        ensure_ratchet_dir(self.project_root)
        make_dirs(self.root.parent)
        try:
            self.root.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            raise LedgerError("ledger.run_exists", f"run directory {self.root} already exists") from None
        os.chmod(self.root, PRIVATE_DIR_MODE)  # whatever the umask: the run is its owner's alone
        for sub in (self.blobs, self.jobs, self.pids, self.plots):
            sub.mkdir(mode=PRIVATE_DIR_MODE)
        return self


def runs_dir(project_root: str | os.PathLike[str]) -> Path:
    """`<project_root>/.ratchet/runs/`."""
    return Path(project_root) / RATCHET_DIR / "runs"


def open_run(project_root: str | os.PathLike[str], run_id: str | None = None) -> RunDir:
    """The existing run `run_id`, or the latest run when `run_id` is None.

    Raises DataError `run.bad_id` for a malformed id and `run.not_found` when no such run exists.
    """
    run_id = latest_run(project_root) if run_id is None else check_run_id(run_id)
    if run_id is None:
        raise DataError(
            "run.not_found", f"no runs in {runs_dir(project_root)}", "start one with `ratchet run`"
        )
    run = RunDir(Path(project_root), run_id)
    if not run.exists():
        raise DataError("run.not_found", f"run {run_id} does not exist in {runs_dir(project_root)}",
                        f"`ratchet runs --dir {project_root}` lists the project's runs")
    return run


def list_runs(project_root: str | os.PathLike[str]) -> list[str]:
    """Run ids under `.ratchet/runs/`, oldest first (entries that are not run directories are
    ignored, symlinks included)."""
    root = runs_dir(project_root)
    if not root.is_dir():
        return []
    return sorted(
        entry.name
        for entry in os.scandir(root)
        if RUN_ID_RE.match(entry.name) and entry.is_dir(follow_symlinks=False)
    )


def latest_run(project_root: str | os.PathLike[str]) -> str | None:
    """The most recent run id, or None when there is none."""
    runs = list_runs(project_root)
    return runs[-1] if runs else None


def _git_dir(project_root: Path) -> Path | None:
    """The git directory holding info/exclude (the common dir of a worktree), or None."""
    dot_git = project_root / ".git"
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    git_dir = (project_root / text[len("gitdir:") :].strip()).resolve()
    common = git_dir / "commondir"
    if common.is_file():
        git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir if git_dir.is_dir() else None


def ensure_ratchet_dir(project_root: str | os.PathLike[str]) -> Path:
    """Create `<project_root>/.ratchet/` and, in a git repository, add `.ratchet/` to
    `.git/info/exclude` once (creating `info/` when missing). Idempotent; no git needed.
    Returns the `.ratchet/` path. Raises OSError."""
    root = Path(project_root)
    ratchet = root / RATCHET_DIR
    make_dirs(ratchet)
    git_dir = _git_dir(root)
    if git_dir is None:
        return ratchet
    exclude = git_dir / "info" / "exclude"
    make_dirs(exclude.parent)
    try:
        text = read_nofollow(exclude).decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        text = ""
    if any(line.strip() in _EXCLUDE_EQUIVALENTS for line in text.splitlines()):
        return ratchet
    if text and not text.endswith("\n"):
        text += "\n"
    write_exclusive(exclude, (text + EXCLUDE_LINE + "\n").encode("utf-8", errors="surrogateescape"), SHARED_FILE_MODE)
    return ratchet


COMPARE_MODE: RunMode = "compare"
"""`run.started` data `mode` of a `ratchet compare` run: never resumed, never a campaign."""

CALIBRATE_MODE: RunMode = "calibrate"
"""`run.started` data `mode` of a `ratchet calibrate` run: never resumed, never a campaign."""

ONE_SHOT_MODES: frozenset[str] = frozenset(get_args(RunMode))
"""Every `mode` a run that is not a campaign records: such runs are never resumed, never block a
new `ratchet run`, and are not `the latest run` while a campaign exists."""


def run_mode(run: RunDir) -> str | None:
    """The `mode` recorded in the run's first event (`run.started`), or None (a campaign, or an
    unreadable first line). Reads one line, not the whole ledger."""
    try:
        with open(run.events, "rb") as f:
            first = json.loads(f.readline() or b"{}")
    except (OSError, ValueError):
        return None
    started = line_payload(first)
    return given(started.mode) if isinstance(started, RunStarted) else None


def champion_branch(run_id: str) -> str:
    """The git branch a run's promotions land on: `ratchet/<run_id>/champion`."""
    return f"ratchet/{run_id}/champion"
