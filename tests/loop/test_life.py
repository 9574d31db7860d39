"""One owner of a run's life: `loop/life.py` alone writes the lifecycle events (`run.started`,
`run.resumed`, `run.stopped`, `run.abandoned`), and no module outside `loop/` writes an attempt's
events or a verdict. The sources are walked with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

from ratchet.core.payloads import PAYLOADS

SRC = Path(__file__).resolve().parents[2] / "src" / "ratchet"

LIFECYCLE_KINDS = ("run.started", "run.resumed", "run.stopped", "run.abandoned")
"""The lifecycle events."""

KIND_OF_MODEL = {model.__name__: kind for kind, model in PAYLOADS.items()}
"""Each payload model's class name -> its event kind (constructing one is writing that kind)."""

LOOP_KINDS = ("attempt.", "trial.judged")
"""Kinds (prefixes) written by the loop only: an attempt's events and a verdict."""

WRITERS = ("record", "once", "append")
"""Methods that append an event: Kernel.record / Kernel.once, EventLog.append."""


def _writes(tree: ast.AST) -> list[str]:
    """The event kinds written in `tree`: the string first argument of a WRITERS call, or the kind
    of a payload model constructed anywhere."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in WRITERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                out.append(first.value)
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in KIND_OF_MODEL:
            out.append(KIND_OF_MODEL[name])
    return out


def _writers_of(kinds: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "payloads.py":
            continue  # the models' own definitions
        hits = [k for k in _writes(ast.parse(path.read_text(encoding="utf-8"))) if k.startswith(kinds)]
        if hits:
            found[str(path.relative_to(SRC))] = hits
    return found


def test_only_loop_life_writes_a_lifecycle_event():
    writers = _writers_of(LIFECYCLE_KINDS)
    assert set(writers) == {"loop/life.py"}, writers
    assert set(writers["loop/life.py"]) >= set(LIFECYCLE_KINDS)


def test_no_module_outside_the_loop_writes_an_attempt_or_a_verdict():
    writers = _writers_of(LOOP_KINDS)
    outside = {path: kinds for path, kinds in writers.items() if not path.startswith("loop/")}
    assert writers and not outside, outside


def test_the_walk_sees_a_dict_write_a_typed_write_and_an_append():
    source = ('kernel.record("run.stopped", {"stop_reason": "compared"})\n'
              'k.record(RunStopped(stop_reason="compared"))\n'
              'log.append("run.abandoned", {}, now)\n'
              'self.k.once("attempt.started", {"attempt": 1}, "attempt")\n'
              'rows.append(x)\n')
    assert sorted(_writes(ast.parse(source))) == ["attempt.started", "run.abandoned", "run.stopped", "run.stopped"]
