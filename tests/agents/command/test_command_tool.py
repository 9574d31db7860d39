"""The `ratchet-sys` tool: stdlib only, every command has --help, and what it writes is what the
kernel accepts."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ratchet.agents import base as agents_base
from ratchet.agents.command import limits, requests
from ratchet.agents.command import queue as command_queue
from ratchet.agents.command.channel import Channel
from ratchet.agents.command.queue import TOOL_SOURCE
from ratchet.agents.command.requests import read_leg

COMMANDS = ("launch", "sleep", "submit", "queue", "launches", "history", "budget")


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
    assert _run(tool, "launch", "--name", "why", "--why", "two\nlines  here", "--", "true").returncode == 0
    (written,) = (tool.parent / "requests").iterdir()
    assert json.loads(written.read_text())["why"] == "two lines here", "the tool folds --why to one line"
    report = tool.parent / "r.md"
    report.write_text("Hypothesis: ...\n")
    assert _run(tool, "submit", "--report-file", str(report), "--summary", "one line").returncode == 0
    with Channel(tool.parent.parent) as channel:
        assert read_leg(channel, set()).submit.report == "Hypothesis: ...\n"


def test_the_tool_refuses_early_what_the_kernel_would_refuse(tool: Path):
    assert _run(tool, "launch", "--name", "bad/name", "--", "true").returncode == 2
    assert _run(tool, "launch", "--name", "a", "--artifact", "../x", "--", "true").returncode == 2
    assert _run(tool, "submit").returncode == 2
    assert _run(tool, "submit", "--report", " \n \t").returncode == 2
    assert not (tool.parent / "requests").exists() or not list((tool.parent / "requests").iterdir())


TOOL_OWN = frozenset({"CHANNEL", "REQUESTS", "STATE"})
"""The tool's upper-case names that are its own (paths it computes), not copies of the kernel's."""


def _load_tool(source: str, where: Path) -> types.ModuleType:
    """The tool as an agent runs it: a standalone file, not `ratchet.agents.command.tool`."""
    path = where / "ratchet-sys.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("ratchet_sys_copy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mirror_mismatches(tool: types.ModuleType) -> list[str]:
    """Each upper-case constant of the tool (except TOOL_OWN) against the kernel's constant of the
    same name in `limits`, `agents.base`, `requests` or `queue`: one line per copy that differs or has
    no original."""
    originals = [limits, agents_base, requests, command_queue]
    found = []
    for name in sorted(n for n in vars(tool) if n.isupper() and n not in TOOL_OWN):
        home = next((m for m in originals if hasattr(m, name)), None)
        if home is None:
            found.append(f"{name}: no kernel original")
            continue
        mine, theirs = getattr(tool, name), getattr(home, name)
        if isinstance(mine, re.Pattern):
            mine, theirs = mine.pattern, theirs.pattern
        if mine != theirs:
            found.append(f"{name}: the tool says {mine!r}, {home.__name__} says {theirs!r}")
    return found


def test_the_tools_copies_of_the_kernels_limits_equal_the_kernels(tmp_path: Path):
    tool = _load_tool(TOOL_SOURCE.read_text(), tmp_path)
    copied = {n for n in vars(tool) if n.isupper()} - TOOL_OWN
    assert {"MAX_LAUNCHES_PER_SLEEP", "MAX_ARRAY", "MAX_LAUNCH_MINUTES", "MAX_REPORT_CHARS", "NAME_RE"} <= copied
    assert _mirror_mismatches(tool) == []


def test_a_copy_that_drifts_from_the_kernel_is_named(tmp_path: Path):
    source = TOOL_SOURCE.read_text()
    drifted = source.replace("\nMAX_ARRAY = 16\n", "\nMAX_ARRAY = 17\n").replace(
        "\nSTATE_DIR = ", "\nEXTRA_LIMIT = 3\nSTATE_DIR = ")
    assert drifted.count("MAX_ARRAY = 17") == 1 and "EXTRA_LIMIT" in drifted
    assert _mirror_mismatches(_load_tool(drifted, tmp_path)) == [
        "EXTRA_LIMIT: no kernel original",
        "MAX_ARRAY: the tool says 17, ratchet.agents.command.limits says 16",
    ]
