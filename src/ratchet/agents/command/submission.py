"""A submission without a request (`agent.command.submit = "on_exit"`): a CLI that exits by itself
with changes in scope has its workspace harvested as the candidate, and its report read from
REPORT_FILE at the top of the workspace, or else the end of its stdout.

Effects: reads one file of the workspace, never following a symlink.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ratchet.agents.base import MAX_REPORT_CHARS, MAX_SUMMARY_CHARS
from ratchet.agents.command.limits import EXIT_REPORT_TAIL_CHARS, REPORT_FILE
from ratchet.compute.base import JobResult

NO_REPORT = "(the agent's CLI exited with changes in scope and wrote no report)"


def exits_to_submit(result: JobResult) -> bool:
    """Whether a leg's process ended in a way that may submit on exit: by itself, exit code 0 (not
    killed at its time limit, not failed)."""
    return result.exit_code == 0 and result.state not in ("timeout", "killed", "cancelled", "oom")


def read_report_file(workspace: Path) -> str | None:
    """The text of REPORT_FILE at the top of `workspace` (its first MAX_REPORT_CHARS characters,
    stripped), or None when it is missing, blank, not a regular file, or a symlink (never followed:
    the kernel reads it as the operator)."""
    try:
        fd = os.open(workspace / REPORT_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_REPORT_CHARS * 4)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")[:MAX_REPORT_CHARS].strip()
    return text or None


def exit_report(workspace: Path, stdout_tail: str) -> tuple[str, str]:
    """The report of an on-exit submission and where it came from: (text, "REPORT.md") when the
    session wrote one, else (the end of the CLI's stdout, "stdout"), else (NO_REPORT, "none")."""
    written = read_report_file(workspace)
    if written is not None:
        return written, REPORT_FILE
    tail = stdout_tail[-EXIT_REPORT_TAIL_CHARS:].strip()
    return (tail, "stdout") if tail else (NO_REPORT, "none")


def summary_of(report: str) -> str:
    """A report's first non-blank line, cut to MAX_SUMMARY_CHARS characters (markdown heading
    marks removed)."""
    for line in report.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:MAX_SUMMARY_CHARS]
    return "(no summary)"
