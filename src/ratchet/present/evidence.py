"""Human renderings of `ratchet verify` and `ratchet report --attempt` (the same dicts `--json`
prints)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from ratchet.present.render import fmt_interval, fmt_num, fmt_p


def render_verify(out: Console, err: Console, r: dict[str, Any]) -> None:
    """`ratchet verify`: what was checked, then each failed check (code, event, what differed)."""
    c = r["checked"]
    shown = ", ".join(f"{n} {name}" for name, n in c.items())
    if r["verified"]:
        out.print(f"[green]verified[/] run [bold]{r['run_id']}[/]: {shown}; head {r['head']}")
    else:
        out.print(f"[red]NOT verified[/] run [bold]{r['run_id']}[/]: {len(r['findings'])} check(s) failed ({shown})")
    for f in r["findings"]:
        where = f"event {f['seq']}" if f["seq"] is not None else "run"
        out.print(f"  [red]{escape(f['code'])}[/] at {where}: {escape(f['message'])}", soft_wrap=True)
    for w in r["warnings"]:
        err.print(f"[yellow]warning[/]: {escape(w)}")


def render_attempt(out: Console, r: dict[str, Any]) -> None:
    """`ratchet report RUN --attempt N`: summary, verdict, figures per stage, report, diff."""
    out.print(f"[bold]attempt {r['attempt']}[/] of run {r['run_id']}: {escape(str(r['summary'] or '-'))}")
    out.print(f"verdict [bold]{r['verdict'] or '-'}[/] ({r['reason'] or '-'})"
              + (f"; gave up: {escape(r['gave_up'])}" if r.get("gave_up") else ""))
    out.print(f"tree {r['tree']} ({'in the repository' if r['tree_present'] else 'not in the repository'}), "
              f"kept by {r['ref']}" + (f" -> {r['ref_commit'][:12]}" if r.get("ref_commit") else " (no ref)"))
    for stage, f in r["stages"].items():
        out.print(f"  {stage}: {f['verdict']} ({f['reason']}) estimate {fmt_num(f['estimate'])} "
                  f"{fmt_interval(f['interval'])} p {fmt_p(f['p_value'])} level {fmt_p(f['level'])} units {f['units']}")
    if r.get("promotion"):
        out.print(f"promoted as commit {r['promotion']['commit']} on {r['promotion']['branch']}")
    out.print("[bold]report[/]")
    out.print(escape(r["report"] or "(none)"), soft_wrap=True)
    out.print("[bold]diff against the champion[/]")
    out.print(escape(r["diff"] or "(none)"), soft_wrap=True, markup=False)
