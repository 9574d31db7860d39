"""Event data is read through its payload model (`Event.payload`): a walk over the source finds
every read of an event's raw JSON (`x.data`, `x["data"]`, `x.get("data")`) and fails on any outside the places
listed here, which must see the raw JSON."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ratchet"

RAW_JSON_READERS = {
    ("core/events.py", "Event.payload"): "builds the model from the stored JSON",
    ("core/events.py", "line_payload"): "builds the model of an unverified line",
    ("ledger/verify.py", "_check_fields"): "the line parser checks the line's fields",
    ("ledger/verify.py", "verify_line"): "the line parser builds the Event",
    ("ledger/index.py", "Index._apply"): "stores the line's data as JSON (the line is re-hashed from it)",
    ("ledger/index.py", "Index.query_events"): "rows of the index's events table, parsed back to JSON",
    ("core/audit.py", "check_signatures"): "a signature is over the raw data",
    ("core/audit.py", "evidence_lines"): "quotes the raw signature",
    ("core/audit.py", "check_report"): "quotes the raw signature",
    ("core/audit_view.py", "read_view"): "verify walks every `*_blob` key the line holds",
    ("targets/shard_runner.py", "_pump"): "a pipe's bytes (`.data` of a read chunk), no event",
}
"""(module under src/ratchet, qualified function) -> why it reads raw JSON."""

class _DataReads(ast.NodeVisitor):
    def __init__(self, module: str):
        self.module, self.scope, self.found = module, [], set()

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def _note(self) -> None:
        self.found.add((self.module, ".".join(self.scope) or "<module>"))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "data" and isinstance(node.ctx, ast.Load):
            self._note()
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "data"):
            self._note()
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, ast.Constant) and node.slice.value == "data":
            self._note()
        self.generic_visit(node)


def _raw_reads() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        reads = _DataReads(path.relative_to(SRC).as_posix())
        reads.visit(ast.parse(path.read_text(encoding="utf-8")))
        found |= reads.found
    return found


def test_event_data_is_read_only_through_its_model_outside_the_listed_places():
    unexpected = _raw_reads() - set(RAW_JSON_READERS)
    assert not unexpected, f"raw event data read outside its model (read `event.payload`): {sorted(unexpected)}"


def test_every_listed_place_still_reads_raw_json():
    stale = set(RAW_JSON_READERS) - _raw_reads()
    assert not stale, f"listed but no longer reading raw data (remove them from the list): {sorted(stale)}"


def test_the_walk_finds_a_raw_read(tmp_path):
    reads = _DataReads("m.py")
    source = ("def f(e):\n    return e.data.get('attempt')\n\n"
              "def g(row):\n    return row['data']\n\n"
              "def h(line):\n    return line.get('data')\n\n"
              "def ok(e):\n    return e.payload.attempt\n")
    reads.visit(ast.parse(source))
    assert reads.found == {("m.py", "f"), ("m.py", "g"), ("m.py", "h")}
