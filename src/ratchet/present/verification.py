"""The human rendering of `ratchet verify` (the same dict `--json` prints)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape


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
