"""The HTML report's building blocks: escaping, inline marks, tables, figures, verdict labels, bars.

Tables sit in a horizontally scrollable container (`.table-wrap`, report.css), so a wide table
scrolls inside the page on a narrow screen instead of squeezing its columns; each column has a kind
that fixes how its cells wrap: numbers never wrap, text wraps between words only. Pure: values in,
HTML text out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any, Literal

ColumnKind = Literal["num", "text", "wide", "code"]
"""How a table column's cells lay out (report.css):
- num: a number or an interval: right-aligned, never wrapped;
- text: a short text (a summary, a verdict, a name): wrapped between words, at least 7rem wide;
- wide: a long text (a reason, an input, an output): wrapped between words, at least 14rem wide;
- code: an identifier (a commit, a job id): never wrapped."""

_STRONG = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def esc(value: Any) -> str:
    """`value` as HTML text (quotes escaped too, so it is safe in attributes); None as `-`."""
    return html.escape("-" if value is None else str(value), quote=True)


def inline(paragraph: str) -> str:
    """A text.py paragraph as HTML: escaped first, then `**strong**` and `` `code` `` as tags."""
    out = _STRONG.sub(r"<strong>\1</strong>", esc(paragraph))
    return _CODE.sub(r"<code>\1</code>", out)


def verdict(value: str | None) -> str:
    """A verdict as a coloured label; `-` for None."""
    if value is None:
        return '<span class="verdict">-</span>'
    return f'<span class="verdict v-{esc(value)}">{esc(value)}</span>'


def bar(fraction: float | None) -> str:
    """A small horizontal bar filled to `fraction` (clamped to [0, 1]); empty for None."""
    if fraction is None:
        return ""
    width = 100.0 * min(max(fraction, 0.0), 1.0)
    return f'<span class="bar" aria-hidden="true"><span style="width:{width:.1f}%"></span></span>'


def table(headers: Sequence[tuple[str, ColumnKind]], rows: Sequence[Sequence[str]], label: str = "") -> str:
    """A table in a scrollable container; `headers`: (label, ColumnKind) pairs; cells are HTML
    already. `label` names the table for assistive technology (the container is focusable so a
    keyboard can scroll it)."""
    head = "".join(f'<th class="{kind}">{esc(name)}</th>' for name, kind in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{kind}">{cell}</td>' for (_, kind), cell in zip(headers, row, strict=True))
        + "</tr>"
        for row in rows
    )
    aria = f' role="region" aria-label="{esc(label)}" tabindex="0"' if label else ""
    return f'<div class="table-wrap"{aria}><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def figure(svg: str, caption: str) -> str:
    """An inline SVG chart with its caption."""
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"
