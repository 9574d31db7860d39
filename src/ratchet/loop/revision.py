"""Submit and revise: after a verdict that did not promote, the session that submitted the change
may be woken with the verdict and submit again; that revision is the next attempt
(`attempt.started` data.revises), judged like any other at that attempt's level.

`revisable` says whether a judged attempt may be revised at all; `author_verdict` builds what its
author is shown (agents.base.Verdict): on an examples target nothing measured on val, as
`history.past_attempts` rules; failures are the stderr tails of a benchmark's failed trial and
confirm jobs, or the dev examples an examples candidate did not pass.

Pure: a RunState (and a reader of a job's stderr) in, values out.
"""

from __future__ import annotations

from collections.abc import Callable

from ratchet.agents.base import Verdict
from ratchet.core.state import AttemptState, RunState
from ratchet.loop.history import dev_mean, failed_examples, past_attempts
from ratchet.present.guardrail_text import guardrail_lines

MAX_FAILED_JOBS_SHOWN = 5
"""Failed jobs whose stderr an author is shown (the first in record order)."""

STDERR_LINES_SHOWN = 8
"""Last lines of each failed job's stderr shown."""

MAX_FAILED_EXAMPLES_SHOWN = 20
"""Dev examples an examples candidate did not pass, listed by id and status."""


def revisable(a: AttemptState | None) -> bool:
    """Whether attempt `a` ended in a verdict that did not promote its candidate (so its author may
    revise it): submitted, judged, not given up, not promoted."""
    return a is not None and a.gave_up is None and a.verdict is not None and not a.promoted


def submission_number(state: RunState, attempt: int) -> int:
    """Which submission of its session attempt `attempt` was: 1 plus the revisions it continues
    (following `AttemptState.revises` back to the session's first attempt)."""
    count, seen = 1, {attempt}
    a = state.attempt(attempt)
    while a is not None and a.revises is not None and a.revises not in seen:
        seen.add(a.revises)
        count += 1
        a = state.attempt(a.revises)
    return count


def author_verdict(state: RunState, attempt: int, examples: bool, stderr_of: Callable[[str], str]) -> Verdict:
    """The verdict on `attempt` as its author may read it (see agents.base.Verdict). `examples`: the
    run's target is an examples target; `stderr_of(job_id)`: the stderr tail a finished job left
    (read only for a benchmark's failed trial and confirm jobs). Raises KeyError when `attempt` was
    never judged."""
    shown = {p.attempt: p for p in past_attempts(state, examples)}[attempt]
    a = state.attempt(attempt)
    assert a is not None
    if examples:
        rate = dev_mean(state, attempt)
        detail = [f"dev pass rate {'not measured' if rate is None else f'{rate:.6g}'} (val figures are not shown)"]
        failures = [f"dev example {example_id}: {status}"
                    for example_id, status in failed_examples(state.finished_jobs.values(), attempt, "dev")]
        failures = failures[:MAX_FAILED_EXAMPLES_SHOWN]
    else:
        detail = _figures(state, a)
        failures = _failed_jobs(state, attempt, stderr_of)
    return Verdict(attempt=attempt, tree=a.tree, verdict=shown.verdict or "-", reason=shown.reason or "-",
                   detail=tuple(detail), failures=tuple(failures), submission=submission_number(state, attempt))


def _figures(state: RunState, a: AttemptState) -> list[str]:
    """A benchmark attempt's figures, one per line: the reason's text, the estimate with its interval,
    p-value and units, the means (the champion's as last measured), and each guardrail's change,
    bound and allowance (present.guardrail_text)."""
    lines = [a.reason_text] if a.reason_text else []
    if a.estimate is not None:
        interval = f", interval [{a.interval[0]:.6g}, {a.interval[1]:.6g}]" if a.interval else ""
        p = f", p = {a.p_value:.3g}" if a.p_value is not None else ""
        lines.append(f"estimated gain {a.estimate:+.6g}{interval}{p} over {a.units or 0} paired units")
    if a.candidate_mean is not None:
        lines.append(f"candidate mean {a.candidate_mean:.6g}")
    if state.champion_mean is not None:
        lines.append(f"champion mean {state.champion_mean:.6g}")
    lines += guardrail_lines(a.guardrails)
    if a.confirm is not None:
        lines.append(f"confirmation: {a.confirm.verdict} ({a.confirm.reason})")
        lines += guardrail_lines(a.confirm.guardrails, "confirmation ")
    return lines


def _failed_jobs(state: RunState, attempt: int, stderr_of: Callable[[str], str]) -> list[str]:
    """`job_id (state): stderr line` for the last lines of each failed trial or confirm job of
    `attempt` (at most MAX_FAILED_JOBS_SHOWN jobs)."""
    out: list[str] = []
    failed = [j for j in state.finished_jobs.values()
              if j.attempt == attempt and j.stage in ("trial", "confirm") and j.state != "ok"]
    for job in failed[:MAX_FAILED_JOBS_SHOWN]:
        tail = stderr_of(job.job_id).strip().splitlines()[-STDERR_LINES_SHOWN:]
        out += [f"{job.job_id} ({job.state}): {line}" for line in tail] or [f"{job.job_id} ({job.state}): {job.reason}"]
    return out
