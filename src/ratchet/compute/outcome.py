"""How a job's end becomes a JobResult: its state, a reason a user can act on, and result.json."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path

from ratchet.compute.base import JobResult, JobSpec, JobState
from ratchet.compute.streams import CappedOutput
from ratchet.core.jobfiles import JobFiles
from ratchet.ledger.files import write_exclusive

QUOTED_STDERR_CHARS = 1500
"""Characters of a failed job's stderr (its end) quoted in an error message."""


def describe_end(
    status: int, ended_by: str | None, timeout_s: float, descendants: int
) -> tuple[JobState, int | None, int | None, str]:
    """(state, exit_code, signal, reason) of a job from its wait status. ended_by: "timeout" or
    "cancel" when the kernel stopped it (None: it ended by itself); descendants: how many of its
    processes other than the leader were killed with it."""
    code = os.waitstatus_to_exitcode(status)
    exit_code, sig = (code, None) if code >= 0 else (None, -code)
    if ended_by is not None:
        state: JobState = "timeout" if ended_by == "timeout" else "cancelled"
        what = f"timed out after {timeout_s:.1f} s" if state == "timeout" else "cancelled"
        return state, exit_code, sig, f"{what} ({_killed_with(descendants)})"
    if sig is not None:
        return "killed", exit_code, sig, f"killed by signal {sig} ({_signal_name(sig)})"
    if code == 0:
        return "ok", exit_code, sig, "exit code 0"
    return "failed", exit_code, sig, f"exit code {code}" + _signal_hint(code)


def _killed_with(n: int) -> str:
    if n == 0:
        return "killed"
    return f"killed with its {n} descendant{'s' if n != 1 else ''}"


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "unknown signal"


def _signal_hint(code: int) -> str:
    """A shell reports a child killed by signal N as exit code 128+N: say which signal it may be."""
    if 128 < code < 128 + 65:
        return f" (a shell's code for {_signal_name(code - 128)}?)"
    return ""


def make_result(
    spec: JobSpec,
    state: JobState,
    exit_code: int | None,
    sig: int | None,
    elapsed: float,
    cpu: float,
    outputs: tuple[CappedOutput, CappedOutput],
    reason: str,
) -> JobResult:
    """The JobResult of a job that ran (stdout/stderr tails, truncation and byte counts from `outputs`)."""
    out, err = outputs
    return JobResult(
        job_id=spec.job_id,
        state=state,
        exit_code=exit_code,
        signal=sig,
        elapsed_s=elapsed,
        cpu_s=cpu,
        stdout_tail=out.tail(),
        stderr_tail=err.tail(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        reason=reason,
        stdout_path=out.path,
        stdout_bytes=out.seen,
        stderr_bytes=err.seen,
    )


def not_started(spec: JobSpec) -> JobResult:
    """The result of a job never started because the executor was cancelled."""
    return JobResult(spec.job_id, "cancelled", None, None, 0.0, 0.0, "", "", False, False, "not started")


def unknown_result(spec: JobSpec, reason: str) -> JobResult:
    """The result of a job whose end could not be read (never success)."""
    return JobResult(spec.job_id, "unknown", None, None, 0.0, 0.0, "", "", False, False, reason)


def stderr_excerpt(files: JobFiles) -> str:
    """The last QUOTED_STDERR_CHARS characters of the job's stderr file, decoded with replacement
    ("" when the file does not exist)."""
    stderr = files.stderr
    return stderr.read_text("utf-8", "replace")[-QUOTED_STDERR_CHARS:] if stderr.exists() else ""


def write_result(path: Path, result: JobResult) -> None:
    """result.json, written exclusively and durably (ledger.files.write_exclusive)."""
    data = dataclasses.asdict(result)
    data["stdout_path"] = str(result.stdout_path) if result.stdout_path else None
    write_exclusive(path, json.dumps(data, indent=1, sort_keys=True).encode())


def read_result(path: Path) -> JobResult | None:
    """The JobResult `write_result` stored at `path`; None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
        stdout_path = data.pop("stdout_path", None)
        return JobResult(**data, stdout_path=Path(stdout_path) if stdout_path else None)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
