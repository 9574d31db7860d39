#!/usr/bin/env python3
"""ratchet-sys: talk to the Ratchet kernel from inside your workspace.

You run experiments through the kernel (it runs them on clean copies of your workspace's files in
scope, charged to the campaign's budget), then sleep: end your session, and you are woken with the
results. When your change is ready, submit it with a written report.

  ratchet-sys launch --name NAME --minutes M [--array N --concurrency K] [--artifact PATH]... \\
                     [--why TEXT] -- COMMAND...
  ratchet-sys sleep [--note TEXT]          then end your session: you are woken with the results
                                            (with no launch queued: a checkpoint, woken at once)
  ratchet-sys submit --report-file FILE     (or --report TEXT) your workspace becomes the candidate
  ratchet-sys queue                         this attempt's jobs: command, why, state, value
  ratchet-sys launches                      the run's launches so far, earlier attempts' too
  ratchet-sys history | budget              earlier attempts and their verdicts, what is left

Every command has --help. This program uses only the Python standard library; the kernel checks
every request again (its limits are the truth; these are repeated here for fast feedback).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys

# Copies of the kernel's limits and channel names (ratchet.agents.base, ratchet.agents.command.limits,
# .requests, .agent), which this stdlib-only file cannot import; a test holds each copy equal to the kernel's.
MAX_LAUNCHES_PER_SLEEP = 8
MAX_ARRAY = 16
MAX_COMMAND_CHARS = 2000
MAX_ARTIFACTS = 8
MAX_WHY_CHARS = 200
MAX_REPORT_CHARS = 8000
MAX_SUMMARY_CHARS = 200
MAX_NOTE_CHARS = 2000
MAX_LAUNCH_MINUTES = 240.0
MAX_NAME_CHARS = 64
NAME_RE = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_NAME_CHARS}}}")
REQUESTS_DIR = "requests"
SLEEP_MARKER = "sleep.json"
SUBMIT_MARKER = "submit.json"
STATE_DIR = "state"

CHANNEL = os.path.dirname(os.path.abspath(__file__))
REQUESTS = os.path.join(CHANNEL, REQUESTS_DIR)
STATE = os.path.join(CHANNEL, STATE_DIR)


def fail(message: str) -> None:
    """Print `message` on stderr and exit 2 (nothing was written)."""
    print(f"ratchet-sys: {message}", file=sys.stderr)
    sys.exit(2)


def write_request(path: str, payload: dict) -> None:
    """Write `payload` as JSON at `path` through a fresh temporary name and a rename."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(payload, f)
    os.replace(tmp, path)


def pending_launches() -> list[str]:
    """Launch request files waiting for the next sleep."""
    try:
        return sorted(n for n in os.listdir(REQUESTS) if n.endswith(".json"))
    except OSError:
        return []


def cmd_launch(args: argparse.Namespace) -> None:
    """`ratchet-sys launch`: check the request against the channel's limits (exit 2 with the reason
    when it breaks one; arrays and minutes are clamped) and queue it as `requests/<n>-<name>.json`.
    The kernel re-validates every request: these checks only give the agent fast feedback."""
    command = " ".join(args.command).strip()
    if args.command and args.command[0] == "--":
        command = " ".join(args.command[1:]).strip()
    if not NAME_RE.fullmatch(args.name):
        fail(f"--name: 1 to {MAX_NAME_CHARS} characters of A-Z a-z 0-9 _ . -")
    if not command or len(command) > MAX_COMMAND_CHARS:
        fail(f"the command must have 1 to {MAX_COMMAND_CHARS} characters")
    if len(args.artifact) > MAX_ARTIFACTS:
        fail(f"at most {MAX_ARTIFACTS} --artifact per launch")
    for path in args.artifact:
        if path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
            fail(f"--artifact {path!r}: a relative path inside the job's copy of the workspace")
    args.why = " ".join(args.why.split())  # one line, as the kernel folds it again
    if len(args.why) > MAX_WHY_CHARS:
        fail(f"--why: at most {MAX_WHY_CHARS} characters")
    if not 0 < args.minutes:
        fail("--minutes must be > 0")
    queued = len(pending_launches())
    if queued >= MAX_LAUNCHES_PER_SLEEP:
        fail(f"at most {MAX_LAUNCHES_PER_SLEEP} launches per sleep: sleep first")
    array = max(1, min(args.array, MAX_ARRAY))
    payload = {"kind": "launch", "name": args.name, "command": command,
               "minutes": min(float(args.minutes), MAX_LAUNCH_MINUTES), "artifacts": args.artifact,
               "array": array, "concurrency": max(1, min(args.concurrency or array, array)), "why": args.why}
    write_request(os.path.join(REQUESTS, f"{queued + 1:04d}-{args.name}.json"), payload)
    print(f"queued launch {args.name} ({array} job(s), {payload['minutes']:g} min each). "
          "Launch more, or run `ratchet-sys sleep` and end your session to run them.")


def cmd_sleep(args: argparse.Namespace) -> None:
    """`ratchet-sys sleep`: write `sleep.json` (the note, at most MAX_NOTE_CHARS characters); the
    agent then ends its session and the kernel runs the queued launches (none queued: a checkpoint,
    the agent is woken at once with its note; it costs one of the attempt's sleeps all the same)."""
    if len(args.note) > MAX_NOTE_CHARS:
        fail(f"--note: at most {MAX_NOTE_CHARS} characters")
    write_request(os.path.join(CHANNEL, SLEEP_MARKER), {"kind": "sleep", "note": args.note})
    queued = len(pending_launches())
    then = "the results" if queued else "your note (a checkpoint: nothing runs)"
    print(f"sleeping with {queued} launch(es) queued. End your session now (exit): "
          f"you will be started again with {then} in a new message.")


def cmd_submit(args: argparse.Namespace) -> None:
    """`ratchet-sys submit`: write `submit.json` with the report (required, at most
    MAX_REPORT_CHARS characters, from --report or --report-file) and a one-line summary."""
    report = args.report
    if args.report_file:
        with open(args.report_file, encoding="utf-8") as f:
            report = f.read()
    if not report or not report.strip():
        fail("a report is required (--report TEXT or --report-file FILE)")
    if len(report) > MAX_REPORT_CHARS:
        fail(f"the report has {len(report)} characters; at most {MAX_REPORT_CHARS}")
    if len(args.summary) > MAX_SUMMARY_CHARS:
        fail(f"--summary: at most {MAX_SUMMARY_CHARS} characters")
    write_request(os.path.join(CHANNEL, SUBMIT_MARKER),
                  {"kind": "submit", "report": report, "summary": args.summary})
    print("submitted: your workspace's files in scope are the candidate. End your session now (exit).")


def show_state(name: str) -> None:
    """Print `state/<name>.json`, which the kernel writes at each wake (queue, launches, history,
    budget; the queue also every few seconds while you run)."""
    try:
        with open(os.path.join(STATE, f"{name}.json"), encoding="utf-8") as f:
            print(json.dumps(json.load(f), indent=2))
    except (OSError, ValueError):
        print(f"(no {name} information from the kernel yet)")


def cmd_queue(args: argparse.Namespace) -> None:
    """`ratchet-sys queue`: the launches waiting for the next sleep, then every job of this
    attempt's launches (launch, index, command, why, state: queued, running, succeeded, failed,
    timeout, ...; value)."""
    print("launches queued for the next sleep:")
    for name in pending_launches():
        print(f"  {name}")
    print("jobs of this attempt's launches:")
    show_state("queue")


def parser() -> argparse.ArgumentParser:
    """The `ratchet-sys` command line: launch, sleep, submit, queue, launches, history, budget."""
    top = argparse.ArgumentParser(prog="ratchet-sys", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("launch", help="queue an experiment (run when you sleep)",
                       description="Queue COMMAND (a shell command) to run in a clean copy of your "
                       "workspace's files in scope. With --array N it runs N times with SWEEP_INDEX=0..N-1.")
    p.add_argument("--name", required=True, help="a new name in this attempt; results go to results/NAME/")
    p.add_argument("--minutes", type=float, default=10.0,
                   help=f"time limit per job; a job past it ends `timeout` (at most {MAX_LAUNCH_MINUTES:g})")
    p.add_argument("--array", type=int, default=1, help=f"run N jobs, SWEEP_INDEX=0..N-1 (at most {MAX_ARRAY})")
    p.add_argument("--concurrency", type=int, default=None, help="at most K jobs of the array at once")
    p.add_argument("--artifact", action="append", default=[], help="a file the job writes, copied back "
                   f"to results/NAME/<i>/ (repeatable, at most {MAX_ARTIFACTS})")
    p.add_argument("--why", default="", help=f"what this tests, folded to one line and echoed with the results "
                   f"(at most {MAX_WHY_CHARS} characters)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the shell command, after --")
    p.set_defaults(func=cmd_launch)
    p = sub.add_parser("sleep", help="end this leg; wake me with the results",
                       description="Run the queued launches; end your session after this command. With no "
                       "launch queued it is a checkpoint: you are woken at once with your note (one of your sleeps).")
    p.add_argument("--note", default="", help="a note to yourself, shown when you wake")
    p.set_defaults(func=cmd_sleep)
    p = sub.add_parser("submit", help="submit the workspace as the candidate, with a report",
                       description="Your workspace's files under the allowed paths become the candidate. "
                       "The report says the hypothesis, what ran, what it measured, why it should be promoted.")
    p.add_argument("--report", default="", help="the report text")
    p.add_argument("--report-file", default="", help="a file holding the report")
    p.add_argument("--summary", default="", help="one line for tables")
    p.set_defaults(func=cmd_submit)
    for name, text in (("queue", "launches queued, and this attempt's jobs with their why and state"),
                       ("launches", "the run's launches so far (this and earlier attempts): name, jobs, states"),
                       ("history", "earlier attempts and their verdicts"),
                       ("budget", "what this attempt and the campaign may still spend")):
        p = sub.add_parser(name, help=text, description=f"Show {text}.")
        p.set_defaults(func=cmd_queue if name == "queue" else (lambda a, n=name: show_state(n)))
    return top


def main(argv: list[str] | None = None) -> None:
    """Run one `ratchet-sys` command (`argv`: its arguments; default sys.argv[1:])."""
    args = parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
