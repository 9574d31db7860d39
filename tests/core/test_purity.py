"""The pure core stays pure: no module under `ratchet/core/` imports anything effectful or anything
above it, nor opens, reads, writes or inspects files. The import graph is walked with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "src" / "ratchet" / "core"

FORBIDDEN_MODULES = ("subprocess", "shutil", "sqlite3", "signal", "threading", "ratchet.compute", "ratchet.workspace",
                     "ratchet.ledger", "ratchet.loop", "ratchet.commands", "ratchet.present", "ratchet.agents",
                     "ratchet.targets", "ratchet.cli")
"""What no core module may import: effects, and every package above the core."""

FORBIDDEN_CALLS = ("open", "write_text", "write_bytes", "read_text", "read_bytes", "is_file", "is_dir", "exists",
                   "is_symlink", "stat", "lstat", "iterdir", "glob", "rglob", "walk", "resolve", "readlink",
                   "samefile", "touch", "mkdir", "unlink", "rmdir", "chmod")
"""Calls that open, read, write or inspect files (`open(`, `Path.read_*`, `Path.write_*`,
`Path.exists`, `Path.stat`, `Path.glob`, ...). Every call on `os` is refused as well (`os.open`,
`os.stat`, `os.listdir`, ...), reported as `os.<name>`."""


def _forbidden(calls: list[str]) -> list[str]:
    return [c for c in calls if c in FORBIDDEN_CALLS or c.startswith("os.")]


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _calls(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                out.append(f.id)
            elif isinstance(f, ast.Attribute):
                base = ast.unparse(f.value)
                out.append(f"{base}.{f.attr}" if base == "os" or base.startswith("os.") else f.attr)
    return out


CORE_MODULES = sorted(CORE.rglob("*.py"))


@pytest.mark.parametrize("path", CORE_MODULES, ids=[str(p.relative_to(CORE)) for p in CORE_MODULES])
def test_a_core_module_imports_nothing_effectful_and_touches_no_file(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [name for name in _imports(tree) if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_MODULES)]
    assert not bad, f"{path.name} imports {bad}"
    touched = _forbidden(_calls(tree))
    assert not touched, f"{path.name} calls {touched}"


def test_the_walk_sees_a_forbidden_import_and_an_open():
    source = "import subprocess\nfrom ratchet.ledger.events import EventLog\nopen('x')\nimport os\nos.open('y', 0)\n"
    tree = ast.parse(source)
    assert [n for n in _imports(tree) if n in ("subprocess", "ratchet.ledger.events")] == ["subprocess",
                                                                                         "ratchet.ledger.events"]
    assert _forbidden(_calls(tree)) == ["open", "os.open"]


def test_the_walk_sees_a_file_read():
    source = ("from pathlib import Path\nraw = Path('ratchet.toml').read_bytes()\nif path.is_file(): pass\n"
              "if (root / entry).exists(): pass\nos.stat('x')\nos.path.getsize('y')\n")
    assert sorted(_forbidden(_calls(ast.parse(source)))) == ["exists", "is_file", "os.path.getsize", "os.stat",
                                                          "read_bytes"]


def test_no_type_checker_silenced_in_src():
    """mypy passes on src/ without `type: ignore` comments (a cast or a narrowing says why)."""
    src = CORE.parent
    found = [f"{p.relative_to(src)}:{i}" for p in sorted(src.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if "type: ignore" in line]
    assert not found, found
