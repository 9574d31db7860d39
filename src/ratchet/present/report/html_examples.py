"""Two sections of the HTML report that depend on the run's kind: a search run's parameters (the
champion's values, the metric against each parameter, each parameter's importance) and an examples
run's per-example results of its final measurement. Pure apart from drawing figures (params.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.present.render import fmt_num
from ratchet.present.report.data import ReportData
from ratchet.present.report.html_parts import ColumnKind, esc, figure, table
from ratchet.present.report.params import IMPORTANCE_METHOD, importance_figure, importances, slice_figure
from ratchet.present.report.plots import figure_svg

MAX_EXAMPLE_ROWS = 200
"""Example rows shown per split (failures first); the rest are counted under the table."""

SPLIT_NAMES = {"test": "test (final champion; baseline's verdict alongside)", "val": "val (final champion)",
               "dev": "dev (final champion)"}


def _value(value: Any) -> str:
    return fmt_num(value) if isinstance(value, float) else str(value)


def parameters_section(data: ReportData) -> str:
    """The champion's parameters (or the note that the champion is the baseline), the slice plots
    and, with enough attempts and at least two parameters, the importance bars with their method."""
    space = dict(data.search_space or {})
    champion = data.status["champion"]
    params = champion.get("params")
    if params:
        rows = [[f"<code>{esc(k)}</code>", esc(_value(v)), esc(_spec(space.get(k)))] for k, v in params.items()]
        out = (f'<p>Best parameters: the champion\'s (attempt {esc(champion["attempt"])}).</p>'
               + table([("parameter", "text"), ("value", "num"), ("searched", "text")], rows, "best parameters"))
    else:
        out = "<p>No candidate was promoted: the champion is the baseline, with the parameters it started with.</p>"
    metric = str(data.target.get("metric") or "metric")
    fig = slice_figure(data.status["attempts"], space, metric)
    if fig is not None:
        out += figure(figure_svg(fig, "slices"),
                      f"Each measured attempt's candidate mean ({metric}, raw) against each parameter, coloured by "
                      "verdict. Each candidate was measured on its own trial's units, so the means carry that "
                      "trial's noise.")
    values = importances(data.status["attempts"], space, str(data.target.get("direction") or "max"))
    if values:
        out += figure(figure_svg(importance_figure(values), "importance"), IMPORTANCE_METHOD)
    return out


def _spec(spec: Mapping[str, Any] | None) -> str:
    """`float in [0.001, 1000] (log)`, `one of rbf, poly`: how a parameter was searched."""
    if not spec:
        return "-"
    if spec.get("type") == "categorical":
        return "one of " + ", ".join(str(c) for c in spec.get("choices") or [])
    return f"{spec.get('type')} in [{_value(spec.get('low'))}, {_value(spec.get('high'))}]" + (
        " (log)" if spec.get("log") else "")


_EXAMPLE_HEADERS: list[tuple[str, ColumnKind]] = [
    ("example", "code"), ("input", "text"), ("expected", "text"), ("output", "text"), ("checks", "text"),
    ("result", "text"), ("error", "wide"), ("baseline", "text")]


def _checks(checks: Sequence[Any] | None) -> str:
    if checks is None:
        return '<span class="note">not kept</span>'
    if not checks:
        return "-"
    return "<br>".join(f'<span class="chk {"ok" if passed else "bad"}">{esc(kind)}: {"pass" if passed else "fail"}'
                       "</span>" for kind, passed, *_ in checks)


def _result(row: Mapping[str, Any]) -> str:
    if row["passed"]:
        return '<span class="ok">passed</span>'
    return f'<span class="bad">{esc("failed" if row["status"] == "ok" else row["status"])}</span>'


def _baseline(passed: bool | None) -> str:
    if passed is None:
        return "-"
    return '<span class="ok">passed</span>' if passed else '<span class="bad">failed</span>'


def _pre(value: str | None, missing: str) -> str:
    return f'<span class="note">{esc(missing)}</span>' if value is None else f'<span class="io">{esc(value)}</span>'


def examples_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """One table per split of the final measurement: each example's input, expected output, the
    final champion's output, each check's result, the verdict, the error, and (test) the baseline's
    verdict; failures first, at most MAX_EXAMPLE_ROWS per split."""
    out = ['<p class="note">What the run kept of its final measurement, per example: the input and expected '
           "output from the examples file, the output from the shard's job directory (cut at 600 characters), "
           "the kernel's verdict per check. Val and test examples are shown here for you; no agent ever reads "
           "them.</p>"]
    for split in ("test", "val", "dev"):
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        shown = part[:MAX_EXAMPLE_ROWS]
        passed = sum(1 for r in part if r["passed"])
        cells = [[esc(r["name"] or r["id"].removeprefix("sha256:")[:12]),
                  _pre(r["input"], "not in the examples file now"), _pre(r["expected"], "-"),
                  _pre(r["output"], "not kept"), _checks(r["checks"]), _result(r), esc(r["error"] or "-"),
                  _baseline(r["baseline_passed"])] for r in shown]
        headers = _EXAMPLE_HEADERS if split == "test" else _EXAMPLE_HEADERS[:-1]
        if split != "test":
            cells = [c[:-1] for c in cells]
        out.append(f"<h3>{esc(SPLIT_NAMES[split])}: {passed} of {len(part)} passed</h3>"
                   + table(headers, cells, f"{split} examples"))
        if len(part) > len(shown):
            out.append(f'<p class="note">{len(part) - len(shown):,} more {split} examples not shown '
                       "(failures are listed first).</p>")
    return "".join(out)
