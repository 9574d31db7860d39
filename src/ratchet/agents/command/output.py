"""A leg's output kept with the run: the CLI's command line as run and the end of its stdout and
stderr (each its last LEG_OUTPUT_CAP_BYTES), stored as blobs and named by the `agent.leg` record.

Legs run on the kernel's agent executor (`compute.factory.make_agent_executor`), which keeps the end
of an output over the leg's cap on disk; this module reads those files back once the leg ended.
Effects: reads the leg's output files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.agents.command.limits import LEG_OUTPUT_CAP_BYTES
from ratchet.compute.base import JobResult
from ratchet.core.canonical import canonical_bytes
from ratchet.core.jobfiles import JobFiles


@dataclass(frozen=True)
class LegOutput:
    """What one leg wrote. stdout, stderr: the last LEG_OUTPUT_CAP_BYTES bytes of each stream as
    written (None: no file was left, e.g. a leg never started); *_bytes: bytes written in all (None:
    not counted); *_truncated: more was written than kept."""

    stdout: bytes | None = None
    stderr: bytes | None = None
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False


def read_leg_output(result: JobResult) -> LegOutput:
    """The output of the leg that ended as `result`, read from its job's files (its stdout file and
    the stderr beside it)."""
    if result.stdout_path is None:
        return LegOutput(stdout_bytes=result.stdout_bytes, stderr_bytes=result.stderr_bytes)
    files = JobFiles(result.stdout_path.parent)
    return LegOutput(_read_end(files.stdout), _read_end(files.stderr), result.stdout_bytes, result.stderr_bytes,
                     result.stdout_truncated, result.stderr_truncated)


def _read_end(path: Path) -> bytes | None:
    """The last LEG_OUTPUT_CAP_BYTES bytes of file `path`; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - LEG_OUTPUT_CAP_BYTES))
            return f.read()
    except OSError:
        return None


def output_fields(argv: Sequence[str] | None, output: LegOutput, record_blob: Callable[[bytes], str]
                  ) -> dict[str, Any]:
    """The `agent.leg` fields naming a leg's command line (`argv_blob`, a JSON list of strings) and
    its output (`stdout_blob`, `stderr_blob`, the byte counts and truncation flags); each blob is
    stored through `record_blob` (bytes -> digest). argv None: the leg never ran its command."""
    def blob(data: bytes | None) -> str | None:
        return record_blob(data) if data is not None else None

    return {
        "argv_blob": blob(canonical_bytes(list(argv)) if argv is not None else None),
        "stdout_blob": blob(output.stdout), "stderr_blob": blob(output.stderr),
        "stdout_bytes": output.stdout_bytes, "stderr_bytes": output.stderr_bytes,
        "stdout_truncated": output.stdout_truncated, "stderr_truncated": output.stderr_truncated,
    }
