"""Human renderings of a calibration: `ratchet calibrate`'s result and the detectable-effect lines of
`ratchet check`. Each takes the same dict `--json` prints."""

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
    table = Table("look", "units", *(f"trial {lv['trial']} (level {fmt_p(lv['level'])})" for lv in levels))
    for k, look in enumerate(levels[0]["looks"]):
        table.add_row(str(k + 1), str(look["units"]), *(_cell(lv["looks"][k]["detectable"]) for lv in levels))
    return table


def _cell(value: float | None) -> str:
    return "-  (cannot accept here)" if value is None else fmt_num(value, 3)


def _per_look(level: Mapping[str, Any]) -> str:
    return " / ".join("-" if look["detectable"] is None else fmt_num(look["detectable"], 3) for look in level["looks"])


def detectable_lines(d: Mapping[str, Any]) -> list[str]:
    """`ratchet check`'s lines for its `detectable` result (see commands.check.detectable_summary):
    the stored calibration's detectable gains per look, or the guess in paired SDs without one."""
    cal = d.get("calibration")
    if cal and "ignored" not in cal:
        n = cal["noise"]
        head = (f"calibrated by run {cal['run_id']} ({cal['seeds']} seeds, commit {str(cal['commit'])[:10]}"
                + ("; HEAD has changed since" if cal["head_changed"] else "") + f"): paired SD "
                f"{fmt_num(n['paired_sd'])} (seed {fmt_num(n['seed_sd'])}, repeat {fmt_num(n['repeat_sd'])}"
                + (", deterministic" if n["deterministic"] else "")
                + f"); gains detected with {cal['power']:.0%} power:")
        return [head, *(_level_line(lv, "") for lv in cal["levels"])]
    guess = d["in_paired_sd"]
    head = (f"not calibrated (`ratchet calibrate` measures the noise); gains detected with {guess['power']:.0%} "
            "power, in paired-difference SDs:")
    return [head, *(_level_line(lv, " SDs") for lv in guess["levels"])]


def _level_line(level: Mapping[str, Any], unit: str) -> str:
    looks = " / ".join(str(look["units"]) for look in level["looks"])
    return f"  trial {level['trial']} (level {fmt_p(level['level'])}): {_per_look(level)}{unit} at looks {looks}"
