"""The seams are declared, not probed: no module asks an agent or an executor whether it has an
attribute (`getattr`/`hasattr`), no module outside `compute/` branches on which backend an executor
is, and the loop reaches the command agent only through the module that builds agents. Walked with
`ast` over `src/ratchet`."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ratchet"

SEAM_WORDS = ("agent", "executor")
"""An expression whose last name holds one of these is an agent or an executor (`self.agent`,
`kernel.executor`), unless it reads the contract (`contract.agent` is a section of settings)."""


def _modules() -> list[tuple[str, ast.AST]]:
    return [(path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path)))
            for path in sorted(SRC.rglob("*.py"))]


def _names_a_seam(node: ast.AST) -> bool:
    parts = ast.unparse(node).lower().split(".")
    return "contract" not in parts and any(word in parts[-1] for word in SEAM_WORDS)


def probes(tree: ast.AST) -> list[str]:
    """`getattr(x, ...)` / `hasattr(x, ...)` calls whose object names an agent or an executor."""
    return [ast.unparse(node) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr") and node.args and _names_a_seam(node.args[0])]


def backend_branches(tree: ast.AST) -> list[str]:
    """Comparisons of an executor's `backend` (`executor.backend == "local"`)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Attribute) and side.attr == "backend" and _names_a_seam(side.value):
                    out.append(ast.unparse(node))
    return out


def test_the_scans_find_what_they_look_for():
    tree = ast.parse('getattr(self.agent, "resume", None)\nif kernel.executor.backend != "local": pass\n'
                     'getattr(contract.agent, contract.agent.kind)\nhasattr(prober, "x")\n')
    assert probes(tree) == ["getattr(self.agent, 'resume', None)"]
    assert backend_branches(tree) == ["kernel.executor.backend != 'local'"]


def test_no_module_probes_an_agent_or_an_executor():
    found = {name: p for name, tree in _modules() if (p := probes(tree))}
    assert found == {}, "declare the hook on agents.base.Agent or the capability on compute.base.Executor"


def test_no_module_outside_compute_branches_on_the_executors_backend():
    found = {name: b for name, tree in _modules() if not name.startswith("compute/") and (b := backend_branches(tree))}
    assert found == {}, "declare a capability on compute.base.Executor instead"


def test_only_the_agent_factory_of_the_loop_imports_the_command_agent():
    importers = []
    for name, tree in _modules():
        if not name.startswith("loop/") or name == "loop/agents.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ratchet.agents.command"):
                importers.append(name)
    assert importers == []
