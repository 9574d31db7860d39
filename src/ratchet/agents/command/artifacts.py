"""Artifacts of a launched job: copied back from the job's checkout (which the agent's code wrote,
so it may hold symlinks and FIFOs) into a kernel-owned directory, then delivered into the channel
as `results/<launch>/<i>/<path>`.

Only regular files whose real path lies inside the job's tree are copied, at most
ARTIFACT_CAP_BYTES each (a larger file is truncated); each refusal is a note the agent reads.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.limits import ARTIFACT_CAP_BYTES, MAX_ARTIFACTS
from ratchet.agents.command.requests import check_artifact_path

FILES_DIR = "files"
NOTES_FILE = "notes.json"
RESULTS_DIR = "results"


def collect_artifacts(job_tree: Path, paths: Sequence[str], dest: Path,
                      cap: int = ARTIFACT_CAP_BYTES) -> list[str]:
    """Copy each declared artifact of a finished job from `job_tree` to `dest/files/<path>` and
    write `dest/notes.json` (a list of notes). Call after the job ended, before its checkout is
    removed. dest: a kernel-owned directory (created). Returns the notes, one per path refused or
    truncated. Never raises for a bad artifact."""
    root = os.path.realpath(job_tree)
    dest = Path(dest)
    (dest / FILES_DIR).mkdir(parents=True, exist_ok=True)
    notes = []
    for path in list(paths)[:MAX_ARTIFACTS]:
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


def deliver_artifacts(channel: Channel, launch: str, index: int, collected: Path | None) -> list[str]:
    """Write the artifacts collected in `collected/files/` into the channel at
    `results/<launch>/<index>/<path>` (hardened writes); returns the delivered paths, relative to
    the channel."""
    if collected is None:
        return []
    files = Path(collected) / FILES_DIR
    delivered = []
    for path in sorted(p for p in files.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(files).as_posix()
        where = [RESULTS_DIR, launch, str(index), *rel.split("/")]
        try:
            channel.write(where, path.read_bytes())
        except (ChannelError, OSError):
            continue
        delivered.append("/".join(where))
    return delivered
