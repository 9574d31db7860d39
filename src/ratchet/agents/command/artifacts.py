"""What a launched job left, delivered into the channel under `results/<launch>/<i>/`: its result
(`result.json`, `stdout.txt`, `stderr.txt`) and its artifacts, as collected by the executor
(`compute.artifacts`) into a kernel-owned directory, as `<path>` (`deliver_results`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ratchet.agents.base import LaunchResult
from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.messages import JobView
from ratchet.agents.command.queue import QueuedJob, settle
from ratchet.agents.command.requests import LaunchRequest
from ratchet.compute.artifacts import FILES_DIR, artifact_notes

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


def deliver_results(workspace: Path, pending: Sequence[tuple[LaunchRequest, int]], results: Sequence[LaunchResult],
                    queue: list[QueuedJob]) -> list[JobView]:
    """Write each job's result and artifacts into `results/<launch>/<i>/` of `workspace`'s channel
    (`pending`: each job's launch request and index, in the order of `results`) and settle its row of
    `queue`; returns the views for the wake message. Raises ChannelError when the channel is refused."""
    views = []
    with Channel(workspace) as channel:
        for (request, i), r in zip(pending, results, strict=False):
            where = [RESULTS_DIR, request.name, str(i)]
            summary = {"state": r.state, "exit_code": r.exit_code, "value": r.value, "elapsed_s": r.elapsed_s}
            channel.write([*where, "result.json"], json.dumps(summary).encode())
            channel.write([*where, "stdout.txt"], r.stdout_tail.encode("utf-8"))
            channel.write([*where, "stderr.txt"], r.stderr_tail.encode("utf-8"))
            collected = Path(r.artifacts_dir) if r.artifacts_dir else None
            delivered = deliver_artifacts(channel, request.name, i, collected)
            views.append(JobView(request.name, i, r, tuple(delivered), tuple(artifact_notes(collected)),
                                 why=request.why, minutes=request.minutes))
            settle(queue, request.name, i, r.state, r.value)
    return views
