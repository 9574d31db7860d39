"""A job's artifacts (`JobSpec.artifacts`): files the job wrote in its workdir, copied by the
executor, once the job ended and before its workdir is removed, into a kernel-owned directory:
`<dest>/files/<path>` and `<dest>/notes.json` (a JSON list of notes, one per path refused or
truncated).

The job's code wrote its workdir, so it may hold symlinks and FIFOs: only regular files whose real
path lies inside the workdir are copied, at most ARTIFACT_CAP_BYTES each (a larger file is
truncated). Effects: reads the workdir, writes `dest`.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ratchet.compute.base import ArtifactSpec

MAX_ARTIFACTS = 8
"""Artifacts collected per job (those named after the 8th are ignored)."""

MAX_ARTIFACT_PATH_CHARS = 256
"""Characters of one artifact path."""

ARTIFACT_CAP_BYTES = 1024 * 1024
"""Bytes of one artifact copied back (a larger file is truncated, with a note)."""

FILES_DIR = "files"
"""Under an artifacts directory: the copied files, at their paths in the job's workdir."""

NOTES_FILE = "notes.json"
"""Under an artifacts directory: the notes of the collection (a JSON list of strings)."""


def check_artifact_path(path: str) -> str:
    """A relative path inside a job's tree: no absolute path, no empty, `.` or `..` component, no
    NUL, no backslash, at most MAX_ARTIFACT_PATH_CHARS characters. Raises ValueError."""
    if not path or len(path) > MAX_ARTIFACT_PATH_CHARS:
        raise ValueError(f"an artifact path has 1 to {MAX_ARTIFACT_PATH_CHARS} characters")
    if path.startswith("/") or "\0" in path or "\\" in path:
        raise ValueError(f"artifact path {path[:80]!r} must be relative, without NUL or backslash")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"artifact path {path[:80]!r} has an empty, '.' or '..' component")
    return path


def collect_artifacts(workdir: Path, artifacts: ArtifactSpec, cap: int = ARTIFACT_CAP_BYTES) -> list[str]:
    """Copy the first MAX_ARTIFACTS of `artifacts.paths` from `workdir` (a job that ended) to
    `artifacts.dest/files/<path>` (created), at most `cap` bytes each, and write
    `artifacts.dest/notes.json`. Returns the notes, one per path refused or truncated. Never raises
    for a bad artifact; OSError when `dest` cannot be written."""
    root = os.path.realpath(workdir)
    dest = Path(artifacts.dest)
    (dest / FILES_DIR).mkdir(parents=True, exist_ok=True)
    notes = []
    for path in list(artifacts.paths)[:MAX_ARTIFACTS]:
        try:
            check_artifact_path(path)
        except ValueError as exc:
            notes.append(f"{path[:80]}: refused: {exc}")
            continue
        note = _copy_one(root, path, dest / FILES_DIR / path, cap)
        if note:
            notes.append(f"{path}: {note}")
    (dest / NOTES_FILE).write_text(json.dumps(notes))
    return notes


def _copy_one(root: str, path: str, target: Path, cap: int) -> str | None:
    real = os.path.realpath(os.path.join(root, path))
    if not real.startswith(root.rstrip("/") + "/"):
        return "refused: it resolves outside the job's tree"
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "not found after the job ended"
    except OSError as exc:
        return f"refused: {exc.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "refused: not a regular file"
        data = os.read(fd, cap + 1)
        while len(data) <= cap:
            more = os.read(fd, cap + 1 - len(data))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data[:cap])
    return f"truncated to {cap} bytes" if len(data) > cap else None


def artifact_notes(collected: Path | None) -> list[str]:
    """The notes `collect_artifacts` wrote in `collected` (empty when none)."""
    if collected is None:
        return []
    try:
        notes = json.loads((Path(collected) / NOTES_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [str(n) for n in notes] if isinstance(notes, list) else []
