"""Which modules in `scope.allowed` a `python FILE` benchmark imports (docs/threat-model.md).

Scope protects files, not a process: a module a candidate may change, imported by the benchmark,
runs inside the benchmark's process and can change what it prints (an exit hook printing a better
metric line). `ratchet check` warns about every such import. Reads the benchmark's source and the
project modules it imports (transitively, with `ast`: nothing is executed); a command it does not
understand (a shell pipeline, a non-Python program) yields no finding.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_MODULES_READ = 200  # project modules parsed per benchmark (bounds the transitive walk)
MAX_SOURCE_BYTES = 1024 * 1024  # a larger file is not parsed


@dataclass(frozen=True)
class ScopeImport:
    """One import of a module a candidate may change. `importer`: the project file holding the
    import (relative, POSIX); `module`: the dotted name imported; `allowed`: the `scope.allowed`
    entry it falls under."""

    importer: str
    module: str
    allowed: str


def benchmark_script(command: str) -> tuple[str, str] | None:
    """("file", path) for `python[3[.X]] [-flags] FILE ...`, ("module", name) for `python -m NAME`,
    else None (a shell pipeline, another program, unparsable quoting)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or not PurePosixPath(argv[0]).name.startswith("python"):
        return None
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "-m":
        return ("module", rest[1])
    if rest and rest[0].endswith(".py"):
        return ("file", rest[0])
    return None


def _module_file(root: Path, name: str) -> Path | None:
    """The project file of dotted module `name` under `root` (a .py file or a package's
    __init__.py), or None when it is not part of the project."""
    if not name or any(not part.isidentifier() for part in name.split(".")):
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.parent / (base.name + ".py"), base / "__init__.py"):
        if path.is_file() and path.resolve().is_relative_to(root.resolve()):
            return path
    return None


def _imported_names(path: Path, base: Path) -> list[str]:
    """Dotted module names importing `path` runs, resolved against `base` (the script's directory):
    absolute imports, relative ones resolved against its package, every parent package of each
    (`import a.b` runs `a` too), and `from m import x` counted as module `m.x` only when that file
    exists. [] when it cannot be read or parsed."""
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return []
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    package = path.parent.relative_to(base).parts
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                head = ".".join((*parts, node.module) if node.module else parts)
            else:
                head = node.module or ""
            if head:
                names.append(head)
            names.extend(f"{head}.{a.name}".lstrip(".") for a in node.names
                         if a.name != "*" and _module_file(base, f"{head}.{a.name}".lstrip(".")))
    with_parents: list[str] = []
    for name in names:
        pieces = name.split(".")
        with_parents.extend(".".join(pieces[: i + 1]) for i in range(len(pieces)))
    return list(dict.fromkeys(with_parents))


def _allowed_module(name: str, allowed: Sequence[str]) -> str | None:
    """The `scope.allowed` entry covering module `name` (as a file or a folder), or None."""
    path = PurePosixPath(*name.split("."))
    candidates = {f"{path}.py", f"{path}/__init__.py"}
    for entry in allowed:
        clean = entry.rstrip("/")
        if any(c == clean or c.startswith(clean + "/") for c in candidates):
            return entry
    return None


def scope_imports(command: str, root: Path, allowed: Sequence[str]) -> list[ScopeImport]:
    """Every import, by the benchmark of `command` or by a project module it imports
    (transitively), of a module that falls under `scope.allowed`; [] when `command` is not a
    `python FILE` / `python -m NAME` benchmark or its script is not in the project. Each module
    is reported once (its first importer), in discovery order; at most MAX_MODULES_READ files are
    parsed. The script's own directory is where imports resolve (Python puts it first on sys.path).
    """
    script = benchmark_script(command)
    if script is None:
        return []
    how, what = script
    start = _module_file(root, what) if how == "module" else root / what
    if start is None or not start.is_file() or not start.resolve().is_relative_to(root.resolve()):
        return []
    base = start.parent if how == "file" else root
    found: dict[str, ScopeImport] = {}
    queue, seen = [start], {start.resolve()}
    while queue and len(seen) <= MAX_MODULES_READ:
        path = queue.pop(0)
        importer = path.relative_to(root).as_posix()
        for name in _imported_names(path, base):
            rel_name = ".".join((*base.relative_to(root).parts, name))
            entry = _allowed_module(rel_name, allowed)
            if entry and name not in found:
                found[name] = ScopeImport(importer, name, entry)
            target = _module_file(base, name)
            if target is not None and target.resolve() not in seen:
                seen.add(target.resolve())
                queue.append(target)
    return list(found.values())
