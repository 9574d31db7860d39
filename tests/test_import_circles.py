"""Imports point inwards (from the command line to the pure core), and no import circle between
Ratchet's modules hides behind an import made late: one inside a function, or under
`if TYPE_CHECKING:`. Either is allowed (a heavy library loaded only where it is needed), but not
when the imported module already reaches the importer through its own imports.
The import graph is walked with `ast`; importing `ratchet.a.b` counts as importing `ratchet.a` too
(its `__init__.py` runs first)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted((SRC / "ratchet").rglob("*.py"))}


def _targets(name: str, node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The Ratchet modules `node` (in module `name`, of package `package`) imports, with their
    parent packages."""
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
        named = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    out = []
    for target in named:
        parts = target.split(".")
        out += [".".join(parts[:k]) for k in range(2, len(parts) + 1) if ".".join(parts[:k]) in MODULES]
    return [t for t in dict.fromkeys(out) if t != name]


def _is_type_checking(node: ast.If) -> bool:
    return ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def import_edges(name: str, source: str) -> tuple[set[str], set[str]]:
    """(eager, late): the Ratchet modules module `name` imports when it is imported, and those it
    imports inside a function or under `if TYPE_CHECKING:`."""
    package = name if MODULES.get(name, Path()).name == "__init__.py" else name.rpartition(".")[0]
    eager: set[str] = set()
    late: set[str] = set()

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                (late if deferred else eager).update(_targets(name, child, package))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, True)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), deferred)
            else:
                visit(child, deferred)

    visit(ast.parse(source), False)
    return eager, late - eager


def late_circles(sources: dict[str, str]) -> list[str]:
    """Each late import A -> B of `sources` (module name -> its text) where B reaches A through
    eager imports, as `A -> B -> ... -> A`."""
    edges = {name: import_edges(name, text) for name, text in sources.items()}
    found = []
    for name, (_, late) in sorted(edges.items()):
        for target in sorted(late):
            path = _eager_path(edges, target, name)
            if path is not None:
                found.append(" -> ".join([name, *path]))
    return found


def _eager_path(edges: dict[str, tuple[set[str], set[str]]], start: str, goal: str) -> list[str] | None:
    """The modules from `start` to `goal` along eager imports (breadth first), or None."""
    came: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if node == goal:
            path = [node]
            while (prev := came[path[-1]]) is not None:
                path.append(prev)
            return path[::-1]
        for nxt in sorted(edges.get(node, (set(), set()))[0]):
            if nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    return None


def test_no_late_import_closes_a_circle_between_ratchet_modules():
    sources = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items()}
    assert late_circles(sources) == []


def test_the_walk_sees_a_circle_closed_inside_a_function_or_under_type_checking():
    sources = {
        "ratchet.core.contract": "from ratchet.core.contract_llm import LlmAgentConfig\n",
        "ratchet.core.contract_llm": "def f():\n    from ratchet.core.contract import check_scope_path\n",
        "ratchet.compute.local": "from ratchet.compute.job_process import JobProcess\n",
        "ratchet.compute.job_process": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    from ratchet.compute.local import LocalExecutor\n"),
        "ratchet.present.render": "def g():\n    from ratchet.present import calibration\n",
        "ratchet.present.calibration": "from ratchet.present.render import fmt_num\n",
        "ratchet.present.report.html": "def h():\n    import ratchet.present.render\n",
    }
    assert late_circles(sources) == [
        "ratchet.compute.job_process -> ratchet.compute.local -> ratchet.compute.job_process",
        "ratchet.core.contract_llm -> ratchet.core.contract -> ratchet.core.contract_llm",
        "ratchet.present.render -> ratchet.present.calibration -> ratchet.present.render",
    ]


FLOORS = (("cli", "__main__"), ("cli_shell",), ("commands",), ("loop",), ("targets", "agents"), ("compute",),
          ("ledger", "present", "workspace"), ("core",))
"""The packages from the command line inwards, as `ratchet/__init__.py` lists them: a module imports
only from its own package or a floor below its own (further down this list)."""


def _floor(name: str) -> tuple[int, str]:
    top = name.split(".")[1]
    return next(k for k, floor in enumerate(FLOORS) if top in floor), top


def outward_imports(sources: dict[str, str]) -> list[str]:
    """Each import (eager or late) of `sources` that runs back up or sideways, as `A -> B`."""
    found = []
    for name, text in sorted(sources.items()):
        if name == "ratchet":
            continue
        eager, late = import_edges(name, text)
        targets = eager | late
        for target in sorted(targets):
            if target == "ratchet" or any(t.startswith(target + ".") for t in targets):
                continue  # a package reported through the module imported from it
            (mine, top), (theirs, other) = _floor(name), _floor(target)
            if theirs < mine or (theirs == mine and other != top and name != "ratchet.__main__"):
                found.append(f"{name} -> {target}")
    return found


def test_imports_point_inwards():
    sources = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items()}
    assert outward_imports(sources) == []


def test_the_walk_sees_an_import_back_up_and_one_sideways():
    sources = {
        "ratchet.core.gate": "def f():\n    from ratchet.loop.trial import measure_looks\n",
        "ratchet.ledger.index": "from ratchet.present.render import fmt_num\n",
        "ratchet.loop.kernel": "from ratchet.compute.base import Executor\nfrom ratchet.core.plan import Plan\n",
    }
    assert outward_imports(sources) == ["ratchet.core.gate -> ratchet.loop.trial",
                                        "ratchet.ledger.index -> ratchet.present.render"]
