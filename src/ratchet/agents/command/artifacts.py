"""Artifacts of a launched job, as collected by the executor (`compute.artifacts`) into a
kernel-owned directory, delivered into the channel as `results/<launch>/<i>/<path>`.
"""

from __future__ import annotations

from pathlib import Path

from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.compute.artifacts import FILES_DIR

RESULTS_DIR = "results"


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
