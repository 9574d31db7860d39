"""The `ratchet-sys` tool: stdlib only, every command has --help, and what it writes is what the
kernel accepts."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.agents.command.agent import TOOL_SOURCE
from ratchet.agents.command.channel import Channel
from ratchet.agents.command.requests import read_leg

COMMANDS = ("launch", "sleep", "submit", "queue", "history", "budget")


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    channel = tmp_path / "ws" / ".ratchet-sys"
    channel.mkdir(parents=True)
    shutil.copy(TOOL_SOURCE, channel / "ratchet-sys")
    return channel / "ratchet-sys"


def _run(tool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", str(tool), *args], capture_output=True, text=True,
                          cwd=tool.parent.parent, check=False)


def test_the_tool_imports_only_the_standard_library():
    tree = ast.parse(TOOL_SOURCE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(tool: Path, command: str):
    proc = _run(tool, command, "--help")
    assert proc.returncode == 0 and "usage: ratchet-sys" in proc.stdout


def test_what_the_tool_writes_the_kernel_accepts(tool: Path):
    assert _run(tool, "launch", "--name", "sweep", "--array", "3", "--concurrency", "2", "--minutes", "5",
                "--artifact", "out/log.txt", "--why", "try three", "--", "python3", "x.py").returncode == 0
    assert _run(tool, "sleep", "--note", "back soon").returncode == 0
    with Channel(tool.parent.parent) as channel:
        leg = read_leg(channel, set())
    (launch,) = leg.launches
    assert (launch.name, launch.command, launch.array, launch.concurrency) == ("sweep", "python3 x.py", 3, 2)
    assert launch.artifacts == ["out/log.txt"] and leg.sleep.note == "back soon" and leg.notices == []
    report = tool.parent / "r.md"
    report.write_text("Hypothesis: ...\n")
    assert _run(tool, "submit", "--report-file", str(report), "--summary", "one line").returncode == 0
    with Channel(tool.parent.parent) as channel:
        assert read_leg(channel, set()).submit.report == "Hypothesis: ...\n"


def test_the_tool_refuses_early_what_the_kernel_would_refuse(tool: Path):
    assert _run(tool, "launch", "--name", "bad/name", "--", "true").returncode == 2
    assert _run(tool, "launch", "--name", "a", "--artifact", "../x", "--", "true").returncode == 2
    assert _run(tool, "submit").returncode == 2
    assert not (tool.parent / "requests").exists() or not list((tool.parent / "requests").iterdir())
