"""Artifacts copied back from a job's checkout: regular files inside the tree only, size-capped."""

from __future__ import annotations

import os
from pathlib import Path

from ratchet.agents.command.artifacts import collect_artifacts, deliver_artifacts
from ratchet.agents.command.channel import Channel


def test_only_regular_files_inside_the_jobs_tree_are_copied(tmp_path: Path):
    tree, dest = tmp_path / "tree", tmp_path / "collected"
    (tree / "out").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("operator secret\n")
    (tree / "out" / "ok.json").write_text('{"a": 1}')
    (tree / "out" / "escape").symlink_to(tmp_path / "secret.txt")
    (tree / "out" / "inside").symlink_to("ok.json")
    os.mkfifo(tree / "out" / "pipe")
    (tree / "big.bin").write_bytes(b"x" * 100)
    notes = collect_artifacts(tree, ["out/ok.json", "out/escape", "out/inside", "out/pipe", "big.bin",
                                     "../secret.txt", "missing.txt"], dest, cap=10)
    files = dest / "files"
    assert (files / "out" / "ok.json").read_text() == '{"a": 1}'
    assert (files / "out" / "inside").read_text() == '{"a": 1}'  # a symlink resolving inside the tree
    assert not (files / "out" / "escape").exists() and not (files / "out" / "pipe").exists()
    assert (files / "big.bin").read_bytes() == b"x" * 10
    assert not (tmp_path / "collected" / "secret.txt").exists()
    text = "\n".join(notes)
    assert "out/escape: refused: it resolves outside the job's tree" in text
    assert "out/pipe: refused: not a regular file" in text
    assert "big.bin: truncated to 10 bytes" in text
    assert "'..' component" in text and "missing.txt: not found" in text


def test_delivered_artifacts_land_under_results_launch_index(tmp_path: Path):
    tree, dest, ws = tmp_path / "tree", tmp_path / "collected", tmp_path / "ws"
    (tree / "logs").mkdir(parents=True)
    (tree / "logs" / "run.txt").write_text("done\n")
    ws.mkdir()
    collect_artifacts(tree, ["logs/run.txt"], dest)
    with Channel(ws) as channel:
        assert deliver_artifacts(channel, "probe", 3, dest) == ["results/probe/3/logs/run.txt"]
    assert (ws / ".ratchet-sys" / "results" / "probe" / "3" / "logs" / "run.txt").read_text() == "done\n"
