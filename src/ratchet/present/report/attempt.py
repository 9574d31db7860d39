"""The human rendering of `ratchet report RUN --attempt N` (the same dict `--json` prints)."""

from __future__ import annotations

import shlex
from typing import Any

from rich.console import Console
from rich.markup import escape

from ratchet.present.render import fmt_interval, fmt_level, fmt_num, fmt_p, means_text, params_text
from ratchet.present.report.legs import leg_heading, request_lines, stream_heading


def render_attempt(out: Console, r: dict[str, Any]) -> None:
    """`ratchet report RUN --attempt N`: summary, verdict, figures per stage, a command agent's legs,
    report, diff."""
    out.print(f"[bold]attempt {r['attempt']}[/] of run {r['run_id']}: {escape(str(r['summary'] or '-'))}")
    if r.get("revises"):
        out.print(f"revises attempt {r['revises']} (the same agent session, told its verdict)")
    out.print(f"verdict [bold]{r['verdict'] or '-'}[/] ({r['reason'] or '-'})"
              + (f"; gave up: {escape(r['gave_up'])}" if r.get("gave_up") else ""))
    if r["tree"] is None:
        out.print("no candidate tree (the attempt " + ("gave up before submitting)" if r.get("gave_up") else
                                                        "submitted none)"))
    else:
        out.print(f"tree {r['tree']} ({'in the repository' if r['tree_present'] else 'not in the repository'}), "
                  f"kept by {r['ref']}" + (f" -> {r['ref_commit'][:12]}" if r.get("ref_commit") else " (no ref)"))
    for stage, f in r["stages"].items():
        names = ("baseline", "champion") if stage == "holdout" else ("champion", "candidate")
        means = means_text(f.get("champion_mean"), f.get("candidate_mean"), names)
        out.print(f"  {stage}: {f['verdict']} ({f['reason']}) estimate {fmt_num(f['estimate'])} "
                  f"{fmt_interval(f['interval'])}" + (f" ({means})" if means else "")
                  + f" p {fmt_p(f['p_value'])} level {fmt_level(f['level'], f['p_value'])} units {f['units']}"
                  + (f" skewness G1 {f['skewness']:+.2f}" if f.get("skewness") is not None else ""))
    if r.get("params"):
        out.print(f"parameters: {escape(params_text(r['params']))}")
    if r.get("promotion"):
        out.print(f"promoted as commit {r['promotion']['commit']} on {r['promotion']['branch']}")
    if r.get("legs"):
        render_legs(out, r["legs"])
    out.print("[bold]report[/]")
    out.print(escape(r["report"] or "(none)"), soft_wrap=True)
    out.print("[bold]diff against the champion[/]")
    out.print(r["diff"] or "(none)", soft_wrap=True, markup=False)  # printed as it is: no markup, no escapes


def render_legs(out: Console, legs: list[dict[str, Any]]) -> None:
    """Each leg of a command agent (`present.report.legs.leg_views`): heading, command, requests,
    and the last lines of its stdout and stderr, indented."""
    out.print(f"[bold]legs[/] ({len(legs)})")
    for leg in legs:
        out.print(f"  {escape(leg_heading(leg))}")
        if leg.get("command") is not None:
            out.print("    command: " + " ".join(shlex.quote(a) for a in leg["command"]), soft_wrap=True, markup=False)
        for line in request_lines(leg.get("requests")):
            out.print(f"    {line}", soft_wrap=True, markup=False)
        for name in ("stdout", "stderr"):
            stream = leg.get(name)
            out.print(f"    {stream_heading(name, stream)}", markup=False)
            if stream and stream.get("tail"):
                out.print("\n".join(f"      | {line}" for line in stream["tail"].splitlines()), soft_wrap=True,
                          markup=False)
