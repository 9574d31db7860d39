"""The `ratchet` command line: parse, call, render (rich for people, `--json` for programs).

Every command prints exactly one JSON object with `--json`:
`{"ok": bool, "command": str, "result": {...}, "error": {"code", "message", "hint"} | null}`;
logs go to stderr. Exit codes: 0 ok, 1 internal error, 2 bad input, 3 a check failed, 130 interrupted.
Heavy modules (scipy, optuna, matplotlib) are imported inside commands, never at module import.
The shell every command shares (execute, the consoles, the arguments) is in cli_shell.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ratchet import __version__
from ratchet.cli_shell import (
    Command,
    DebugOpt,
    DirArg,
    DirOpt,
    Group,
    JsonOpt,
    RunArg,
    err,
    execute,
    existing_dir,
    out,
    print_error,
    project_dir,
    project_path,
    run_arg,
)
from ratchet.core.errors import EXIT_INTERRUPTED

app = typer.Typer(
    name="ratchet",
    cls=Group,
    help="Improvement loops that promote only proven gains (paired, held-out, budgeted).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def version_callback(value: bool) -> None:
    """Print the version and exit (for `--version`)."""
    if value:
        out().print(f"ratchet {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", metavar="", callback=version_callback, is_eager=True,
                           help="Show the version.")
    ] = False,
) -> None:
    """Ratchet: improvement loops that promote only proven gains."""


@app.command(cls=Command)
def init(
    directory: Annotated[Path | None, typer.Argument(
        metavar="DIR", show_default=False,
        help="Where to write ratchet.toml (created if needed); default `.`. The same as --dir: give one of them.")
    ] = None,
    kind: Annotated[str, typer.Option("--kind", metavar="KIND", help="benchmark | examples")] = "benchmark",
    dir_option: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Write a contract with every key (defaults shown) and minimal working files."""
    from ratchet.commands.init import init_project
    from ratchet.present.render import render_init

    where = project_dir(directory, dir_option)
    execute("init", as_json, debug, lambda: init_project(where, kind), lambda r: render_init(out(), r))


@app.command(cls=Command)
def check(
    directory: DirArg = None,
    preflight: Annotated[bool, typer.Option(
        "--preflight", metavar="",
        help="Also measure the baseline once, in the sandbox, as `ratchet run` will, and run a command "
             "agent's program with --version in its sandbox.")] = False,
    dir_option: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Validate the contract and show what a run would do, without running anything expensive."""
    from ratchet.commands.check import check_report
    from ratchet.present.render import render_check

    where = project_dir(directory, dir_option)
    execute("check", as_json, debug, lambda: check_report(project_path(where), preflight),
            lambda r: render_check(out(), r))


@app.command(cls=Command)
def run(
    directory: DirArg = None,
    resume: Annotated[str | None, typer.Option("--resume", metavar="RUN_ID",
                                               help="Continue the interrupted run RUN_ID.")] = None,
    allow_concurrent: Annotated[bool, typer.Option(
        "--allow-concurrent", metavar="", help="Start even while another run of this project is in progress.")] = False,
    dir_option: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run the campaign: attempts until a stop reason, promoting only what the gate accepts."""
    from ratchet.commands.run import run_project
    from ratchet.present.progress import LogUI, RichUI

    where = project_dir(directory, dir_option)
    ui = LogUI(err()) if as_json else RichUI(err())
    execute("run", as_json, debug, lambda: run_project(project_path(where), resume, ui, allow_concurrent),
            _render_run)


def _render_run(r: dict[str, Any]) -> None:
    from rich.markup import escape

    from ratchet.present.guardrail_text import guardrail_lines
    from ratchet.present.render import fmt_interval, fmt_num, fmt_p, means_text, params_text

    out().print(f"run [bold]{r['run_id']}[/] stopped: [bold]{r['stop_reason']}[/]"
              + (f" ({r['budget']})" if r.get("budget") else ""))
    h = r.get("holdout")
    if h:
        means = means_text(h.get("baseline_mean"), h.get("champion_mean"), ("baseline", "champion"))
        out().print(f"holdout (final champion vs baseline, {h['units']} units never used for selection): "
                  f"gain [bold]{fmt_num(h['estimate'])}[/] {fmt_interval(h['interval'])}"
                  + (f" ({means})" if means else "") + f" p {fmt_p(h['p_value'])}")
        for line in guardrail_lines(h.get("guardrails"), "  "):
            out().print(line, markup=False)
    else:
        out().print(f"promotions: {r['promotions']} (no holdout: the champion is the baseline)"
                  if not r["promotions"] else f"promotions: {r['promotions']}")
    c, b = r.get("champion") or {}, r.get("baseline") or {}
    if c.get("mean") is not None or b.get("mean") is not None:
        out().print(f"champion: {'attempt ' + str(c['attempt']) if c.get('attempt') else 'baseline'}, mean "
                    f"{fmt_num(c.get('mean'))} as last measured (baseline mean {fmt_num(b.get('mean'))})")
    if c.get("params"):
        out().print(f"best parameters: {escape(params_text(c['params']))}")
    if r.get("branch"):
        out().print(f"champion branch: {r['branch']}")
    if r.get("merge"):
        out().print(f"merge the champion with: {r['merge']}", markup=False)
    if r.get("resume"):
        out().print(f"resume with: {r['resume']}")
    out().print(f"report: {r['report']}")


@app.command(cls=Command)
def compare(
    base: Annotated[str, typer.Argument(metavar="BASE", help="Git revision measured as the baseline.")],
    candidate: Annotated[str, typer.Argument(metavar="CANDIDATE", help="Git revision measured as the candidate.")],
    directory: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """One controlled paired comparison of two git revisions on the target (level gate.alpha)."""
    from ratchet.commands.compare import compare_revisions
    from ratchet.present.progress import LogUI, RichUI

    where = directory or Path(".")
    ui = LogUI(err()) if as_json else RichUI(err())
    execute("compare", as_json, debug, lambda: compare_revisions(project_path(where), base, candidate, ui),
            _render_compare)


def _render_compare(r: dict[str, Any]) -> None:
    from rich.table import Table

    from ratchet.present.render import fmt_interval, fmt_num, fmt_p

    if r["units_table"]:
        table = Table("unit", "base", "candidate", "gain")
        for row in r["units_table"]:
            table.add_row(str(row["unit"]), "failed" if row["base_failed"] else fmt_num(row["base"]),
                          "failed" if row["candidate_failed"] else fmt_num(row["candidate"]), fmt_num(row["gain"]))
        out().print(table)
    colour = {"accepted": "green", "rejected": "red"}.get(r["verdict"], "yellow")
    out().print(f"[{colour}][bold]{r['verdict']}[/][/] ({r['reason']}): {r['reason_text']}")
    out().print(f"estimate {fmt_num(r['estimate'])} {fmt_interval(r['interval'])}, p {fmt_p(r['p_value'])}, "
              f"level {fmt_p(r['level'])}, units {r['units']}; run {r['run_id']}")


@app.command(cls=Command)
def status(
    run_id: RunArg = None,
    directory: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show a run's state, champion, budget and attempts (`ratchet runs` lists the runs)."""
    from ratchet.commands.runs import run_status

    where = directory or Path(".")
    execute("status", as_json, debug, lambda: run_status(existing_dir(where), run_arg("status", run_id, where)),
            _render_status)


def _render_status(r: dict[str, Any]) -> None:
    from ratchet.present.render import render_status

    render_status(out(), err(), r)


@app.command(cls=Command)
def runs(
    directory: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """List the project's runs: id, mode, state, stop reason, promotions, start time."""
    from ratchet.commands.runs import list_project_runs
    from ratchet.present.render import render_runs

    where = directory or Path(".")
    execute("runs", as_json, debug, lambda: list_project_runs(existing_dir(where)), lambda r: render_runs(out(), r))


@app.command(cls=Command)
def report(
    run_id: RunArg = None,
    directory: DirOpt = None,
    as_html: Annotated[bool, typer.Option(
        "--html", metavar="", help="Write one self-contained report.html instead.")] = False,
    attempt: Annotated[int | None, typer.Option("--attempt", metavar="N",
                                                help="Show attempt N: its report, diff, verdict and figures.")] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Re-render a run's report.md and plots (--html: report.html), or show one attempt (--attempt)."""
    from ratchet.commands.runs import find_run, write_html_report, write_report

    where = directory or Path(".")
    if attempt is not None and as_html:
        raise typer.BadParameter("--html writes the whole run's report and --attempt shows one attempt: give one",
                                 param_hint="'--html' / '--attempt'")
    if attempt is not None:
        from ratchet.commands.attempt import attempt_report
        from ratchet.present.report.attempt import render_attempt

        execute("report", as_json, debug,
                lambda: attempt_report(existing_dir(where), run_arg("report", run_id, where), attempt),
                lambda r: render_attempt(out(), r))
        return

    def work() -> dict[str, Any]:
        run = find_run(existing_dir(where), run_arg("report", run_id, where))
        return {"run_id": run.run_id, "report": str((write_html_report if as_html else write_report)(run))}

    execute("report", as_json, debug, work, lambda r: out().print(f"report: {r['report']}"))


@app.command()
def watch(
    run_id: RunArg = None,
    directory: DirOpt = None,
    once: Annotated[bool, typer.Option("--once", metavar="", help="Print one frame and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", metavar="",
                                          help="Print one frame as exactly one JSON object.")] = False,
    debug: DebugOpt = False,
) -> None:
    """Watch a run live from another terminal (read-only, no lock); `q` or Ctrl-C leaves.

    Started before its run can be read (`ratchet run` starting up), it waits up to 120 s for it.
    """
    from ratchet.commands.watch import RUN_WAIT_S, read_frame, watch_run
    from ratchet.present.watch import render_frame

    where = directory or Path(".")
    if once or as_json:
        execute("watch", as_json, debug, lambda: read_frame(existing_dir(where), run_arg("watch", run_id, where)),
                lambda r: out().print(render_frame(r)))
    else:
        execute("watch", False, debug,
                lambda: watch_run(existing_dir(where), run_arg("watch", run_id, where), out(), RUN_WAIT_S),
                lambda r: None)


@app.command(cls=Command)
def abandon(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The unfinished run to give up (its id: "
                                                              "`ratchet runs` lists them).")],
    directory: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Give up an interrupted run for good (stop reason abandoned; nothing is deleted)."""
    from ratchet.commands.abandon import abandon_run

    where = directory or Path(".")
    execute("abandon", as_json, debug,
            lambda: abandon_run(existing_dir(where), run_arg("abandon", run_id, where) or ""),
            lambda r: out().print(f"run [bold]{r['run_id']}[/] abandoned (it was {r['state_before']}); "
                                "its ledger, jobs and report are kept"))


@app.command(cls=Command)
def verify(
    run_id: RunArg = None,
    directory: DirOpt = None,
    key: Annotated[Path | None, typer.Option("--key", metavar="PUBKEY",
                                             help="Public key file to check the signatures against.")] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Check a run offline from its run directory: chain, blobs, plans, verdicts, budgets, signatures."""
    from ratchet.commands.verify import verify_run
    from ratchet.present.verification import render_verify

    where = directory or Path(".")
    execute("verify", as_json, debug, lambda: verify_run(existing_dir(where), run_arg("verify", run_id, where), key),
            lambda r: render_verify(out(), err(), r))


@app.command(cls=Command)
def calibrate(
    directory: DirArg = None,
    rev: Annotated[str | None, typer.Option("--rev", metavar="REV",
                                            help="Measure this git revision instead of HEAD.")] = None,
    seeds: Annotated[int | None, typer.Option(
        "--seeds", metavar="N", help="Seeds to measure, each twice (default 8).")] = None,
    effect: Annotated[float | None, typer.Option(
        "--effect", metavar="E", help="A gain worth detecting (metric units; examples: a pass rate): suggest "
                                      "gate.units for it.")] = None,
    dir_option: DirOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Measure the champion's noise (seeds twice each) and show the smallest gain the gate can detect."""
    from ratchet.commands.calibrate import calibrate_project
    from ratchet.present.calibration import render_calibrate
    from ratchet.present.progress import LogUI, RichUI

    where = project_dir(directory, dir_option)
    ui = LogUI(err()) if as_json else RichUI(err())
    execute("calibrate", as_json, debug,
            lambda: calibrate_project(project_path(where), rev=rev, seeds=seeds, effect=effect, ui=ui),
            lambda r: render_calibrate(out(), r))


def _usage_path(ctx: Any, command: str) -> str:
    """The command a usage error is about, as typed (`ratchet status`): the error's context, or the
    subcommand named on the line when the error came before its context (a missing option value)."""
    path = ctx.command_path if ctx is not None else "ratchet"
    known = getattr(typer.main.get_command(app), "commands", {})
    return f"ratchet {command}" if path == "ratchet" and command in known else path


def main() -> None:
    """Console-script entry point. An argument error prints `error (usage): ...` and a hint on
    stderr (with `--json`, the one JSON envelope on stdout), exit 2."""
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), "")
    try:
        code = app(standalone_mode=False, prog_name="ratchet")
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # click's UsageError/BadParameter (vendored or not): they format themselves
        if not hasattr(exc, "format_message"):
            raise
        as_json, message = "--json" in sys.argv[1:], exc.format_message()
        if as_json or message:  # an empty message: no arguments at all, the help was printed
            hint = f"see `{_usage_path(getattr(exc, 'ctx', None), command)} --help`"
            print_error(command, as_json, {"code": "usage", "message": message, "hint": hint})
        sys.exit(getattr(exc, "exit_code", 2) or 2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
