"""The run report as one self-contained HTML page (`ratchet report RUN --html`).

No network and no external asset: the style sheet (report.css) is inlined, the charts are inline
SVG drawn by plots.py, and a Content-Security-Policy forbids loading anything else. Every value a
user or an agent supplied (campaign name, summaries, reports, diffs, reasons, check names) is
HTML-escaped. Pure apart from reading report.css from the package: ReportData in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from ratchet.present.guardrail_text import guardrail_lines
from ratchet.present.render import BUDGETS, fmt_amount, fmt_interval, fmt_level, fmt_num, fmt_p
from ratchet.present.report import text
from ratchet.present.report.data import AttemptDetail, ReportData
from ratchet.present.report.html_examples import examples_section, parameters_section
from ratchet.present.report.html_parts import ColumnKind, bar, esc, figure, inline, table, verdict
from ratchet.present.report.legs import leg_heading, request_lines, stream_heading
from ratchet.present.report.plots import (
    budget_figure,
    champion_figure,
    effects_figure,
    figure_svg,
)
from ratchet.present.status import attempt_label

__all__ = ["CONTENT_SECURITY_POLICY", "esc", "inline", "render_html"]

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""Nothing but the page's own inline style and data: images may load: a report never reaches out."""


def render_html(data: ReportData) -> str:
    """The whole page for one run (UTF-8 text)."""
    status = data.status
    sections = [
        ("headline", "Headline: the holdout", _headline(data)),
        ("champion", "The champion's path", _champion(data)),
        ("attempts", f"Attempts ({len(status['attempts'])})", _attempts(status["attempts"])),
        ("budget", "Budget", _budget(data)),
        ("gate", "The gate", _gate(data.gate, data.target)),
        ("details", "Reports, diffs and legs", _details(status["attempts"], data.details)),
    ]
    if data.search_space:
        sections.insert(3, ("parameters", "Parameters", parameters_section(data)))
    if data.splits:
        sections.insert(1, ("splits", "Pass rates of the final champion", _splits(data.splits)))
    if data.examples:
        sections.insert(2, ("examples", "Examples of the final measurement", examples_section(data.examples)))
    if data.warnings:
        sections.insert(0, ("warnings", "Warnings", "<ul>" + "".join(f"<li>{inline(w)}</li>" for w in data.warnings)
                            + "</ul>"))
    nav = "".join(f'<a href="#{key}">{esc(title)}</a>' for key, title, _ in sections)
    body = "".join(f'<section id="{key}"><h2>{esc(title)}</h2>{content}</section>'
                   for key, title, content in sections)
    stop = status["stop_reason"] or "-"
    if status.get("stop_budget"):
        stop += f" ({status['stop_budget']})"
    css = resources.files("ratchet.present.report").joinpath("report.css").read_text(encoding="utf-8")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Ratchet report: {esc(data.campaign)}</title><style>{css}</style></head><body>"
        f"<header><h1>Ratchet report: {esc(data.campaign)}</h1>"
        f'<p class="meta">run <code>{esc(status["run_id"])}</code> · state <strong>{esc(status["state"])}</strong>'
        f" · stop reason <strong>{esc(stop)}</strong> · {status['promotions']} promotion(s)</p></header>"
        f"<nav>{nav}</nav><main>{body}</main>"
        f'<footer>Rendered from the run\'s ledger ({data.events:,} events) by <code>ratchet report --html</code>. '
        "Gains are direction-normalized: positive means better.</footer></body></html>\n"
    )


def _headline(data: ReportData) -> str:
    paragraphs = text.headline(data.status, data.target)
    extras = [p for p in (text.champion_means(data.status, data.target), text.best_params(data.status)) if p]
    guards = guardrail_lines((data.status.get("holdout") or {}).get("guardrails"), "holdout ")
    return (f'<p class="headline">{inline(paragraphs[0])}</p>'
            + "".join(f"<p>{inline(p)}</p>" for p in paragraphs[1:] + extras)
            + "".join(f"<p>{esc(g)}</p>" for g in guards))


def _champion(data: ReportData) -> str:
    status = data.status
    svg = figure_svg(champion_figure(status["attempts"], data.promotions, status["holdout"]), "champion")
    rows = [["0", "baseline", f"<code>{esc(str(status['baseline']['commit'] or '-')[:10])}</code>", "-", "-",
             esc(fmt_num(status["baseline"].get("mean")))]]
    for i, p in enumerate(data.promotions, start=1):
        rows.append([str(i), esc(p.attempt), f"<code>{esc(p.commit[:10])}</code>",
                     esc(fmt_num(p.estimate)), esc(fmt_interval(p.interval)), esc(fmt_num(p.mean))])
    headers: list[tuple[str, ColumnKind]] = [("promotion", "num"), ("attempt", "num"), ("commit", "code"),
                                             ("gain at promotion", "num"), ("95% interval", "num"), ("mean", "num")]
    note = ('<p class="note">Each step is a promotion; its gain is the confirmation\'s estimate where '
            "confirmation ran. The diamond is the holdout: the final champion against the baseline. The mean "
            "is the champion's own raw mean when it was promoted (the baseline's: the preflight's).</p>")
    return figure(svg, "Cumulative confirmed gain over attempts, with each promotion's interval") + note + table(
        headers, rows, "promotions")


_ATTEMPT_HEADERS: list[tuple[str, ColumnKind]] = [
    ("#", "num"), ("summary", "text"), ("verdict", "text"), ("gain", "num"), ("95% interval", "num"),
    ("champion mean", "num"), ("candidate mean", "num"), ("p", "num"), ("level", "num"), ("units", "num"),
    ("reason", "wide")]


def _attempt_row(a: Mapping[str, Any]) -> list[str]:
    reason = a.get("reason_text") or a.get("reason") or ""
    c = a.get("confirm")
    if c:
        reason += " " + text.confirmation(c)
    guards = guardrail_lines(a.get("guardrails"))
    if guards:
        reason += " " + "; ".join(guards) + "."
    return [f'<a href="#attempt-{esc(a["attempt"])}">{esc(attempt_label(a))}</a>', esc(a.get("summary") or ""),
            verdict(a.get("verdict")), esc(fmt_num(a.get("estimate"))), esc(fmt_interval(a.get("interval"))),
            esc(fmt_num(a.get("champion_mean"))), esc(fmt_num(a.get("candidate_mean"))),
            esc(fmt_p(a.get("p_value"))), esc(fmt_level(a.get("level"), a.get("p_value"))),
            esc(a.get("units") or "-"), esc(reason)]


def _attempts(attempts: Sequence[Mapping[str, Any]]) -> str:
    if not attempts:
        return "<p>No attempt was made.</p>"
    svg = figure_svg(effects_figure(attempts), "effects")
    return (figure(svg, "Each attempt's paired gain against the champion of its time, with its 95% interval")
            + f'<p class="note">{esc(verdict_tally(attempts))}. {inline(text.ATTEMPTS_NOTE)}</p>'
            + table(_ATTEMPT_HEADERS, [_attempt_row(a) for a in attempts], "attempts"))


def verdict_tally(attempts: Sequence[Mapping[str, Any]]) -> str:
    """`2 accepted, 3 rejected, 1 gave up`: attempts counted by final verdict; one without a verdict
    is counted as `gave up` (the agent gave up) or `not judged yet` (its trial has not ended)."""
    counts: dict[str, int] = {}
    for a in attempts:
        key = a.get("verdict") or ("gave up" if a.get("reason") == "gave_up" else "not judged yet")
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))


def _budget(data: ReportData) -> str:
    used, limits = data.status["budget"]["used"], data.status["budget"]["limits"]
    rows = []
    for key, limit_key, label in BUDGETS:
        value, limit = used.get(key), limits.get(limit_key) or 0
        if value is None:
            continue
        shown = fmt_amount(value)
        share = value / limit if limit else None
        rows.append([esc(label), esc(shown), esc(f"{limit:,}" if limit else "unlimited"),
                     bar(share) + esc(f"{100 * share:.0f}%" if share is not None else "-")])
    out = table([("budget", "text"), ("used", "num"), ("limit", "num"), ("share used", "num")], rows, "budget")
    if len(data.timeline) < 2:
        return out
    svg = figure_svg(budget_figure(data.timeline, limits), "budget")
    return out + figure(svg, "Each limited budget's share used after each attempt (the dashed line is the limit)")


def _splits(splits: Mapping[str, Any]) -> str:
    rows = []
    for name, label in text.SPLIT_LABELS:
        r = splits.get(name)
        if r:
            rows.append([esc(label), esc(r["passes"]), esc(r["n"]), bar(r["rate"]) + esc(fmt_num(r["rate"])),
                         esc(fmt_interval(r["interval"]))])
    out = table([("split", "text"), ("passes", "num"), ("n", "num"), ("pass rate", "num"),
                 ("Wilson 95% interval", "num")], rows, "pass rates")
    out += f"<p>Gaps: {esc(text.split_gaps(splits))}.</p>"
    checks = splits.get("per_check") or {}
    if checks:
        check_rows = [[f"<code>{esc(name)}</code>", bar(rate) + esc(fmt_num(rate))] for name, rate in checks.items()]
        out += "<h3>Per-check pass rates</h3>" + table([("check", "text"), ("pass rate", "num")], check_rows,
                                                       "per-check pass rates")
    return out + f'<p class="note">{esc(text.TEST_ONCE)}</p>'


def _gate(gate: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """The gate in two sentences (its settings, its promise), the full rule folded below them."""
    return (f"<p>{inline(text.gate_settings(gate))} {inline(text.promise(gate))}</p>"
            "<details><summary>How the gate decides: share of alpha, levels, the test, looks, confirmation"
            "</summary>" + "".join(f"<p>{inline(p)}</p>" for p in text.guarantee(gate, target)) + "</details>")


def _details(attempts: Sequence[Mapping[str, Any]], details: Mapping[int, AttemptDetail]) -> str:
    if not attempts:
        return "<p>No attempt was made.</p>"
    out = ['<p class="note">Each attempt\'s own report (as the agent wrote it), its diff against the '
           "champion it was measured against, and a command agent's legs (the end of each leg's output; "
           "<code>ratchet report RUN --attempt N --json</code> names the blob files holding it), folded.</p>"]
    for a in attempts:
        d = details.get(a["attempt"]) or AttemptDetail()
        parts = []
        if d.report is not None:
            parts.append(f"<details><summary>report</summary><pre>{esc(d.report)}</pre></details>")
        if d.diff is not None:
            parts.append(f'<details><summary>diff</summary><pre class="diff">{_diff_lines(d.diff)}</pre></details>')
        elif d.diff_note:
            parts.append(f'<p class="note">diff: {esc(d.diff_note)}</p>')
        parts += [_leg(leg) for leg in d.legs]
        if not parts:
            parts.append('<p class="note">no report and no candidate recorded</p>')
        title = f"#{a['attempt']} {a.get('summary') or ''}".strip()
        out.append(f'<details id="attempt-{esc(a["attempt"])}"><summary>{esc(title)} · '
                   f"{verdict(a.get('verdict'))}</summary>{''.join(parts)}</details>")
    return "".join(out)


def _leg(leg: Mapping[str, Any]) -> str:
    """One leg of a command agent, folded: its command line, its requests, and the last lines of
    its stdout and stderr."""
    parts = []
    if leg.get("command") is not None:
        parts.append(f"<p>command: <code>{esc(' '.join(leg['command']))}</code></p>")
    lines = request_lines(leg.get("requests"))
    if lines:
        parts.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>")
    for name in ("stdout", "stderr"):
        stream = leg.get(name)
        parts.append(f'<p class="note">{esc(stream_heading(name, stream))}</p>')
        if stream and stream.get("tail"):
            parts.append(f"<pre>{esc(stream['tail'])}</pre>")
    return f"<details><summary>{esc(leg_heading(leg))}</summary>{''.join(parts)}</details>"


def _diff_lines(diff: str) -> str:
    """A unified diff as escaped HTML, added and removed lines marked (class `add` / `del`)."""
    out = []
    for line in diff.splitlines():
        kind = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else None)
        out.append(f'<span class="{kind}">{esc(line)}</span>' if kind else esc(line))
    return "\n".join(out)
