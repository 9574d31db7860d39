"""`ratchet watch`: one frame of a run, built from its status result and its ledger's tail, drawn
with rich; live in a terminal (rich Live on the alternate screen) until `q` or Ctrl-C.

`build_frame` and `render_frame` are pure (plain values in; a dict, a rich renderable out).
`watch_loop` owns the terminal: it redraws when the ledger changed (or every FULL_REFRESH_S, so a
kernel that died shows as interrupted) and reads keys without blocking.
"""

from __future__ import annotations

import os
import re
import select
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ratchet.core.payloads import (
    AgentLaunched,
    AttemptStarted,
    JobFinished,
    JobStarted,
    Payload,
    TrialJudged,
    TrialPlanned,
)
from ratchet.present.render import BUDGETS, fmt_amount, fmt_interval, fmt_num, fmt_p
from ratchet.present.status import attempt_label

REFRESH_S = 1.0
"""How often the ledger's size and mtime are checked (and keys read), seconds."""

FULL_REFRESH_S = 5.0
"""A frame is re-read at least this often even when the ledger did not change, seconds."""

READ_SHARE_MAX = 0.25
"""At most this share of one CPU goes to reading frames: after a read that took t seconds, the next
waits at least t / READ_SHARE_MAX (a long run's frame costs more; its watcher must not slow it)."""

LAST_ATTEMPTS_SHOWN = 8
"""How many of the latest attempts the frame lists."""

NOTE_CHARS = 200
"""An agent's launch note is shown up to this many characters."""

QUIT_KEYS = frozenset("qQ")

_RETRY_ID = re.compile(r"-r[0-9]+$")  # a champion retry's job id (core.plan.retry_job)

T = TypeVar("T")


def build_frame(status: Mapping[str, Any], tail: Sequence[Payload], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The `ratchet watch --json` result.

    status: the `ratchet status` result; tail: the payloads of the ledger's events from the latest
    attempt.started on; facts: run.started's target_kind and direction. Keys: run_id, state,
    stop_reason, stop_budget, kernel_pid, champion, promotions, holdout, budgets (name, used,
    limit, share; share None when unlimited), forecast (see next_stop), attempts (the total),
    last_attempts (status rows), in_flight (status rows of the attempts started and not yet
    judged nor given up: with several workers, one per busy worker), current (see current_trial),
    launch (see latest_launch), ledger, warnings.
    """
    used, limits = status["budget"]["used"], status["budget"]["limits"]
    budgets = []
    for key, limit_key, label in BUDGETS:
        limit = limits.get(limit_key) or 0
        if key == "gpu_hours" and not limit and not used.get(key):
            continue
        budgets.append({"name": label, "used": used.get(key), "limit": limit or None,
                        "share": (used.get(key) or 0) / limit if limit else None})
    forecast = next_stop(used, limits)
    current = current_trial(tail, facts)
    if current is not None and status.get("state") != "running":
        current["jobs_running"] = 0  # a stopped or interrupted run's jobs were killed with it (or were never reaped)
    keys = ("run_id", "state", "stop_reason", "stop_budget", "kernel_pid", "champion", "promotions", "holdout")
    return {
        **{k: status.get(k) for k in keys},
        "budgets": budgets,
        "forecast": forecast,
        "attempts": len(status["attempts"]),
        "last_attempts": list(status["attempts"][-LAST_ATTEMPTS_SHOWN:]),
        "in_flight": [a for a in status["attempts"] if a.get("verdict") is None and a.get("reason") != "gave_up"]
        if status.get("state") == "running" else [],
        "current": current,
        "launch": latest_launch(tail),
        "ledger": status.get("ledger"),
        "warnings": list(status.get("warnings") or []),
    }


def next_stop(used: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any] | None:
    """Which limited budget runs out first if every further attempt costs what the attempts so far
    cost on average: {budget, attempts_left}, or None before the first attempt. An estimate for
    people: the kernel also reserves the holdout and starts a trial only when its worst case fits,
    so it may stop an attempt or two sooner."""
    done = used.get("attempts") or 0
    best: dict[str, Any] | None = None
    for key, limit_key, label in BUDGETS:
        limit = limits.get(limit_key) or 0
        spent = used.get(key) or 0
        if not limit or not done:
            continue
        per_attempt = 1 if key == "attempts" else spent / done
        if per_attempt <= 0:
            continue
        left = max(int((limit - spent) // per_attempt), 0)
        if best is None or left < best["attempts_left"]:
            best = {"budget": label, "attempts_left": left}
    return best


def current_trial(tail: Sequence[Payload], facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """The latest attempt and, when one is planned, its latest trial stage's progress:
    {attempt, stage, trial, looks, look (1-based, None for examples), jobs_total, jobs_done,
    jobs_running, trial_jobs (every look's), pairs (units with both variants measured), estimate
    (mean paired gain so far, direction-normalized; None for examples or before a pair), judged
    (its verdict, or None while it runs)}. A benchmark's jobs_total and jobs_done count the jobs
    first needed at the latest look begun, as `ratchet run`'s job bar does (an examples trial's:
    every look's jobs and the shards finished). Before the first attempt, the preflight:
    {attempt None, stage "preflight", jobs_total, jobs_done, jobs_running}. None when the tail holds
    no attempt, no plan and no preflight job."""
    attempt = next((e.attempt for e in tail if isinstance(e, AttemptStarted)), None)
    plans = [i for i, e in enumerate(tail) if isinstance(e, TrialPlanned)]
    if not plans and attempt is None:
        return _preflight(tail)
    if not plans:
        return {"attempt": attempt, "stage": None}
    plan = tail[plans[-1]]
    assert isinstance(plan, TrialPlanned)
    key = (plan.attempt, plan.stage)
    started: dict[str, int] = {}
    finished: dict[str, JobFinished] = {}
    verdict = None
    for e in tail[plans[-1] + 1:]:
        if isinstance(e, JobStarted) and (e.attempt, e.stage) == key:
            started[e.job_id] = e.unit
        elif isinstance(e, JobFinished) and (e.attempt, e.stage) == key:
            finished[e.job_id] = e
        elif isinstance(e, TrialJudged) and (e.attempt, e.stage) == key:
            verdict = e.verdict
    looks = list(plan.looks)
    pairs, estimate = _pairs(finished.values(), facts)
    look = None
    total, done = plan.jobs, len(finished)
    if facts.get("target_kind") != "examples" and looks:
        look = next((i + 1 for i, n in enumerate(looks) if pairs < n), len(looks))
        total, done = _look_jobs(looks, started, finished)
    return {"attempt": key[0], "stage": key[1], "trial": plan.trial, "looks": looks, "look": look,
            "jobs_total": total, "jobs_done": done, "jobs_running": len(set(started) - set(finished)),
            "trial_jobs": plan.jobs, "pairs": pairs, "estimate": estimate, "judged": verdict}


def _look_of(looks: Sequence[int], unit: int) -> int:
    """The 0-based look that first needs `unit` (core.plan: a unit's look is the first whose
    cumulative count exceeds its index)."""
    return next((i for i, n in enumerate(looks) if unit < n), len(looks) - 1)


def _look_jobs(looks: Sequence[int], started: Mapping[str, int], finished: Mapping[str, JobFinished]
               ) -> tuple[int, int]:
    """(jobs first needed at the latest look begun, those of them finished): two per unit, as the
    runner measures a look (`Plan.jobs_for_look`) and `ratchet run`'s bar counts; champion retries
    are left out (the run counts them apart)."""
    units = {job: unit for job, unit in started.items() if not _RETRY_ID.search(job)}
    units.update({job: d.unit for job, d in finished.items() if not _RETRY_ID.search(job)})
    current = max((_look_of(looks, unit) for unit in units.values()), default=0)
    total = 2 * (looks[current] - (looks[current - 1] if current else 0))
    done = sum(1 for job in finished if job in units and _look_of(looks, units[job]) == current)
    return total, done


def _preflight(tail: Sequence[Payload]) -> dict[str, Any] | None:
    """The preflight's progress from its job events, or None when none started."""
    started = {e.job_id for e in tail if isinstance(e, JobStarted) and e.stage == "preflight"}
    finished = {e.job_id for e in tail if isinstance(e, JobFinished) and e.stage == "preflight"}
    if not started | finished:
        return None
    return {"attempt": None, "stage": "preflight", "jobs_total": len(started | finished), "jobs_done": len(finished),
            "jobs_running": len(started - finished)}


def _pairs(finished: Iterable[JobFinished], facts: Mapping[str, Any]) -> tuple[int, float | None]:
    """(units with both variants measured ok, their mean paired gain) for a benchmark trial."""
    if facts.get("target_kind") == "examples":
        return 0, None
    sign = -1.0 if facts.get("direction") == "min" else 1.0
    by_unit: dict[int, dict[str, float]] = {}
    for d in finished:
        if d.state == "ok" and d.value is not None:
            by_unit.setdefault(d.unit, {})[d.variant] = float(d.value)
    gains = [sign * (v["candidate"] - v["champion"]) for v in by_unit.values() if len(v) == 2 and
             "candidate" in v and "champion" in v]
    return len(gains), (sum(gains) / len(gains) if gains else None)


def latest_launch(tail: Sequence[Payload]) -> dict[str, Any] | None:
    """The agent's latest launch in the tail: {attempt, launch, jobs, jobs_done, note}, or None."""
    launches = [e for e in tail if isinstance(e, AgentLaunched)]
    if not launches:
        return None
    d = launches[-1]
    done = {e.job_id for e in tail if isinstance(e, JobFinished)}
    return {"attempt": d.attempt, "launch": d.launch, "jobs": len(d.jobs),
            "jobs_done": sum(job in done for job in d.jobs), "note": d.note[:NOTE_CHARS]}


# -- drawing -------------------------------------------------------------------------------------

_VERDICT_STYLE = {"accepted": "green", "rejected": "red", "inconclusive": "yellow"}


def render_frame(frame: Mapping[str, Any]) -> RenderableType:
    """A rich renderable of one frame (the `build_frame` dict, or {run_id, error})."""
    if frame.get("error"):
        e = frame["error"]
        return Text(f"run {frame.get('run_id')}: cannot read the ledger: {e['message']}\n{e.get('hint') or ''}",
                    style="red")
    parts: list[RenderableType] = [_title(frame), _champion(frame)]
    parts += [_current(frame["current"], frame["state"] == "running")] if frame.get("current") else []
    parts += [_launch(frame["launch"])] if frame.get("launch") else []
    if frame.get("in_flight"):
        shown = [attempt_label(a) + (f" {a['summary'][:30]}" if a.get("summary") else "") for a in frame["in_flight"]]
        parts += [Text("in flight: " + ", ".join(shown))]
    parts += [_budgets(frame["budgets"])]
    if frame.get("forecast") and frame["state"] == "running":
        f = frame["forecast"]
        parts += [Text(f"next stop: {f['budget']} in about {f['attempts_left']} attempt(s) "
                       "(at the mean cost per attempt so far)", style="dim")]
    parts += [_attempts(frame)]
    parts += [Text(f"warning: {w}", style="yellow") for w in frame.get("warnings", [])]
    return Group(*parts)


def _title(frame: Mapping[str, Any]) -> Text:
    state = frame["state"]
    colour = {"running": "green", "stopped": "blue"}.get(state, "yellow")
    out = Text("ratchet watch  ", style="bold")
    out.append(f"run {frame['run_id']}  ")
    out.append(state, style=f"bold {colour}")
    if frame.get("stop_reason"):
        budget = f": {frame['stop_budget']}" if frame.get("stop_budget") else ""
        out.append(f" ({frame['stop_reason']}{budget})")
    if frame.get("kernel_pid"):
        out.append(f"  kernel pid {frame['kernel_pid']}", style="dim")
    ledger = frame.get("ledger") or {}
    if ledger.get("events") is not None:
        out.append(f"  {ledger['events']:,} events", style="dim")
    return out


def _champion(frame: Mapping[str, Any]) -> Text:
    c = frame["champion"]
    out = Text("champion  ", style="bold")
    who = "baseline" if c.get("attempt") is None else f"attempt {c['attempt']}"
    out.append(f"{who}  commit {str(c.get('commit') or '-')[:10]}")
    if c.get("estimate") is not None:
        out.append(f"  gain {fmt_num(c['estimate'])} {fmt_interval(c.get('interval'))}")
    out.append(f"  promotions {frame['promotions']}")
    h = frame.get("holdout")
    if h:
        out.append(f"\nholdout   {fmt_num(h.get('estimate'))} {fmt_interval(h.get('interval'))} "
                   f"p {fmt_p(h.get('p_value'))} on {h.get('units')} units ({h.get('verdict')})")
    return out


def _current(cur: Mapping[str, Any], running: bool) -> Text:
    out = Text("now       " if running else "last      ", style="bold")
    if cur.get("stage") is None:
        out.append(f"attempt {cur['attempt']}: the agent is working")
        return out
    who = {"holdout": "holdout", "preflight": "preflight: the baseline measured once"}.get(
        cur["stage"], f"attempt {cur['attempt']} {cur['stage']}")
    out.append(who)
    if cur.get("look") is not None:
        units = cur["looks"][cur["look"] - 1]
        out.append(f"  look {cur['look']} of {len(cur['looks'])} ({cur['pairs']}/{units} units)")
    of_look = " of this look" if cur.get("look") is not None and len(cur["looks"]) > 1 else ""
    out.append(f"  jobs{of_look} {cur['jobs_done']}/{cur.get('jobs_total') or '?'}")
    if cur.get("jobs_running"):
        out.append(f" ({cur['jobs_running']} running)")
    if cur.get("estimate") is not None:
        out.append(f"  estimate so far {cur['estimate']:+.4g}")
    if cur.get("judged"):
        out.append(f"  judged: {cur['judged']}", style=_VERDICT_STYLE.get(cur["judged"], ""))
    return out


def _launch(launch: Mapping[str, Any]) -> Text:
    out = Text("launch    ", style="bold")
    number = f" launch {launch['launch']}" if launch.get("launch") is not None else ""
    out.append(f"attempt {launch['attempt']}{number}: {launch['jobs_done']}/{launch['jobs']} jobs done")
    if launch.get("note"):
        out.append(f"  “{launch['note']}”", style="italic")
    return out


def _budgets(budgets: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 1), title="budgets", title_justify="left",
                  title_style="bold")
    table.add_column("budget", no_wrap=True)
    table.add_column("bar", width=24)
    table.add_column("used", no_wrap=True, justify="right")
    for b in budgets:
        used = b["used"] or 0
        shown = fmt_amount(used)
        if b["limit"]:
            bar: RenderableType = ProgressBar(total=float(b["limit"]), completed=float(min(used, b["limit"])),
                                              width=24)
            shown += f" / {b['limit']:,} ({100 * b['share']:.0f}%)"
        else:
            bar = Text("unlimited", style="dim")
        table.add_row(b["name"], bar, shown)
    return table


def _attempts(frame: Mapping[str, Any]) -> Table:
    shown = frame["last_attempts"]
    total = frame["attempts"]
    table = Table(title=f"last {len(shown)} of {total} attempt{'' if total == 1 else 's'}", title_justify="left",
                  title_style="bold", padding=(0, 1), box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("summary", min_width=8, ratio=1, overflow="ellipsis", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("reason", max_width=18, overflow="ellipsis", no_wrap=True)
    for name in ("effect", "p"):  # intervals: `ratchet status`; 80 columns have no room for them
        table.add_column(name, justify="right", no_wrap=True)
    guarded = any(a.get("guardrails") for a in shown)
    if guarded:
        table.add_column("guardrails (change / bound vs allowance)", overflow="ellipsis", no_wrap=True)
    for a in shown:
        verdict = a.get("verdict") or "-"
        cells: list[RenderableType] = [attempt_label(a), Text((a.get("summary") or "")[:60]),
                 Text(verdict, style=_VERDICT_STYLE.get(verdict, "")), Text(str(a.get("reason") or "-")),
                 fmt_num(a.get("estimate")), fmt_p(a.get("p_value"))]
        if guarded:
            cells.append(Text("; ".join(_guardrail_cell(g) for g in a.get("guardrails") or ())))
        table.add_row(*cells)
    return table


def _guardrail_cell(g: Mapping[str, Any]) -> str:
    """`accuracy -0.065 / -0.073 vs -0.01 broken`: a guardrail's change, its lower bound, the allowance
    and its status, for the attempts table."""
    allowance = g.get("allowance")
    return (f"{g.get('name')} {fmt_num(g.get('estimate'), 3)} / {fmt_num(g.get('bound'), 3)} vs "
            f"-{allowance:g} {g.get('status')}" if isinstance(allowance, int | float) else str(g.get("name")))


# -- the terminal --------------------------------------------------------------------------------


class _Keys:
    """Single key presses from stdin without waiting for Enter (cbreak mode while inside the
    `with`; the terminal is restored on exit). Not a terminal: `wait` only sleeps."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
        self.saved: Any = None

    def __enter__(self) -> _Keys:
        if self.fd is not None:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None and self.fd is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def wait(self, seconds: float) -> str:
        """Wait up to `seconds` for a key; returns it, or "" when none was pressed."""
        if self.fd is None:
            time.sleep(seconds)
            return ""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        return os.read(self.fd, 1).decode("utf-8", "replace") if ready else ""


def wait_loop(find: Callable[[], T | None], message: str, console: Console, wait_s: float) -> tuple[T | None, bool]:
    """Say `message` on `console`, then call `find` every REFRESH_S until it returns something or
    `wait_s` seconds passed; `q` or Ctrl-C leave. Returns (what `find` returned, or None on time
    out or leave; whether the user left)."""
    console.print(Text(f"{message}; waiting up to {wait_s:g} s (q or Ctrl-C to leave)", style="yellow"))
    deadline = time.monotonic() + wait_s
    try:
        with _Keys() as keys:
            while (left := deadline - time.monotonic()) > 0:
                if keys.wait(min(REFRESH_S, left)) in QUIT_KEYS:
                    return None, True
                found = find()
                if found is not None:
                    return found, False
    except KeyboardInterrupt:
        return None, True
    return None, False


def watch_loop(read: Callable[[], dict[str, Any]], changed: Callable[[], Hashable], console: Console
               ) -> dict[str, Any]:
    """Draw `read()` live on `console`, re-reading when `changed()` returns something new or
    FULL_REFRESH_S passed (and never sooner than READ_SHARE_MAX allows), until `q` or Ctrl-C (both
    end it normally). Returns the last frame ({} when left before the first one)."""
    hint = Text("q or Ctrl-C to leave", style="dim")
    frame: dict[str, Any] = {}
    try:
        began, mark = time.monotonic(), changed()  # before the read: a change during it is seen next time
        frame = read()
        last_read = time.monotonic()
        gap = (last_read - began) / READ_SHARE_MAX
        with _Keys() as keys, Live(Group(render_frame(frame), hint), console=console, screen=True,
                                   auto_refresh=False) as live:
            while keys.wait(REFRESH_S) not in QUIT_KEYS:
                now, since = changed(), time.monotonic() - last_read
                if since < gap or (now == mark and since < FULL_REFRESH_S):
                    continue
                began = time.monotonic()
                frame, mark = read(), now
                last_read = time.monotonic()
                gap = (last_read - began) / READ_SHARE_MAX
                live.update(Group(render_frame(frame), hint), refresh=True)
    except KeyboardInterrupt:
        pass
    return frame
