"""Human renderings of command results (rich). Each takes the same dict `--json` prints."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ratchet.present.guardrail_text import guardrail_lines
from ratchet.present.status import attempt_label

PIPE_WIDTH = 200
"""Columns a console writes when its output is not a terminal (a file, a pipe) and COLUMNS is not
set: wide enough that lines and tables are not wrapped at rich's default of 80."""


def make_console(stderr: bool = False) -> Console:
    """A rich Console for stdout (or stderr). On a terminal it wraps at the terminal's width; piped
    to a file or a program it does not wrap text (soft wrap) and lays tables out PIPE_WIDTH wide
    (COLUMNS, when set, wins)."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console.soft_wrap = True
        if not os.environ.get("COLUMNS"):
            console.width = PIPE_WIDTH
    return console


def render_init(out: Console, r: dict[str, Any]) -> None:
    """`ratchet init` for people: the files written, the note that a run measures the committed
    tree, and the next commands."""
    for path in r["written"]:
        out.print(f"wrote {escape(path)}")
    out.print(f"note: {escape(r['note'])}")
    out.print("next:")
    for command in r["next"]:
        out.print(f"  [bold]{escape(command)}[/]")


BUDGETS = (
    ("attempts", "max_attempts", "attempts"),
    ("evaluations", "max_evaluations", "job-units"),
    ("cpu_hours", "max_cpu_hours", "CPU hours"),
    ("gpu_hours", "max_gpu_hours", "GPU hours"),
    ("wall_s", "max_wall_s", "wall seconds"),
)
"""Each budget as (key of the status result's budget.used, key of its limits, label), in the order
`watch` and the reports show them."""


def fmt_num(value: float | None, digits: int = 4) -> str:
    """A number for a table cell: `-` for None, else `digits` significant digits."""
    return "-" if value is None else f"{value:.{digits}g}"


def fmt_interval(interval: list[float] | tuple[float, float] | None, digits: int = 3) -> str:
    """`[low, high]` for a table cell, `-` for None."""
    if not interval:
        return "-"
    return f"[{interval[0]:.{digits}g}, {interval[1]:.{digits}g}]"


def fmt_amount(value: float | int | None) -> str:
    """A budget amount: `-` for None; integers with thousands separators; floats to 4 significant
    digits below 1,000 and as whole numbers with separators from there (never `1e+04`)."""
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def fmt_p(p: float | None) -> str:
    """A p-value: `-`, or 3 significant digits (scientific below 0.001)."""
    if p is None:
        return "-"
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"


def fmt_level(level: float | None, p_value: float | None = 0.0) -> str:
    """A trial's level (the significance level its test ran at): `-` when no test ran (`p_value`
    None: decided without jobs) or no level was granted (0), else 3 significant digits."""
    if level is None or level == 0 or p_value is None:
        return "-"
    return fmt_p(level)


def look_stops_text(looks: list[int], stops: list[str]) -> str:
    """`8: futility only, 16: efficacy, 32: efficacy`: what each look (its units) can stop for."""
    return ", ".join(f"{n}: {stop}" for n, stop in zip(looks, stops, strict=True))


def unseen_text(u: Mapping[str, Any], examples: bool) -> str:
    """`ratchet check`'s line on what the last look's units cannot see (`gate_summary`'s `unseen`),
    in the target's terms: seeds of a benchmark, val examples of an examples target."""
    if examples:
        return (f"what {u['units']} val examples cannot see: a kind of input that makes up 5% of all inputs is "
                f"among none of them with chance {u['unseen_5pct']:.2f} (10%: {u['unseen_10pct']:.2f}); a "
                f"solution failing none of them may still fail up to {u['ruled_out_95']:.3f} of all inputs (95%)")
    return (f"what {u['units']} units cannot see: a failure on 5% of seeds shows on none of them with "
            f"chance {u['unseen_5pct']:.2f} (10%: {u['unseen_10pct']:.2f}); no failure among them rules out "
            f"frequencies above {u['ruled_out_95']:.3f} at 95%")


def render_check(out: Console, r: dict[str, Any]) -> None:
    """`ratchet check` for people: target, scope, agent, gate levels, budget, sandbox, warnings."""
    t = r["target"]
    out.print(f"[bold]contract[/] {r['contract']}  [dim]{r['digest'][:19]}[/]")
    out.print(f"[bold]campaign[/] {r['campaign']['name']} (seed {r['campaign']['seed']})")
    if t["kind"] == "benchmark":
        out.print(
            f"[bold]target[/]   benchmark: `{t['command']}` -> {t['metric']} ({t['direction']}), "
            f"seed in ${t['seed_env']}, timeout {t['timeout_s']:g} s, cache {'on' if t['cache'] else 'off'}"
        )
    elif t.get("solution_kind") == "prompt" and t.get("model"):
        m = t["model"]
        out.print(f"[bold]target[/]   examples: {t['examples']} -> prompt {t['solution']} answered by {m['model']} at "
                  f"{m['base_url']} ({m['samples']} sample(s) per example), split {t['split']}")
    else:
        out.print(f"[bold]target[/]   examples: {t['examples']} -> `python3 {t['solution']}`, split {t['split']}")
    if "examples" in r:
        e = r["examples"]
        out.print(
            f"           {e['total']} examples ({e['duplicates_dropped']} duplicates dropped): "
            f"dev {e['dev']}, val {e['val']}, test {e['test']}; looks on val {e['looks']}"
        )
        room = e["promotions_room"]
        out.print(f"           val has room for {room} promotion{'s' if room != 1 else ''}: one block of "
                  f"{e['looks'][-1]} val examples per promotion, after which the run stops (val_exhausted)")
        mde = e["mde_first_trial"]
        out.print("           smallest pass-rate gain val can detect at trial 1's level (80% power): "
                  + (f"at least {mde:.3f}" if mde is not None else "none (val too small for the level)"))
        out.print("           gate.confirm does not apply to examples (no fresh units); the test split is "
                  "measured once at the end")
    if "detectable" in r:
        for k, line in enumerate(detectable_lines(r["detectable"])):
            out.print(("[bold]detect[/]   " if k == 0 else "           ") + escape(line))
    s = r["scope"]
    out.print(f"[bold]scope[/]    allowed {s['allowed']}, protected {s['protected']}, hidden {s['hidden']}")
    out.print(f"[bold]agent[/]    {r['agent']['kind']}")
    for line in agent_program_lines(r["agent"]):
        out.print("           " + escape(line))
    g = r["gate"]
    out.print(
        f"[bold]gate[/]     alpha {g['alpha']} ({g['multiplicity']}), looks {g['looks']}"
        + (f" (gate.units {g['units']} clamped to val)" if list(g["looks"]) != list(g["units"]) else "") + ", "
        f"min_effect {g['min_effect']} / rel {g['min_effect_rel']}, "
        + (f"confirm {g['confirm']}, holdout {g['holdout_size']} units" if g["kind"] == "continuous"
           else "holdout: the test split, once")
    )
    out.print(f"           guarantee: {g['guarantee']}")
    if g.get("betting_cost"):
        out.print(f"           {escape(g['betting_cost']['text'])}")
    out.print("           " + unseen_text(g["unseen"], examples="examples" in r))
    rows = g["levels"]
    confirmed = any(row.get("confirm_level", 1.0) < 1.0 for row in rows)
    out.print("           " + escape(LEVEL_WORDS_CONFIRMED if confirmed else LEVEL_WORDS))
    table = Table("trial", "share of alpha", "level", "first-look increment", "last-look increment",
                  "min p (first look)", "each look can stop for", "reachable")
    shown = rows if len(rows) <= 6 else rows[:3] + rows[-3:]
    for row in shown:
        incs = row["increments"]
        table.add_row(
            str(row["trial"]), fmt_p(alpha_share(row)), fmt_p(row["level"]), fmt_p(incs[0]), fmt_p(incs[-1]),
            fmt_p(row["min_p_first"]), look_stops_text(g["looks"], row["stops"]),
            "yes" if row["reachable"] else "[red]no[/]",
        )
    out.print(table)
    b = r["budget"]
    w = b["worst_case_units"]
    out.print(
        f"[bold]budget[/]   attempts {b['max_attempts']}, evaluations {b['max_evaluations'] or 'unlimited'}, "
        f"cpu h {b['max_cpu_hours'] or 'unlimited'}, wall {_seconds(b['max_wall_s'])}; worst case "
        f"{w['per_trial']} job-units per trial, {w['holdout']} for the holdout, {w['run']} for the run"
    )
    sb = r["sandbox"]
    out.print(f"[bold]sandbox[/]  mode {sb['mode']} -> {sb['resolved']} ({sb['detail']}), network {sb['network']}")
    c = r["compute"]
    out.print(f"[bold]compute[/]  {c['backend']}, {c['jobs_at_once']} job(s) at once"
              + (f" ({escape(c['why'])})" if c["why"] else ""))
    env = r["environment"]
    out.print(f"[bold]job PATH[/] {':'.join(env['path'])}"
              + (f" [dim](without Ratchet's own {env['dropped']})[/]" if env["dropped"] else ""))
    for line in job_program_lines(env["programs"], sb["resolved"]):
        out.print(f"           {line}")
    if env["hidden_in_sandbox"]:
        out.print(f"           not visible in the sandbox: {', '.join(env['hidden_in_sandbox'])}")
    if env["read_only"]:
        out.print(f"           read-only in the sandbox: {', '.join(env['read_only'])}")
    if env["pass_env"]["set"]:
        out.print(f"           passed from your environment: {', '.join(env['pass_env']['set'])}")
    out.print(f"[bold]inputs[/]   from the working tree: {', '.join(r['inputs']['working_tree'])}; "
              "everything else from the commit HEAD")
    pf = r.get("preflight")
    if pf:
        out.print(f"[bold]preflight[/] {pf['state']}: {pf['reason']} (commit {pf['commit'][:10]})")
    for problem in r["unsupported"]:
        out.print(f"[red]not supported yet[/]: {problem['message']}")
    for warning in r["warnings"]:
        out.print(f"[yellow]warning[/]: {warning}")
    if not r["unsupported"]:
        out.print("[green]contract OK[/]")


LEVEL_WORDS = ("share of alpha: the part of gate.alpha an attempt may spend; level: the significance level "
               "its trial is tested at (here the same), spent over the looks in increments")
LEVEL_WORDS_CONFIRMED = (
    "share of alpha: the part of gate.alpha an attempt may spend; level: the significance level its trial "
    "and its confirmation are each tested at (share = trial level x confirmation level, so a level may "
    "exceed alpha), spent over the looks in increments")
"""The two words `ratchet check` uses for levels, said once above its table (docs/gate.md, "Words")."""


def alpha_share(row: Mapping[str, Any]) -> float:
    """An attempt's share of alpha from its row of `ratchet check`'s level schedule: its trial's
    level times its confirmation's (`confirm_level`, 1.0 without confirmation)."""
    return float(row["level"]) * float(row.get("confirm_level", 1.0))


def job_program_lines(programs: Mapping[str, Any], resolved: str) -> list[str]:
    """The programs a job runs as `ratchet check` found them: `python3 -> /path (bound prefix)`,
    and the command's own program when it is another."""
    lines = []
    for p in (programs["python3"], programs["command"]):
        if p is None:
            continue
        if p["problem"]:
            lines.append(f"{p['word']}: not found: {p['problem']}")
            continue
        real = f" (resolves to {p['resolved']})" if p["found"] != p["resolved"] else ""
        where = "bound read-only in the sandbox" if resolved == "bwrap" else "bound when sandboxed"
        lines.append(f"{p['word']} -> {p['found']}{real}; {where}: {', '.join(p['prefixes']) or '(nothing more)'}")
    if programs["project_file"]:
        lines.append(f"run from the project when a checkout lacks it: {programs['project_file']}")
    return lines


def agent_program_lines(agent: Mapping[str, Any]) -> list[str]:
    """A command agent's program as `ratchet check` found it: where, what is bound, the --version probe."""
    p = agent.get("program")
    if p is None:
        return []
    if agent["will_run"] is None:
        lines = [f"program {p['word']}: a path relative to the workspace (found there when a leg runs)"]
    elif not agent["will_run"]:
        lines = [f"program {p['word']}: will not run: {p['problem']}"]
    else:
        via = f" ({p['found']})" if p["found"] != p["resolved"] else ""
        lines = [f"program {p['word']} -> {p['resolved']}{via}: will run"]
        if p["interpreters"]:
            lines.append(f"interpreter {' -> '.join(p['interpreters'])}")
        lines.append(f"bound read-only in the agent's sandbox: {', '.join(agent['bound']) or '(nothing more)'}")
    v = agent.get("version")
    if v is not None:
        lines.append(f"`{' '.join(v['argv'])}` in the agent's sandbox: exit code {v['exit_code']}: "
                     f"{(v['output'] or '(no output)').splitlines()[0] if v['ok'] else v['output']}")
    return lines


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
        return [head, *(_level_line(lv, "") for lv in cal["levels"]),
                *guardrail_check_lines(d, d["in_paired_sd"]["power"])]
    guess = d["in_paired_sd"]
    head = (f"not calibrated (`ratchet calibrate` measures the noise); gains detected with {guess['power']:.0%} "
            "power, in paired-difference SDs:")
    return [head, *(_level_line(lv, " SDs") for lv in guess["levels"]), *guardrail_check_lines(d, guess["power"])]


def guardrail_check_lines(d: Mapping[str, Any], power: float) -> list[str]:
    """`ratchet check`'s line per guardrail (commands.check.guardrail_detectable): the regression its
    allowance leaves undetected, as the guardrail's paired SD up to which an unchanged guardrail passes."""
    out = []
    for g in d.get("guardrails") or ():
        sd = g.get("detectable_sd")
        if g.get("max_sd") is not None:
            out.append(f"  guardrail {g['name']} (allowance {fmt_num(g['allowance'])}): an unchanged guardrail is "
                       f"shown within its allowance with {power:.0%} power when its paired SD is <= "
                       f"{fmt_num(g['max_sd'], 3)} "
                       f"(the allowance / {fmt_num(sd, 3)} SDs at trial 1's last look); a noisier one rejects good "
                       "candidates")
        else:
            out.append(f"  guardrail {g['name']}: relative allowance (known after the preflight); it must be at "
                       f"least {fmt_num(sd, 3)} paired SDs of the guardrail for {power:.0%} power")
    return out


def _level_line(level: Mapping[str, Any], unit: str) -> str:
    """One trial's detectable gains. `level["level"]` is the attempt's share of alpha (one test at
    it: core.stats.calibration.level_effects), so it is named so."""
    looks = " / ".join(str(look["units"]) for look in level["looks"])
    return (f"  trial {level['trial']} (one test at its share of alpha, {fmt_p(level['level'])}): "
            f"{_per_look(level)}{unit} at looks {looks}")


def _per_look(level: Mapping[str, Any]) -> str:
    return " / ".join("-" if look["detectable"] is None else fmt_num(look["detectable"], 3) for look in level["looks"])


def state_text(r: dict[str, Any]) -> str:
    """A run's state for people: `stopped (budget_exhausted: max_wall)`, `interrupted` (its stop
    reason is the state itself, not repeated), `running`."""
    reason = r.get("stop_reason")
    if not reason or reason == r["state"]:
        return str(r["state"])
    return f"{r['state']} ({reason}" + (f": {r['stop_budget']}" if r.get("stop_budget") else "") + ")"


def means_text(before: float | None, after: float | None, names: tuple[str, str] = ("champion", "candidate")
               ) -> str:
    """`champion 0.812 -> candidate 0.867`: two raw means (metric units) next to a gain; "" when
    neither was measured."""
    if before is None and after is None:
        return ""
    return f"{names[0]} {fmt_num(before)} -> {names[1]} {fmt_num(after)}"


def params_text(params: Mapping[str, Any] | None) -> str:
    """`C=0.5, depth=4`: a search agent's parameters in their recorded order, "" for None."""
    if not params:
        return ""
    return ", ".join(f"{k}={fmt_num(v) if isinstance(v, float) else v}" for k, v in params.items())


def holdout_text(h: dict[str, Any] | None, promotions: int) -> str:
    """The holdout line of `status`: the final champion against the baseline on units no
    decision used (the gain, then both raw means), or why there is none."""
    if h is None:
        return ("holdout: none (nothing was promoted: the champion is the baseline)" if not promotions
                else "holdout: not measured yet (it runs when the run stops)")
    means = means_text(h.get("baseline_mean"), h.get("champion_mean"), ("baseline", "champion"))
    return (f"holdout (final champion vs baseline, {h['units']} units never used for selection): "
            f"{h.get('verdict') or '-'}, gain {fmt_num(h['estimate'])} {fmt_interval(h['interval'])}"
            + (f" ({means})" if means else "") + f", p {fmt_p(h['p_value'])}")


def render_status(out: Console, err: Console, r: dict[str, Any]) -> None:
    """`ratchet status` for people: state and stop reason (with a budget stop's detail), champion,
    holdout, budget, one row per attempt; warnings on `err`."""
    out.print(f"run [bold]{escape(str(r['run_id']))}[/]: {escape(state_text(r))}")
    if r.get("stop_detail"):
        out.print(f"  {escape(r['stop_detail'])}")
    c, b = r["champion"], r["baseline"]
    out.print(f"baseline: commit {str(b['commit'])[:10]} mean {fmt_num(b.get('mean'))}")
    out.print(f"champion: {('attempt ' + str(c['attempt'])) if c['attempt'] else 'baseline'} "
              f"commit {str(c['commit'])[:10]} mean {fmt_num(c.get('mean'))}"
              + (f" (gain at promotion {fmt_num(c['estimate'])})" if c["attempt"] else "")
              + f"; promotions {r['promotions']}")
    if c.get("params"):
        out.print(f"best parameters: {escape(params_text(c['params']))}")
    out.print(escape(holdout_text(r.get("holdout"), r["promotions"])))
    for line in guardrail_lines((r.get("holdout") or {}).get("guardrails"), "  "):
        out.print(escape(line))
    used, limits = r["budget"]["used"], r["budget"]["limits"]
    out.print(f"budget: attempts {used['attempts']}/{limits.get('max_attempts')}, job-units {used['evaluations']}, "
              f"cpu h {used['cpu_hours']:.3f}, wall {used['wall_s']:.0f}s")
    table = Table("#", "summary", "verdict", "reason", "gain", "interval", "champion mean", "candidate mean",
                  "p", "level", "units")
    for a in r["attempts"]:
        table.add_row(attempt_label(a), escape((a.get("summary") or "")[:40]), str(a["verdict"] or "-"),
                      escape(str(a["reason"] or "-")), fmt_num(a["estimate"]), fmt_interval(a["interval"]),
                      fmt_num(a.get("champion_mean")), fmt_num(a.get("candidate_mean")),
                      fmt_p(a["p_value"]), fmt_level(a.get("level"), a["p_value"]), str(a["units"] or "-"))
    out.print(table)
    for a in r["attempts"]:
        for line in guardrail_lines(a.get("guardrails"), f"attempt {a['attempt']} "):
            out.print(escape(line))
    if r.get("in_flight"):
        out.print("in flight: " + ", ".join(escape(attempt_label(a)) for a in r["in_flight"]))
    for w in r.get("warnings", []):
        err.print(f"[yellow]warning[/]: {escape(w)}")


_RUN_STATE_STYLE = {"running": "green", "stopped": "blue", "interrupted": "yellow", "unreadable": "red"}


def render_runs(out: Console, r: dict[str, Any]) -> None:
    """`ratchet runs` for people: one table row per run, oldest first, and how to see one."""
    if not r["runs"]:
        out.print(f"no runs in {escape(r['project'])} yet: `ratchet run` starts one")
        return
    table = Table("run", "mode", "state", "stop reason", "promotions", "attempts", "started (UTC)")
    for row in r["runs"]:
        state = str(row["state"])
        table.add_row(escape(row["run_id"]), escape(str(row["mode"] or "-")),
                      f"[{_RUN_STATE_STYLE.get(state, 'dim')}]{escape(state)}[/]",
                      escape(str(row["stop_reason"] or "-")), str(row["promotions"] if row["promotions"] is not None
                                                                  else "-"),
                      str(row["attempts"] if row["attempts"] is not None else "-"),
                      escape(str(row["started"] or "-").replace("T", " ")[:19]))
    out.print(table)
    for row in r["runs"]:
        if row.get("error"):
            out.print(f"[red]{escape(row['run_id'])}[/]: {escape(row['error']['message'])}")
    out.print(f"[dim]one run: ratchet status RUN --dir {escape(r['project'])}[/]")


def _seconds(limit: float | None) -> str:
    """A wall-time limit as `ratchet check` prints it: "3600 s", or "unlimited" (None or 0)."""
    return f"{limit:g} s" if limit else "unlimited"
