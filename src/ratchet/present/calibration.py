"""Human rendering of a calibration: `ratchet calibrate`'s result (`ratchet check` shows a stored
calibration with `render.detectable_lines`). Takes the same dict `--json` prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ratchet.present.render import fmt_num, fmt_p


def render_calibrate(out: Console, r: Mapping[str, Any]) -> None:
    """`ratchet calibrate` for people: the spreads (benchmark) or the val size (examples), then the
    smallest gain each look detects at the levels granted, and the units suggested for `--effect`."""
    if r["kind"] == "benchmark":
        _render_noise(out, r)
        unit = f"{r['metric']} units"
    else:
        out.print(f"examples target: {r['val']} val examples, looks {r['looks']} (nothing was run)")
        unit = "pass rate"
    out.print(f"smallest gain each look detects with {r['power']:.0%} power ({unit}"
              + (f", the margin {fmt_num(r['margin'])} included" if r["margin"] else "") + "):")
    out.print(_looks_table(r["levels"]))
    out.print(f"[dim]{escape(r['approximation'])}[/]")
    if r["effect"] is not None:
        out.print(f"to detect a gain of {fmt_num(r['effect'])}: " + "; ".join(
            f"gate.units = {units} for {trial.replace('_', ' ')}" if units else
            f"no gate.units up to the search's limit for {trial.replace('_', ' ')}"
            for trial, units in r["suggested_units"].items()))
    if r.get("stored"):
        out.print(f"stored in {escape(r['stored'])}: `ratchet check` shows these figures; run {r['run_id']}")
    for warning in r["warnings"]:
        out.print(f"[yellow]warning[/]: {escape(warning)}")


def _render_noise(out: Console, r: Mapping[str, Any]) -> None:
    n = r["noise"]
    seconds = f", {r['job_seconds']:.3g} s per job" if r.get("job_seconds") is not None else ""
    out.print(f"calibrated {escape(r['rev'])} (commit {r['commit'][:10]}) on {r['seeds']} seeds x {r['repeats']}: "
              f"{r['jobs']} jobs, {r['failed']} seed(s) failed{seconds}")
    out.print(f"{escape(str(r['metric']))} ({r['direction']}): mean {fmt_num(n['mean'], 6)}")
    out.print(f"  seed-to-seed SD       {fmt_num(n['seed_sd'])}")
    repeat = fmt_num(n["repeat_sd"])
    if n["constant"]:
        repeat += " [bold](constant: every seed gives the same value)[/]"
    elif n["deterministic"]:
        repeat += " [bold](deterministic: a seed gives the same value every time)[/]"
    out.print(f"  same-seed repeat SD   {repeat}")
    out.print(f"  paired difference SD  {fmt_num(n['paired_sd'])} (from {fmt_num(n['paired_sd_low'])} if a candidate "
              f"keeps the champion's seed effect to {fmt_num(n['paired_sd_high'])} if it keeps none)")


def _looks_table(levels: Sequence[Mapping[str, Any]]) -> Table:
    # lv["level"] is the attempt's share of alpha (one test at it): core.stats.calibration.level_effects
    table = Table("look", "units", *(f"trial {lv['trial']} (share of alpha {fmt_p(lv['level'])})" for lv in levels))
    for k, look in enumerate(levels[0]["looks"]):
        table.add_row(str(k + 1), str(look["units"]), *(_cell(lv["looks"][k]["detectable"]) for lv in levels))
    return table


def _cell(value: float | None) -> str:
    return "-  (cannot accept here)" if value is None else fmt_num(value, 3)
