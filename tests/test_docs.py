"""The docs that ship: README.md and docs/*.md render as intended (tables with markdown-it-py), every
relative link and anchor resolves inside the repository, and what users read never points at files
outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def slug(text: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation dropped (hyphens and underscores kept),
    spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    tokens = _md().parse(path.read_text(encoding="utf-8"))
    return {slug(tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"}


def links(path: Path) -> list[str]:
    found = []
    for token in _md().parse(path.read_text(encoding="utf-8")):
        for child in token.children or ():
            if child.type == "link_open":
                found.append(str(child.attrs.get("href", "")))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_resolves_inside_the_repository(page: Path):
    for href in links(page):
        assert not re.match(r"^[a-z]+:", href), f"{page.name}: {href} leaves the repository"
        target, _, anchor = href.partition("#")
        resolved = (page.parent / target).resolve() if target else page
        assert resolved.is_relative_to(REPO), f"{page.name}: {href} points outside the repository"
        assert resolved.exists(), f"{page.name}: {href} does not exist"
        if anchor:
            assert resolved.suffix == ".md", f"{page.name}: {href}: an anchor into a non-markdown file"
            assert anchor in anchors(resolved), f"{page.name}: {href}: no heading #{anchor} in {resolved.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_tables_hold_only_table_rows(page: Path):
    """A table that runs into the next paragraph (a missing blank line) swallows that text as rows."""
    lines = page.read_text(encoding="utf-8").splitlines()
    tokens = _md().parse("\n".join(lines))
    tables = [t for t in tokens if t.type == "table_open"]
    for table in tables:
        start, end = table.map
        rows = [line.strip() for line in lines[start:end]]
        width = rows[0].count("|")
        for number, row in enumerate(rows, start=start + 1):
            assert row.startswith("|") and row.endswith("|"), f"{page.name}:{number}: not a table row: {row!r}"
            cells = len(re.findall(r"(?<!\\)\|", row.replace("`|`", "")))
            assert cells == width, f"{page.name}:{number}: {cells - 1} cells, the header has {width - 1}"
    assert tables or page.name not in ("README.md", "examples-checks.md", "agents.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_fences_are_closed(page: Path):
    fences = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0, f"{page.name}: an unclosed code fence"


def test_readme_starts_with_exactly_two_commands_after_cloning():
    tokens = _md().parse((REPO / "README.md").read_text(encoding="utf-8"))
    first = next(t for t in tokens if t.type == "fence")
    commands = [line.split("#")[0].strip() for line in first.content.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_readme_says_how_to_put_ratchet_on_path():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "PATH" in text and ".venv/bin" in text


def test_docs_page_is_linked_from_the_guide_or_readme():
    linked = {href.partition("#")[0] for page in (REPO / "README.md", REPO / "docs" / "guide.md")
              for href in links(page)}
    names = {Path(h).name for h in linked}
    for page in (REPO / "docs").glob("*.md"):
        assert page.name in names, f"docs/{page.name} is linked from neither README.md nor docs/guide.md"


def _strings_users_read(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that can reach a user (messages, hints, help): every string but
    the bare expression statements (module, class, function and attribute docstrings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in bare]


def test_no_message_sends_users_to_a_design_file_outside_the_repository():
    offenders = []
    for path in sorted((REPO / "src" / "ratchet").rglob("*.py")):
        for line, text in _strings_users_read(path):
            if "DESIGN.md" in text:
                offenders.append(f"{path.relative_to(REPO)}:{line}: {text[:80]!r}")
    assert not offenders, "\n".join(offenders)


def test_the_ledger_page_lists_every_event_kind_and_every_closed_set_value():
    from ratchet.core.events import EVENT_KINDS
    from ratchet.core.vocab import CLOSED_SETS

    page = (REPO / "docs" / "ledger.md").read_text(encoding="utf-8")
    missing = [f"`{kind}`" for kind in EVENT_KINDS if f"| `{kind}` |" not in page]
    for name, meanings in CLOSED_SETS.items():
        missing += [f"{name}: {value}" for value, meaning in meanings.items()
                    if f"| `{value}` | {meaning.replace('|', '/')} |" not in page]
    assert not missing, f"docs/ledger.md does not list: {missing}"


def test_the_ledger_page_says_what_each_event_kind_records_and_its_keys_as_the_models_define_them():
    from ratchet.core.payloads import MODELS, data_keys, describe

    rows = {}
    for line in (REPO / "docs" / "ledger.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`") and "." in cells[0]:
            rows[cells[0].strip("`")] = (cells[1], {key.strip().strip("`") for key in cells[2].split(",")})
    for model in MODELS:
        assert model.kind in rows, f"docs/ledger.md has no row for {model.kind}"
        text, keys = rows[model.kind]
        assert text == describe(model).replace("|", "/"), f"{model.kind}: the page says {text!r}"
        assert keys == set(data_keys(model)), f"{model.kind}: the page lists {sorted(keys)}"


def test_the_budgets_page_has_a_row_for_every_budget_and_shows_refusals_as_the_code_writes_them():
    from ratchet.commands.contract_file import load_contract
    from ratchet.core.budget import BUDGET_NAMES, Account, Charge, exhausted
    from ratchet.core.state import BudgetUsed

    text = (REPO / "docs" / "budgets.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `max_")}
    assert rows == set(BUDGET_NAMES)
    spent = Account({"model_calls": 3}, Charge.of(model_calls=3)).refusal(Charge.of(model_calls=1), "a call")
    assert spent is not None and f"`{spent.detail}`" in text
    digits = load_contract(REPO / "examples" / "digits").contract
    contract = digits.model_copy(update={"budget": digits.budget.model_copy(update={"max_evaluations": 110})})
    evaluations = exhausted(contract, BudgetUsed(attempts=1, evaluations=13), 0, reserve_units=36, next_units=72)
    assert evaluations is not None and f"`{evaluations.detail}`" in (REPO / "docs" / "messages.md").read_text()


def test_the_alpha_range_the_docs_state_is_the_one_the_contract_takes():
    """The contract's own bounds on gate.alpha (pydantic's gt/le) written as an interval, and every
    page that states the range states that one."""
    import annotated_types

    from ratchet.core.contract import GateSection

    bounds = {type(m).__name__: m for m in GateSection.model_fields["alpha"].metadata}
    low, high = bounds["Gt"].gt, bounds["Le"].le
    interval = f"({low:g}, {high:g}]"
    assert isinstance(bounds["Gt"], annotated_types.Gt) and interval == "(0, 0.5]"
    guide = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
    assert f"`gate.alpha` in `{interval}`" in guide
    errors = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    (row,) = [line for line in errors.splitlines() if line.startswith("| `gate.bad_alpha`")]
    assert f"gate.alpha in {interval}" in row
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"gate\.alpha[^.|\n]{0,40}\(0, 1\)", text), f"{page.name} gives gate.alpha as (0, 1)"
