"""Fixtures for the command agent: the offline example project as a real git repository, and a way
to build a CommandAgent on it whose CLI is any shell script (real processes under bwrap), its legs
run on a local executor the fixture owns (as the kernel does)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from command_drive import LaunchSettings, drive_attempt, run_launch
from repo_fixture import git

from ratchet.agents.base import Action, AgentContext
from ratchet.agents.command.agent import CommandAgent
from ratchet.agents.command.factory import build_command_agent
from ratchet.commands.contract_file import load_contract
from ratchet.compute.base import JobResult, JobSpec, SandboxSpec, run_jobs
from ratchet.compute.local import LocalExecutor
from ratchet.core.canonical import digest_bytes
from ratchet.core.contract import Contract
from ratchet.workspace.git import Git

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agent"


@dataclass
class Recorder:
    """The record_blob / record callbacks, kept in memory."""

    blobs: dict[str, bytes] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    payloads: list[Any] = field(default_factory=list)

    def blob(self, data: bytes) -> str:
        self.blobs[digest_bytes(data)] = data
        return digest_bytes(data)

    def record(self, payload: Any) -> None:
        self.payloads.append(payload)
        self.events.append((payload.kind, payload.to_data()))

    def legs(self) -> list[dict[str, Any]]:
        return [d for k, d in self.events if k == "agent.leg"]

    def leg_payloads(self) -> list[Any]:
        return [p for p in self.payloads if p.kind == "agent.leg"]

    def text(self, digest: str) -> str:
        return self.blobs[digest].decode("utf-8")


@dataclass
class AgentProject:
    """The example project as a git repository, with helpers to run one attempt. `legs`: the
    local executor the agent's legs run on."""

    root: Path
    work: Path
    git: Git
    legs: LocalExecutor
    recorder: Recorder = field(default_factory=Recorder)

    @property
    def contract(self) -> Contract:
        return load_contract(self.root).contract

    def set_agent(self, command: str, **keys: Any) -> None:
        """Replace `[agent.command]`'s command (and other keys) in ratchet.toml and commit."""
        text = (self.root / "ratchet.toml").read_text()
        head, _, _ = text.partition("[agent.command]")
        lines = [f"command = {command!r}"] + [f"{k} = {_toml(v)}" for k, v in keys.items()]
        if "timeout_s" not in keys:
            lines.append("timeout_s = 60")
        rest = text.split("[gate]", 1)[1]
        (self.root / "ratchet.toml").write_text(head + "[agent.command]\n" + "\n".join(lines) + "\n\n[gate]" + rest)
        git(self.root, "commit", "-qam", "agent command")

    def commit_contract(self) -> None:
        """Commit ratchet.toml as edited."""
        git(self.root, "commit", "-qam", "contract")

    def agent(self, **kwargs: Any) -> CommandAgent:
        return build_command_agent(self.contract, self.root, self.git, self.work, self.recorder.blob,
                                   self.recorder.record, self.run_leg, **kwargs)

    def run_leg(self, spec: JobSpec) -> JobResult:
        (result,) = run_jobs(self.legs, [spec])
        return result

    def context(self, attempt: int = 1) -> AgentContext:
        return AgentContext(attempt, self.git.tree_of("HEAD"), 0)

    def attempt(self, agent: CommandAgent | None = None) -> Action:
        """One attempt, launches run for real (sandboxed) by `run_launch`."""
        settings = LaunchSettings(self.work / "launches", metric="score", sandbox=SandboxSpec("bwrap", False))
        return drive_attempt(agent or self.agent(), self.context(),
                             lambda launch, n: run_launch(self.git, launch, n, 1, settings))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value).replace("'", '"') if '"' not in value else f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


@pytest.fixture
def agent_project(tmp_path: Path) -> Iterator[AgentProject]:
    """examples/agent copied to tmp_path/"project" and committed; tmp_path/"work" is the
    kernel's work directory (outside the project), its legs' job directories under work/legs."""
    root = tmp_path / "project"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "baseline")
    work = tmp_path / "work"
    work.mkdir()
    with LocalExecutor(work / "legs", 1, keep_end=True) as legs:  # as compute.factory.make_agent_executor
        yield AgentProject(root, work, Git(root), legs)


@pytest.fixture
def write_script() -> Callable[[Path, str, str], str]:
    """`write_script(root, name, body)`: commit an executable shell script `agent/<name>` into the
    project (protected: the agent's own program) and return its relative path."""

    def write(root: Path, name: str, body: str) -> str:
        path = root / "agent" / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        git(root, "add", "-A")
        git(root, "commit", "-qm", f"agent script {name}")
        return f"agent/{name}"

    return write
