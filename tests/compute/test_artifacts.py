"""A job's artifacts copied back from its workdir: regular files inside the tree only, size-capped;
collected by the executor once the job ended, before its workdir goes."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from ratchet.compute.artifacts import collect_artifacts
from ratchet.compute.base import ArtifactSpec, JobSpec, SandboxSpec
from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import resolve_mode


def test_only_regular_files_inside_the_jobs_tree_are_copied(tmp_path: Path):
    tree, dest = tmp_path / "tree", tmp_path / "collected"
    (tree / "out").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("operator secret\n")
    (tree / "out" / "ok.json").write_text('{"a": 1}')
    (tree / "out" / "escape").symlink_to(tmp_path / "secret.txt")
    (tree / "out" / "inside").symlink_to("ok.json")
    os.mkfifo(tree / "out" / "pipe")
    (tree / "big.bin").write_bytes(b"x" * 100)
    paths = ("out/ok.json", "out/escape", "out/inside", "out/pipe", "big.bin", "../secret.txt", "missing.txt")
    notes = collect_artifacts(tree, ArtifactSpec(paths, dest), cap=10)
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
    assert json.loads((dest / "notes.json").read_text()) == notes


def _job(work: Path, job_id: str, script: str, dest: Path, timeout_s: float = 30.0) -> JobSpec:
    workdir = work / job_id
    workdir.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    return JobSpec(job_id, ("/bin/sh", "-c", script), workdir, env, timeout_s,
                   artifacts=ArtifactSpec(("out.txt", "absent.txt"), dest))


def test_the_local_executor_collects_a_specs_artifacts_when_the_job_ends(tmp_path: Path):
    with LocalExecutor(tmp_path / "jobs", 2) as executor:
        ok, failed = executor.run([_job(tmp_path / "w", "ok", "echo made > out.txt", tmp_path / "a" / "ok"),
                                   _job(tmp_path / "w", "failed", "echo half > out.txt; exit 4", tmp_path / "a" / "f")])
    assert (ok.state, failed.state) == ("ok", "failed")
    assert (tmp_path / "a" / "ok" / "files" / "out.txt").read_text() == "made\n"
    assert (tmp_path / "a" / "f" / "files" / "out.txt").read_text() == "half\n"  # a failed job's too
    notes = json.loads((tmp_path / "a" / "ok" / "notes.json").read_text())
    assert notes == ["absent.txt: not found after the job ended"]


def test_a_cancelled_jobs_artifacts_are_not_collected(tmp_path: Path):
    with LocalExecutor(tmp_path / "jobs", 1) as executor:
        executor.cancel()
        (result,) = executor.run([_job(tmp_path / "w", "never", "echo x > out.txt", tmp_path / "a")])
    assert result.state == "cancelled" and not (tmp_path / "a").exists()


@pytest.mark.skipif(resolve_mode("auto") == "none", reason="bubblewrap does not work here")
def test_artifacts_are_collected_from_a_sandboxed_jobs_checkout(tmp_path: Path):
    spec = replace(_job(tmp_path / "w", "boxed", "echo boxed > out.txt", tmp_path / "a"), sandbox=SandboxSpec("bwrap"))
    with LocalExecutor(tmp_path / "jobs", 1) as executor:
        (result,) = executor.run([spec])
    assert result.state == "ok", result.stderr_tail
    assert (tmp_path / "a" / "files" / "out.txt").read_text() == "boxed\n"
