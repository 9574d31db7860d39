"""The human rendering of `ratchet report RUN --attempt N` (the same dict `--json` prints)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from ratchet.present.render import fmt_interval, fmt_num, fmt_p


def render_attempt(out: Console, r: dict[str, Any]) -> None:
    """`ratchet report RUN --attempt N`: summary, verdict, figures per stage, report, diff."""
    out.print(f"[bold]attempt {r['attempt']}[/] of run {r['run_id']}: {escape(str(r['summary'] or '-'))}")
    out.print(f"verdict [bold]{r['verdict'] or '-'}[/] ({r['reason'] or '-'})"
              + (f"; gave up: {escape(r['gave_up'])}" if r.get("gave_up") else ""))
    out.print(f"tree {r['tree']} ({'in the repository' if r['tree_present'] else 'not in the repository'}), "
              f"kept by {r['ref']}" + (f" -> {r['ref_commit'][:12]}" if r.get("ref_commit") else " (no ref)"))
    for stage, f in r["stages"].items():
        out.print(f"  {stage}: {f['verdict']} ({f['reason']}) estimate {fmt_num(f['estimate'])} "
                  f"{fmt_interval(f['interval'])} p {fmt_p(f['p_value'])} level {fmt_p(f['level'])} units {f['units']}"
                  + (f" skewness G1 {f['skewness']:+.2f}" if f.get("skewness") is not None else ""))
    if r.get("promotion"):
        out.print(f"promoted as commit {r['promotion']['commit']} on {r['promotion']['branch']}")
    out.print("[bold]report[/]")
    out.print(escape(r["report"] or "(none)"), soft_wrap=True)
    out.print("[bold]diff against the champion[/]")
    out.print(escape(r["diff"] or "(none)"), soft_wrap=True, markup=False)
