"""Artifacts collected from a launched job (tests/compute/test_artifacts.py), delivered into the
agent's channel."""

from __future__ import annotations

from pathlib import Path

from ratchet.agents.command.artifacts import deliver_artifacts
from ratchet.agents.command.channel import Channel
from ratchet.compute.artifacts import collect_artifacts
from ratchet.compute.base import ArtifactSpec


def test_delivered_artifacts_land_under_results_launch_index(tmp_path: Path):
    tree, dest, ws = tmp_path / "tree", tmp_path / "collected", tmp_path / "ws"
    (tree / "logs").mkdir(parents=True)
    (tree / "logs" / "run.txt").write_text("done\n")
    ws.mkdir()
    collect_artifacts(tree, ArtifactSpec(("logs/run.txt",), dest))
    with Channel(ws) as channel:
        assert deliver_artifacts(channel, "probe", 3, dest) == ["results/probe/3/logs/run.txt"]
    assert (ws / ".ratchet-sys" / "results" / "probe" / "3" / "logs" / "run.txt").read_text() == "done\n"
