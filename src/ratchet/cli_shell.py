"""The command line's shell: the help layout, the consoles, the shared arguments, and `execute`,
which runs a command's work and turns its result or error into the `--json` envelope or rich output
with the documented exit codes (cli.py holds the commands)."""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from ratchet.core.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RatchetError

if TYPE_CHECKING:
    from rich.console import Console


def _plain_help_option(option: Any) -> Any:
    if option is not None:
        option.metavar = ""  # a flag takes no value: no `<bool>` beside --help
    return option


class Command(TyperCommand):
    """A command whose help shows required arguments as `BASE`, not `{BASE}`, and flags bare."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """The usage line's pieces, braces around required arguments removed."""
        pieces = super().collect_usage_pieces(ctx)
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in pieces]

    def get_help_option(self, ctx: Any) -> Any:
        """`--help`, shown without a value type."""
        return _plain_help_option(super().get_help_option(ctx))


class Group(TyperGroup):
    """The `ratchet` group: `--help` shown without a value type."""

    def get_help_option(self, ctx: Any) -> Any:
        """`--help`, shown without a value type."""
        return _plain_help_option(super().get_help_option(ctx))


@functools.cache
def out() -> Console:
    """The rich Console on stdout, made on first use (so a `--json` command never loads rich)."""
    from ratchet.present.render import make_console

    return make_console()


@functools.cache
def err() -> Console:
    """The rich Console on stderr, made on first use."""
    from ratchet.present.render import make_console

    return make_console(stderr=True)


JsonOpt = Annotated[bool, typer.Option("--json", metavar="", help="Print exactly one JSON object on stdout.")]
DebugOpt = Annotated[bool, typer.Option("--debug", metavar="", help="Show the traceback of an error.")]
DirArg = Annotated[Path | None, typer.Argument(
    metavar="DIR", show_default=False,
    help="Project directory (holding ratchet.toml); default `.`. The same as --dir: give one of them.")]
DirOpt = Annotated[Path | None, typer.Option("--dir", metavar="DIR", show_default=False,
                                             help="Project directory (holding ratchet.toml); default `.`.")]
RunArg = Annotated[str | None, typer.Argument(
    metavar="RUN", help="Run id (default: the latest run); `ratchet runs` lists them. The project is --dir.")]

Renderer = Callable[[dict[str, Any]], None]


def project_dir(positional: Path | None, option: Path | None) -> Path:
    """The project directory of a command taking both `DIR` and `--dir`: the one given, `.` when
    neither is. Both given: accepted when they name the same directory, else a usage error (exit 2)
    naming both, since neither silently wins."""
    if positional is not None and option is not None and positional != option:
        same = positional.exists() and option.exists() and os.path.samefile(positional, option)
        if not same:
            raise typer.BadParameter(
                f"DIR {str(positional)!r} and --dir {str(option)!r} name different directories: give one of them",
                param_hint="DIR / --dir")
    return positional or option or Path(".")


def existing_dir(directory: Path) -> Path:
    """`directory` when it is an existing directory. Raises DataError `project.no_dir` (exit 2)."""
    from ratchet.core.errors import DataError

    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise DataError("project.no_dir", f"no such directory: {directory} {what}",
                        hint="give the project directory (the one holding ratchet.toml) with --dir DIR")
    return directory


def run_arg(command: str, run_id: str | None, directory: Path) -> str | None:
    """`run_id` as given, after refusing a project directory passed where a run id goes
    (`ratchet status myproj`): DataError `run.bad_id` naming the commands that were meant."""
    from ratchet.core.errors import DataError
    from ratchet.ledger.rundir import RUN_ID_RE

    if run_id is not None and not RUN_ID_RE.match(run_id) and Path(run_id).is_dir():
        given_dir = "" if directory == Path(".") else f" (--dir is {directory})"
        raise DataError("run.bad_id", f"{run_id!r} is a directory, not a run id{given_dir}",
                        hint=f"RUN is a run id; the project goes in --dir: `ratchet runs --dir {run_id}` lists its "
                             f"runs, `ratchet {command} --dir {run_id}` shows its latest run")
    return run_id


def execute(command: str, as_json: bool, debug: bool, work: Callable[[], dict[str, Any]], render: Renderer) -> None:
    """Run one command's `work`, then render its result (human) or print the JSON envelope.

    RatchetError -> its exit code with code/message/hint; KeyboardInterrupt -> 130; anything else ->
    exit 1 ("internal error", the traceback only with --debug or RATCHET_DEBUG=1).
    """
    debug = debug or os.environ.get("RATCHET_DEBUG") == "1"
    try:
        result = work()
    except RatchetError as exc:
        _fail(command, as_json, debug, exc.to_json(), exc.exit_code)
    except KeyboardInterrupt:
        error = {"code": "interrupted", "message": "interrupted", "hint": None}
        _fail(command, as_json, debug, error, EXIT_INTERRUPTED)
    except Exception as exc:  # the last line of defence: no traceback for the user unless asked
        error = {
            "code": "internal",
            "message": f"internal error: {type(exc).__name__}: {exc}",
            "hint": "re-run with --debug and report the traceback",
        }
        _fail(command, as_json, debug, error, EXIT_INTERNAL)
    code = result.pop("_exit_code", 0)
    failure = result.pop("_error", None)  # a command whose result says why it failed (verify: exit 3)
    if as_json:
        envelope_error: dict[str, Any] | None = None if code == 0 else failure or {
            "code": "interrupted", "message": f"`ratchet {command}` was interrupted", "hint": result.get("resume")}
        print(json.dumps({"ok": code == 0, "command": command, "result": result, "error": envelope_error},
                         default=str))
    else:
        render(result)
    if code:
        raise typer.Exit(code)


def print_error(command: str, as_json: bool, error: dict[str, Any]) -> None:
    """Say `error` ({"code", "message", "hint"}) of `command`: the `--json` envelope on stdout, or
    `error (code): message` and `hint: ...` on stderr."""
    if as_json:
        print(json.dumps({"ok": False, "command": command, "result": None, "error": error}))
        return
    from rich.markup import escape

    err().print(f"[bold red]error[/] [dim]({escape(error['code'])})[/]: {escape(error['message'])}", soft_wrap=True)
    if error.get("hint"):
        err().print(f"[yellow]hint[/]: {escape(str(error['hint']))}", soft_wrap=True)


def _fail(command: str, as_json: bool, debug: bool, error: dict[str, Any], code: int) -> None:
    """`print_error` (the traceback first with `debug`), then exit `code` (typer.Exit)."""
    if debug:
        traceback.print_exc(file=sys.stderr)
    print_error(command, as_json, error)
    raise typer.Exit(code)


def project_path(directory: Path) -> Path:
    """`directory` (a project directory, or a ratchet.toml path) when it exists. Raises DataError
    `project.no_dir` (exit 2)."""
    return directory if directory.is_file() else existing_dir(directory)
