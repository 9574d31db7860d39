"""Live progress of a campaign: attempt n/N, the champion, budget used, the current trial's jobs.

`RichUI` draws for people (on stderr, so stdout stays clean for `--json`), and prints one plain line
per look when stderr is not a terminal (where no bar shows); `LogUI` prints plain lines to stderr,
one per look among them. The campaign only calls the `CampaignUI` methods.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ratchet.core.payloads import TrialJudged, given
from ratchet.core.state import RunState
from ratchet.present.guardrail_text import guardrail_lines
from ratchet.present.render import fmt_interval, fmt_level, fmt_num, fmt_p, means_text


@dataclass(frozen=True)
class LookEnded:
    """One look of a plan measured: attempt (0: the holdout), stage, look (1-based) of `looks`, the
    look's jobs that ended with a result (`done`) of its `jobs`, those `skipped` after a candidate
    failure, and the seconds since the stage began."""

    attempt: int
    stage: str
    look: int
    looks: int
    done: int
    jobs: int
    skipped: int
    elapsed_s: float


def look_line(e: LookEnded) -> str:
    """`attempt 3 trial: look 1 of 3 done: 20/20 jobs, 45s elapsed` (the holdout named as such)."""
    who = "holdout" if e.stage == "holdout" else f"attempt {e.attempt} {e.stage}"
    skipped = f", {e.skipped} skipped (the candidate failed)" if e.skipped else ""
    return f"{who}: look {e.look} of {e.looks} done: {e.done}/{e.jobs} jobs{skipped}, {e.elapsed_s:.0f}s elapsed"


class CampaignUI(Protocol):
    """What the campaign reports as it goes."""

    def attempt_started(self, attempt: int, max_attempts: int, state: RunState) -> None: ...

    def jobs(self, done: int, total: int) -> None: ...

    def judged(self, attempt: int, stage: str, data: TrialJudged) -> None: ...

    def look_ended(self, event: LookEnded) -> None: ...

    def promoted(self, attempt: int, commit: str, estimate: float | None, interval: Any) -> None: ...

    def note(self, text: str) -> None: ...

    def stopped(self, reason: str, budget: str | None, detail: str | None = None) -> None: ...


class SerialUI:
    """A CampaignUI called from several workers' threads (`agent.workers`): each call is made under
    one lock, so lines (each naming its attempt) never interleave mid-line and a progress bar is
    redrawn by one thread at a time."""

    def __init__(self, inner: CampaignUI):
        self.inner = inner
        self._lock = threading.RLock()

    def attempt_started(self, attempt: int, max_attempts: int, state: RunState) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.attempt_started(attempt, max_attempts, state)

    def jobs(self, done: int, total: int) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.jobs(done, total)

    def judged(self, attempt: int, stage: str, data: TrialJudged) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.judged(attempt, stage, data)

    def look_ended(self, event: LookEnded) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.look_ended(event)

    def promoted(self, attempt: int, commit: str, estimate: float | None, interval: Any) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.promoted(attempt, commit, estimate, interval)

    def note(self, text: str) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.note(text)

    def stopped(self, reason: str, budget: str | None, detail: str | None = None) -> None:
        """See CampaignUI."""
        with self._lock:
            self.inner.stopped(reason, budget, detail)


REASON_INDENT = "    "
"""Indent of the lines under a verdict line that say why (a failure's stderr lines, crash counts)."""


def _judged_line(attempt: int, stage: str, d: TrialJudged) -> str:
    """`attempt 3 trial: accepted (significant_gain) estimate 2.79 (champion -8.9 -> candidate -6.1)
    bound ...`: the paired gain, then each side's raw mean (the holdout's sides: baseline and
    champion), the bound, the interval, p and the level the stage was tested at."""
    who = "holdout" if stage == "holdout" else f"attempt {attempt} {stage}"
    kind = P_KIND_LABELS.get(d.p_value_kind or "", "")
    bound = f" bound {fmt_num(d.bound)}" if d.bound is not None else ""
    names = ("baseline", "champion") if stage == "holdout" else ("champion", "candidate")
    means = means_text(given(d.champion_mean), given(d.candidate_mean), names)
    return (f"{who}: {d.verdict} ({d.reason}) estimate {fmt_num(d.estimate)}"
            + (f" ({means})" if means else "") + f"{bound} "
            f"(95% {fmt_interval(d.interval)}, descriptive) p {fmt_p(d.p_value)}{kind} "
            f"level {fmt_level(d.level, d.p_value)} units {d.units}")


P_KIND_LABELS = {"exact": " (exact)", "bound": " (bound)", "monte_carlo": " (Monte Carlo)"}
"""How each p-value was computed, said next to it (core.vocab.PValueKind)."""


RESTATED_REASONS = ("futility", "not_significant")
"""Reasons whose text's first sentence restates the verdict line (estimate, look, p): only what
follows it (how many examples crashed) is printed under the line."""


def _why_lines(d: TrialJudged) -> str | None:
    """The verdict's reason text, indented, under a verdict that is not an acceptance (why it was
    rejected or inconclusive: a failure's last stderr lines, how many examples crashed); None for
    an acceptance or when nothing is left to say."""
    text = (d.reason_text or "").strip()
    if d.verdict == "accepted":
        return None
    if d.reason in RESTATED_REASONS:
        text = text.split(". ", 1)[1] if ". " in text else ""  # the gate's sentence ends at the first ". "
    if not text:
        return None
    return "\n".join(REASON_INDENT + line for line in text.splitlines())


def stop_line(reason: str, budget: str | None, detail: str | None = None) -> str:
    """`stopped: <reason> (<budget>)`, then the stop's detail (a budget's arithmetic) indented."""
    line = f"stopped: {reason}" + (f" ({budget})" if budget else "")
    return line + (f"\n{REASON_INDENT}{detail}" if detail else "")


def _attempt_line(attempt: int, max_attempts: int, state: RunState) -> str:
    used = state.budget_used
    champ = state.champion
    who = "baseline" if champ.attempt is None else f"attempt {champ.attempt}"
    mean = f"mean {fmt_num(state.champion_mean)}" if state.champion_mean is not None else ""
    gain = f"+{fmt_num(champ.estimate)} {fmt_interval(champ.interval)}" if champ.estimate is not None else ""
    return (f"attempt {attempt}/{max_attempts} | champion: {who}"
            + (f" ({', '.join(part for part in (mean, gain) if part)})" if mean or gain else "")
            + f" | promotions {state.promotions} | job-units {used.evaluations} | wall {used.wall_s:.0f}s")


class LogUI:
    """Plain lines on stderr (for `--json` runs and logs)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False)

    def attempt_started(self, attempt: int, max_attempts: int, state: RunState) -> None:
        """One line per attempt."""
        self.console.print(_attempt_line(attempt, max_attempts, state), markup=False)

    def jobs(self, done: int, total: int) -> None:
        """Job progress is not logged line by line."""

    def look_ended(self, event: LookEnded) -> None:
        """One line per look (a log, unlike a terminal, shows no bar)."""
        self.console.print(look_line(event), markup=False)

    def judged(self, attempt: int, stage: str, data: TrialJudged) -> None:
        """One line per verdict, then why when it is not an acceptance."""
        self.console.print(_judged_line(attempt, stage, data), markup=False)
        for line in guardrail_lines(given(data.guardrails), REASON_INDENT):
            self.console.print(line, markup=False)
        why = _why_lines(data)
        if why:
            self.console.print(why, markup=False)

    def promoted(self, attempt: int, commit: str, estimate: float | None, interval: Any) -> None:
        """One line per promotion."""
        line = f"promoted attempt {attempt}: {commit[:10]} gain {fmt_num(estimate)} {fmt_interval(interval)}"
        self.console.print(line,
                           markup=False)

    def note(self, text: str) -> None:
        """A free-form line."""
        self.console.print(text, markup=False)

    def stopped(self, reason: str, budget: str | None, detail: str | None = None) -> None:
        """The stop reason, and its detail (a budget stop's arithmetic) on the next line."""
        self.console.print(stop_line(reason, budget, detail), markup=False)


class RichUI(LogUI):
    """LogUI plus a live progress bar of the current trial's jobs."""

    def __init__(self, console: Console | None = None):
        super().__init__(console)
        self.progress = Progress(
            TextColumn("[cyan]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console, transient=True,
        )
        self.task: Any = None

    def jobs(self, done: int, total: int) -> None:
        """Advance (or start) the jobs bar."""
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task("jobs", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def look_ended(self, event: LookEnded) -> None:
        """The bar shows a terminal the jobs; outside one (stderr piped to a log), one line per look."""
        if not self.console.is_terminal:
            super().look_ended(event)

    def _end_bar(self) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
            self.progress.stop()
            self.task = None

    def attempt_started(self, attempt: int, max_attempts: int, state: RunState) -> None:
        """A bold line per attempt."""
        self._end_bar()
        self.console.print(f"[bold]{_attempt_line(attempt, max_attempts, state)}[/]")

    def judged(self, attempt: int, stage: str, data: TrialJudged) -> None:
        """A coloured verdict line."""
        self._end_bar()
        colour = {"accepted": "green", "rejected": "red"}.get(data.verdict, "yellow")
        self.console.print(f"[{colour}]{escape(_judged_line(attempt, stage, data))}[/]", markup=True)
        for line in guardrail_lines(given(data.guardrails), REASON_INDENT):
            self.console.print(line, markup=False)
        why = _why_lines(data)
        if why:
            self.console.print(why, markup=False, style="dim")

    def note(self, text: str) -> None:
        """A free-form line."""
        self._end_bar()
        super().note(text)

    def stopped(self, reason: str, budget: str | None, detail: str | None = None) -> None:
        """The stop reason and its detail, after the bar is gone."""
        self._end_bar()
        super().stopped(reason, budget, detail)
