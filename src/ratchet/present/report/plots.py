"""The report's plots (matplotlib, Agg backend): the champion's cumulative confirmed gain over
attempts, each attempt's effect with its interval, and each budget's share used over attempts.

Each `*_figure` builds a Figure from plain values; `save_png` writes one for report.md and
`figure_svg` returns one as inline SVG text for the HTML report.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.core.payloads import ChampionPromoted
from ratchet.present.render import BUDGETS

VERDICT_COLORS = {"accepted": "tab:green", "rejected": "tab:red", "inconclusive": "tab:orange"}

FIGSIZE_IN = (7.0, 3.5)
"""Width and height of every plot, inches."""

PNG_DPI = 100
"""Dots per inch of the PNG plots written next to report.md."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def champion_figure(attempts: Sequence[Mapping[str, Any]], promotions: Sequence[ChampionPromoted],
                    holdout: Mapping[str, Any] | None) -> Any:
    """Step plot of the champion's cumulative confirmed gain (metric units, positive = better) after
    each attempt, with each promotion's interval, and the holdout's estimate at the end."""
    plt = _pyplot()
    by_attempt = {p.attempt: p for p in promotions}
    xs, ys, total = [0], [0.0], 0.0
    fig, ax = plt.subplots(figsize=FIGSIZE_IN)
    for a in attempts:
        p = by_attempt.get(a["attempt"])
        if p is not None and p.estimate is not None:
            total += p.estimate
            lo, hi = p.interval or (p.estimate, p.estimate)
            ax.errorbar([a["attempt"]], [total], yerr=[[p.estimate - lo], [hi - p.estimate]],
                        fmt="o", color="tab:green", capsize=3)
        xs.append(a["attempt"])
        ys.append(total)
    ax.step(xs, ys, where="post", color="tab:blue", label="champion (sum of confirmed gains)")
    if holdout and holdout.get("estimate") is not None:
        lo, hi = holdout.get("interval") or (holdout["estimate"],) * 2
        x = (xs[-1] if xs else 0) + 0.5
        ax.errorbar([x], [holdout["estimate"]], yerr=[[holdout["estimate"] - lo], [hi - holdout["estimate"]]],
                    fmt="D", color="black", capsize=4, label="holdout vs baseline")
    ax.axhline(0.0, color="grey", lw=0.8)
    attempt_axis(ax, xs)
    if holdout and holdout.get("estimate") is not None:
        ax.set_xlim(right=xs[-1] + 1.0)  # room for the holdout's diamond at the last attempt + 0.5
    _finish(ax, "gain over baseline", "Champion over attempts")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def effects_figure(attempts: Sequence[Mapping[str, Any]]) -> Any:
    """Each measured attempt's estimated effect (candidate - champion, positive = better) with its
    interval, coloured by verdict."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE_IN)
    by_colour: dict[str, list[tuple[float, float, float, float]]] = {}
    for a in attempts:
        if a.get("estimate") is None:
            continue
        est = a["estimate"]
        lo, hi = a.get("interval") or (est, est)
        colour = VERDICT_COLORS.get(a.get("verdict") or "", "tab:gray")
        by_colour.setdefault(colour, []).append((a["attempt"], est, max(est - lo, 0.0), max(hi - est, 0.0)))
    for colour, points in by_colour.items():  # one call per colour: hundreds of attempts draw at once
        xs, ys, below, above = zip(*points, strict=True)
        ax.errorbar(xs, ys, yerr=[below, above], fmt="o", capsize=3 if len(points) < 100 else 0,
                    markersize=6 if len(points) < 100 else 2, color=colour, lw=1)
    ax.axhline(0.0, color="grey", lw=0.8)
    attempt_axis(ax, [a["attempt"] for a in attempts])
    _finish(ax, "gain vs champion", "Each attempt's gain (green accepted, red rejected, orange inconclusive)")
    fig.tight_layout()
    return fig


def budget_figure(timeline: Sequence[Mapping[str, Any]], limits: Mapping[str, Any]) -> Any:
    """Each limited budget's share used (percent of its limit) at the start of each attempt and at
    the last event. `timeline`: report.data.budget_timeline rows; `limits`: run.started's limits."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE_IN)
    xs = [row["attempt"] for row in timeline]
    for key, limit_key, label in BUDGETS:
        limit = limits.get(limit_key) or 0
        if limit and timeline:
            ax.plot(xs, [100.0 * row[key] / limit for row in timeline], marker=".", label=label)
    ax.axhline(100.0, color="grey", lw=0.8, ls="--")
    attempt_axis(ax, xs)
    _finish(ax, "% of the limit used", "Budgets used over attempts")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


MAX_LISTED_TICKS = 20
"""Up to this many attempts every attempt number is a tick; beyond, matplotlib picks integer ticks."""


def attempt_axis(ax: Any, attempts: Sequence[float]) -> None:
    """An x axis of attempt numbers: integer ticks only, half an attempt of room on each side (a
    single attempt otherwise gets matplotlib's default span and ticks such as 2.84 .. 3.16)."""
    from matplotlib.ticker import MaxNLocator

    if not attempts:
        ax.set_xticks([])
        return
    low, high = int(min(attempts)), int(max(attempts))
    ax.set_xlim(low - 0.5, high + 0.5)
    if high - low < MAX_LISTED_TICKS:
        ax.set_xticks(range(low, high + 1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _finish(ax: Any, ylabel: str, title: str) -> None:
    ax.set_xlabel("attempt")
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def save_png(fig: Any, path: Path) -> Path:
    """Write `fig` as a PNG at `path` (PNG_DPI) and close it; returns `path`."""
    plt = _pyplot()
    fig.savefig(path, dpi=PNG_DPI)
    plt.close(fig)
    return path


def figure_svg(fig: Any, salt: str) -> str:
    """`fig` as one `<svg>` element (no XML prolog, no fixed size: it scales to its container) and
    close it. `salt` seeds the SVG's element ids, so several figures in one page never share an id."""
    import matplotlib

    plt = _pyplot()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    head_end = svg.index(">")
    head = svg[:head_end]
    for attribute in ("width", "height"):
        start = head.find(f' {attribute}="')
        if start >= 0:
            stop = head.index('"', start + len(attribute) + 3)
            head = head[:start] + head[stop + 1:]
    return head + ' role="img"' + svg[head_end:]


def champion_plot(attempts: Sequence[Mapping[str, Any]], promotions: Sequence[ChampionPromoted],
                  holdout: Mapping[str, Any] | None, path: Path) -> Path:
    """champion_figure written as a PNG at `path`; returns `path`."""
    return save_png(champion_figure(attempts, promotions, holdout), path)


def effects_plot(attempts: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """effects_figure written as a PNG at `path`; returns `path`."""
    return save_png(effects_figure(attempts), path)
