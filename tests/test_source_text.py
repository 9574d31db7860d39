"""What the source says about itself stays true: the text users and readers get (src/, docs/,
README.md) cites no file they do not have and no issue tracker entry; every package's docstring names
each module and subpackage it holds; the README's layout section names every package and only what
exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "ratchet"

TEXT_SUFFIXES = (".py", ".md", ".css", ".toml", ".txt")
"""The files of src/ratchet read as text (the package's modules, prompt templates, style sheet)."""

CITATION = re.compile(r"\b(?:DESIGN|STYLE)\.md\b|\bissues?\s+#?\d+", re.IGNORECASE)
"""A design note or style guide users do not have, or an issue number (`issue 20`, `issues 14-15`,
`Issue #6`)."""


def _shipped_text() -> list[Path]:
    files = [p for p in sorted(SRC.rglob("*")) if p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts]
    return [*files, REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of `text` citing a file outside the repository or an issue."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if CITATION.search(line)]


def test_no_shipped_text_cites_a_design_note_a_style_guide_or_an_issue():
    found = [f"{path.relative_to(REPO)}:{n}: {line}" for path in _shipped_text()
             for n, line in citations(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_a_citation_is_seen_and_a_source_is_not():
    text = ('"""The gate (DESIGN.md §6)."""\n# see STYLE.md\n"""(issue 20)"""\nIssues 14-15\nissue #6\n'
            "Source: Fisher (1935), The Design of Experiments §21\nan issue of the journal\n")
    assert [n for n, _ in citations(text)] == [1, 2, 3, 4, 5]


# --- package docstrings ---------------------------------------------------------------------------

PACKAGES = sorted(p.parent for p in SRC.rglob("__init__.py"))

MENTION = re.compile(r"`([A-Za-z_][\w/]*?(?:\.py|/))`")
"""A module or directory named in a package docstring: `name.py`, `name/` or a path like
`core/budget/`, between backticks."""


def _held(package: Path) -> set[str]:
    """What a package holds: its modules (`name.py`, but `__init__.py`) and directories (`name/`)."""
    return ({p.name for p in package.glob("*.py") if p.name != "__init__.py"}
            | {f"{p.name}/" for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"})


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(SRC.parent)))
def test_a_package_docstring_names_every_module_it_holds_and_only_what_exists(package: Path):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    named = set(MENTION.findall(doc))
    missing = sorted(_held(package) - named)
    assert not missing, (f"{package.relative_to(SRC.parent)}/__init__.py: its docstring does not name "
                         f"{missing} (name each as `module.py` or `directory/`)")
    absent = sorted(m for m in named if not (package / m).exists() and not (SRC / m).exists())
    assert not absent, f"{package.relative_to(SRC.parent)}/__init__.py names {absent}, which do not exist"


# --- the README's layout --------------------------------------------------------------------------

ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.]+/?)(?: {2,}(?P<text>.*))?$")
MODULE = re.compile(r"(?<![\w.])([\w/]+\.py)\b")


def layout_entries(readme: str) -> tuple[list[str], list[str]]:
    """(entries, modules) of the README's layout section (the code block under `## Layout`): each
    tree entry as a path under src/ratchet (`commands/`, `agents/llm/templates/`, `cli.py`), and each
    module its text names (`loop/campaign.py`), relative to the entry's directory. An entry is a line
    indented less than the first entry's text; other lines continue the text above them."""
    block = readme.split("\n## Layout\n", 1)[1].split("```", 2)[1]
    lines = block.strip("\n").splitlines()
    assert lines[0] == "src/ratchet/", "the layout starts with src/ratchet/"
    entries: list[str] = []
    modules: list[str] = []
    stack: list[tuple[int, str]] = []
    text_column: int | None = None
    where = ""
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        match = ENTRY.match(line)
        if match and (text_column is None or indent < text_column):
            name = match["name"]
            if text_column is None and match["text"]:
                text_column = line.index(match["text"])
            stack = [(i, p) for i, p in stack if i < indent]
            path = "".join(p for _, p in stack) + name
            entries.append(path)
            if name.endswith("/"):
                stack.append((indent, name))
            where = path if name.endswith("/") else path.rpartition("/")[0] + ("/" if "/" in path else "")
            text = match["text"] or ""
        else:
            text = line
        modules += [where + m for m in MODULE.findall(text)]
    return entries, modules


def test_the_readme_layout_names_every_package_directory_and_only_what_exists():
    entries, modules = layout_entries((REPO / "README.md").read_text(encoding="utf-8"))
    directories = {f"{p.relative_to(SRC)}/" for p in SRC.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    missing = sorted(directories - set(entries))
    assert not missing, f"README.md's layout does not list {missing}"
    absent = sorted(e for e in [*entries, *modules] if not (SRC / e).exists())
    assert not absent, f"README.md's layout names {absent}, which src/ratchet does not hold"


def test_the_layout_reader_finds_nested_entries_and_the_modules_their_text_names():
    readme = ("# R\n\n## Layout\n\n```\nsrc/ratchet/\n  cli.py      the command line (__main__.py)\n"
              "  agents/     base.py, and more\n              files.py\n    llm/      client.py\n"
              "      templates/  prompts\n  core/       pure: gate.py\n```\n")
    entries, modules = layout_entries(readme)
    assert entries == ["cli.py", "agents/", "agents/llm/", "agents/llm/templates/", "core/"]
    assert modules == ["__main__.py", "agents/base.py", "agents/files.py", "agents/llm/client.py", "core/gate.py"]
