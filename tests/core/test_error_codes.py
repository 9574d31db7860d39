"""The error-code registry (`ratchet.core.error_codes`) lists exactly the codes `src/ratchet` raises,
each with the exit code its raise sites end with, and docs/errors.md shows every entry.

The raise sites are found by walking every module with `ast`. A code reaches an error in one of
these ways, and the walk follows each:
- the first positional argument or `code=` of a call to a RatchetError subclass: a literal, an
  f-string (matched against a family key), a conditional of those, or a local variable assigned
  from them;
- `code=` given to any other call, or the default of a parameter named `code` (`run_git(...,
  code="git.init_failed")` hands its code to the GitError it raises);
- a `{"code": ...}` dict literal (the CLI's own `usage`, `interrupted`, `internal` envelopes);
- a variable filled from a helper's returned tuples, for the helpers named in ROUTES.
A site whose code the walk cannot trace fails a test, so no new way round the registry goes unseen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import ratchet.core.errors as errors
from ratchet.core.error_codes import CODE_SHAPE, ERROR_CODES, PLACEHOLDER, ErrorCode, is_family, lookup

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "ratchet"
ERRORS_PAGE = REPO / "docs" / "errors.md"

ROUTES = {("core/contract_load.py", "_contract_error"): "_describe"}
"""(module, function) -> the helper of the same module whose returned tuples start with the code
that function raises (`_describe` turns one pydantic error into (code, message, hint))."""


@dataclass(frozen=True)
class Site:
    """One place a code is given. code: a literal code, or an f-string's shape with `*` for each
    run-time part (`unsupported.*`); shape: whether `code` is such a shape; exit_code: the exit code
    a raise from here ends with, None where the walk does not know it (keyword-routed codes and the
    CLI's envelopes, whose exit code is passed separately)."""

    where: str
    code: str
    shape: bool = False
    exit_code: int | None = None


@dataclass
class Walk:
    """What the walk found: sites giving codes, `compared` codes (`exc.code == "..."`), and the
    sites whose code it could not trace."""

    sites: list[Site]
    compared: list[Site]
    untraced: list[str]


def _error_classes(trees: dict[str, ast.Module]) -> dict[str, int]:
    """Every RatchetError subclass by name, with its default exit code (its own
    `default_exit_code = EXIT_...`, else its base's)."""
    bases: dict[str, list[str]] = {}
    own: dict[str, int] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [ast.unparse(b).split(".")[-1] for b in node.bases]
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["default_exit_code"]:
                        own[node.name] = _exit_value(stmt.value)
    found = {"RatchetError": own["RatchetError"]}
    while True:
        new = {name: own.get(name, found[next(b for b in bs if b in found)])
               for name, bs in bases.items() if name not in found and any(b in found for b in bs)}
        if not new:
            return found
        found.update(new)


def _exit_value(node: ast.expr) -> int:
    """An exit code given as an int literal or a name of `ratchet.core.errors` (EXIT_INTERRUPTED)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    value = getattr(errors, ast.unparse(node).split(".")[-1], None)
    assert isinstance(value, int), f"exit code {ast.unparse(node)} is not a literal or a ratchet.core.errors name"
    return value


def _values(node: ast.expr | None, func: ast.AST | None) -> list[tuple[str, bool]] | None:
    """The codes an expression can hold, as (code or shape, is_shape); None when not traceable."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False)]
    if isinstance(node, ast.JoinedStr):
        return [("".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values), True)]
    if isinstance(node, ast.IfExp):
        body, orelse = _values(node.body, func), _values(node.orelse, func)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.Name) and func is not None:
        assigned = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)]
        found = [_values(value, func) for value in assigned]
        if assigned and all(f is not None for f in found):
            return [v for f in found if f is not None for v in f]
    return None


def _returned_codes(tree: ast.Module, helper: str) -> list[tuple[str, bool]]:
    """The first items of the tuples `helper` (a function of `tree`) returns."""
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == helper)
    out = []
    for ret in ast.walk(func):
        if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple):
            out += _values(ret.value.elts[0], func) or []
    return out


class _Walker(ast.NodeVisitor):
    """Collects the sites of one module into `walk` (see the module docstring for what it follows)."""

    def __init__(self, module: str, tree: ast.Module, classes: dict[str, int], walk: Walk):
        self.module, self.tree, self.classes, self.walk = module, tree, classes, walk
        self.funcs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def _add(self, node: ast.AST, values: list[tuple[str, bool]], exit_code: int | None,
             into: list[Site] | None = None) -> None:
        where = f"{self.module}:{getattr(node, 'lineno', 0)}"
        (self.walk.sites if into is None else into).extend(Site(where, c, s, exit_code) for c, s in values)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        positional = args.posonlyargs + args.args
        defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
        defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        for arg, default in defaults:
            if arg.arg == "code":
                self._add(default, _values(default, None) or [], None)
        self.funcs.append(node)
        self.generic_visit(node)
        self.funcs.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Call(self, node: ast.Call) -> None:
        name = ast.unparse(node.func).split(".")[-1]
        keyword = next((k.value for k in node.keywords if k.arg == "code"), None)
        if name in self.classes:
            self._error_call(node, node.args[0] if node.args else keyword)
        elif keyword is not None:
            self._add(node, _values(keyword, None) or [], None)
        self.generic_visit(node)

    def _error_call(self, node: ast.Call, code: ast.expr | None) -> None:
        func = self.funcs[-1] if self.funcs else None
        explicit = next((k.value for k in node.keywords if k.arg == "exit_code"), None)
        exit_code = self.classes[ast.unparse(node.func).split(".")[-1]] if explicit is None else _exit_value(explicit)
        values = _values(code, func)
        route = ROUTES.get((self.module, func.name)) if func is not None else None
        if values is None and route is not None:
            values = _returned_codes(self.tree, route)
        if values is None and func is not None and isinstance(code, ast.Name) and code.id == "code" and any(
                a.arg == "code" for a in func.args.args + func.args.kwonlyargs):
            return  # a `code` parameter: its values are the callers' `code=` and its default, collected above
        if values is None:
            self.walk.untraced.append(f"{self.module}:{node.lineno}: {ast.unparse(node)[:100]}")
            return
        self._add(node, values, exit_code)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "code":
                self._add(node, _values(value, None) or [], None)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if isinstance(node.left, ast.Attribute) and node.left.attr == "code":
            for right in node.comparators:
                items = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) else [right]
                for item in items:
                    self._add(node, _values(item, None) or [], None, into=self.walk.compared)
        self.generic_visit(node)


def walk_sources(sources: dict[str, str]) -> Walk:
    """Walk `sources` (module path relative to src/ratchet -> its text) for code sites."""
    trees = {module: ast.parse(text) for module, text in sources.items()}
    classes = _error_classes(trees)
    walk = Walk([], [], [])
    for module, tree in trees.items():
        _Walker(module, tree, classes, walk).visit(tree)
    return walk


@pytest.fixture(scope="module")
def walk() -> Walk:
    return walk_sources({p.relative_to(SRC).as_posix(): p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")})


def _shape(key: str) -> str:
    """A family key as the shape an f-string of it has (`unsupported.<setting>` -> `unsupported.*`)."""
    return PLACEHOLDER.sub("*", key)


def _registered(site: Site) -> ErrorCode | None:
    if site.shape:
        return next((ERROR_CODES[k] for k in ERROR_CODES if is_family(k) and _shape(k) == site.code), None)
    return ERROR_CODES.get(site.code)  # a code spelled out in full needs an entry of its own


def test_every_code_raised_in_src_is_registered(walk: Walk):
    missing = sorted({f"{s.where}: {s.code}" for s in walk.sites if _registered(s) is None})
    assert not missing, ("codes missing from ratchet.core.error_codes.ERROR_CODES (an f-string's shape needs a "
                         "family key such as `unsupported.<setting>`):\n" + "\n".join(missing))


def test_every_raise_site_gives_a_code_the_walk_can_trace(walk: Walk):
    assert not walk.untraced, ("pass the code as a literal (or add the helper to ROUTES):\n"
                               + "\n".join(walk.untraced))


def test_every_registered_code_is_raised_somewhere(walk: Walk):
    literal = {s.code for s in walk.sites if not s.shape}
    shapes = {s.code for s in walk.sites if s.shape}
    stale = [key for key in ERROR_CODES if (_shape(key) not in shapes if is_family(key) else key not in literal)]
    assert not stale, f"registered codes no site in src/ratchet gives any more: {stale}"


def test_a_raise_site_ends_with_the_exit_code_registered_for_its_code(walk: Walk):
    wrong = sorted({f"{s.where}: {s.code} exits {s.exit_code}, registered {entry.exit_code}"
                    for s in walk.sites if s.exit_code is not None and (entry := _registered(s)) is not None
                    and entry.exit_code != s.exit_code})
    assert not wrong, "\n".join(wrong)


def test_every_code_compared_against_is_registered(walk: Walk):
    unknown = sorted({f"{s.where}: {s.code}" for s in walk.compared if lookup(s.code) is None})
    assert walk.compared, "the walk found no `.code ==` comparison: it no longer sees them"
    assert not unknown, "a comparison with a code nothing registers never matches:\n" + "\n".join(unknown)


def test_the_cli_envelope_codes_and_a_family_are_among_the_sites(walk: Walk):
    found = {s.code for s in walk.sites}
    assert {"usage", "interrupted", "internal", "unsupported.*", "git.failed", "git.init_failed",
            "contract.unknown_key", "contract.missing_key", "channel.symlink"} <= found


def test_each_registered_code_is_well_formed_with_a_known_exit_code_and_a_one_line_meaning():
    bad = [code for code, entry in ERROR_CODES.items()
           if not CODE_SHAPE.match(code) or entry.exit_code not in errors.EXIT_CODES
           or not entry.meaning or "\n" in entry.meaning or entry.meaning != entry.meaning.strip()]
    assert not bad, bad


WALK_CASES = {
    "literal": ('raise DataError("run.bad_id", "m")', [Site("m.py:2", "run.bad_id", False, 2)]),
    "keyword": ('raise LedgerError(message="m", code="ledger.torn")', [Site("m.py:2", "ledger.torn", False, 2)]),
    "f-string": ('raise UnsupportedError(f"unsupported.{x}", "m")', [Site("m.py:2", "unsupported.*", True, 2)]),
    "conditional": ('raise DataError("a.b" if x else "a.c", "m")',
                    [Site("m.py:2", "a.b", False, 2), Site("m.py:2", "a.c", False, 2)]),
    "variable": ('code = "x.y"\n    raise DataError(code, "m")', [Site("m.py:3", "x.y", False, 2)]),
    "exit override": ('raise RatchetError("interrupted", "m", exit_code=EXIT_INTERRUPTED)',
                      [Site("m.py:2", "interrupted", False, 130)]),
    "routed keyword": ('run_git(root, ["init"], code="git.init_failed")', [Site("m.py:2", "git.init_failed")]),
    "envelope": ('error = {"code": "usage", "message": "m"}', [Site("m.py:2", "usage")]),
}
"""Snippet (the body of `def f(x, code="git.failed"):`) -> the sites the walk must find in it,
besides the default of `code` (at m.py:1)."""

HEADER = "class RatchetError(Exception):\n    default_exit_code = EXIT_BAD_INPUT\n"
CLASSES = ("DataError", "LedgerError", "UnsupportedError")


def _snippet(body: str) -> dict[str, str]:
    return {"errors.py": HEADER + "".join(f"class {c}(RatchetError): pass\n" for c in CLASSES),
            "m.py": f"def f(x, code='git.failed'):\n    {body}\n"}


@pytest.mark.parametrize("body, expected", WALK_CASES.values(), ids=WALK_CASES.keys())
def test_the_walk_finds_the_code_however_it_is_passed(body: str, expected: list[Site]):
    walk = walk_sources(_snippet(body))
    assert walk.sites == [Site("m.py:1", "git.failed"), *expected]
    assert not walk.untraced


def test_the_walk_reports_a_code_it_cannot_trace():
    walk = walk_sources(_snippet('raise DataError(make_code(x), "m")'))
    assert walk.untraced == ["m.py:2: DataError(make_code(x), 'm')"]


def test_the_walk_sees_a_code_comparison():
    walk = walk_sources(_snippet('return exc.code in ("ledger.locked", "run.concurrent")'))
    assert [s.code for s in walk.compared] == ["ledger.locked", "run.concurrent"]


def test_lookup_prefers_a_code_of_its_own_then_its_family_and_refuses_the_rest():
    assert lookup("unsupported.compare_examples") is ERROR_CODES["unsupported.compare_examples"]
    assert lookup("unsupported.gpus") is ERROR_CODES["unsupported.<setting>"]
    assert lookup("unsupported.a.b") is None
    assert lookup("contract.unknown_keyx") is None


def doc_row(code: str, entry: ErrorCode) -> str:
    """The row docs/errors.md shows for one registered code."""
    return f"| `{code}` | {entry.exit_code} | {entry.meaning.replace('|', '/')} |"


def _page_codes(page: str) -> Iterator[str]:
    for line in page.splitlines():
        if line.startswith("| `") and line.count("|") >= 4:
            yield line.split("`")[1]


def test_the_errors_page_lists_every_registered_code_with_its_exit_code_and_meaning():
    page = ERRORS_PAGE.read_text(encoding="utf-8")
    missing = [doc_row(code, entry) for code, entry in ERROR_CODES.items() if doc_row(code, entry) not in page]
    assert not missing, "docs/errors.md lacks these rows (paste them in):\n" + "\n".join(missing)
    extra = [code for code in _page_codes(page) if code not in ERROR_CODES]
    assert not extra, f"docs/errors.md lists codes the registry does not: {extra}"


def test_the_errors_page_lists_every_exit_code():
    page = ERRORS_PAGE.read_text(encoding="utf-8")
    missing = [code for code, meaning in errors.EXIT_CODES.items() if f"| {code} | {meaning} |" not in page]
    assert not missing, f"docs/errors.md does not list exit codes {missing}"
