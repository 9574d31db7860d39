"""What a report shows, gathered once: the status result, the contract's sections, the promotions,
the final split pass rates, the budget over attempts, and each attempt's report and diff.

Pure: `ReportData` is filled by the caller (commands/runs.py reads the ledger, blobs and git);
`budget_timeline` and `champion_trees` derive values from events already read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ratchet.core.events import Event
from ratchet.core.payloads import AttemptStarted, ChampionPromoted, JobFinished
from ratchet.core.state import parse_ts

MAX_REPORT_CHARS = 8_000
"""An attempt's report is shown up to this many characters (the command agent's own limit)."""

MAX_DIFF_CHARS = 20_000
"""An attempt's diff is shown up to this many characters; the rest is cut with a note."""


@dataclass(frozen=True)
class AttemptDetail:
    """What an attempt submitted: its report text (None when it submitted none) and its diff
    against the champion it was measured against (None with `diff_note` saying why); a command
    agent's legs (`legs.leg_views`, () for other agents)."""

    report: str | None = None
    diff: str | None = None
    diff_note: str | None = None
    legs: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ReportData:
    """Everything the HTML report renders. `status`: the `ratchet status` result; `gate`, `target`:
    the contract's sections as dicts; `promotions`: champion.promoted payloads in order; `splits`: an
    examples target's final pass rates per split (with `per_check`), else None; `timeline`:
    budget_timeline rows; `details`: attempt number -> AttemptDetail; `events`: ledger events read;
    `warnings`: what the reader must know before trusting a verdict (text.skew_warnings);
    `search_space`: a search run's agent.search.space (parameter -> spec dict), else None;
    `examples`: an examples run's per-example rows of its final measurement
    (commands.report_extras.example_rows), else ()."""

    status: Mapping[str, Any]
    campaign: str
    gate: Mapping[str, Any]
    target: Mapping[str, Any]
    promotions: Sequence[ChampionPromoted] = ()
    splits: Mapping[str, Any] | None = None
    timeline: Sequence[Mapping[str, Any]] = ()
    details: Mapping[int, AttemptDetail] = field(default_factory=dict)
    events: int = 0
    warnings: Sequence[str] = ()
    search_space: Mapping[str, Mapping[str, Any]] | None = None
    examples: Sequence[Mapping[str, Any]] = ()


def budget_timeline(events: Iterable[Event]) -> list[dict[str, Any]]:
    """Budget spent after each attempt, summed as `fold` sums BudgetUsed (cached jobs charge
    nothing; wall seconds per session, the downtime before a resume not counted).

    Returns rows {"attempt", "attempts", "evaluations", "cpu_hours", "gpu_hours", "wall_s"}: one
    with attempt 0 at the run's start (all zero), then one per attempt with what was spent up to
    the next attempt's start, the last one up to the last event (the holdout included).
    """
    used = {"attempts": 0, "evaluations": 0, "cpu_hours": 0.0, "gpu_hours": 0.0, "wall_s": 0.0}
    rows = [{"attempt": 0, **used}]
    current, closed, session_start = 0, 0.0, None
    for event in events:
        d = event.payload
        if isinstance(d, AttemptStarted):
            if current:
                rows.append({"attempt": current, **used})
            current = d.attempt
            used["attempts"] += 1
        elif isinstance(d, JobFinished) and not d.cached:
            used["evaluations"] += d.units_charged
            used["cpu_hours"] += float(d.cpu_s) / 3600.0
            used["gpu_hours"] += float(d.gpu_s or 0.0) / 3600.0
        if event.kind == "ledger.repaired":
            continue
        when = parse_ts(event.ts)
        if event.kind in ("run.started", "run.resumed"):
            closed, session_start = used["wall_s"], when
        if session_start is not None:
            used["wall_s"] = closed + max((when - session_start).total_seconds(), 0.0)
    if current:
        rows.append({"attempt": current, **used})
    return rows


def champion_trees(attempts: Iterable[int], promotions: Sequence[ChampionPromoted],
                   baseline_tree: str | None) -> dict[int, str | None]:
    """The champion's tree each attempt was measured against: the tree of the last promotion of an
    earlier attempt, else the baseline's. `promotions`: champion.promoted payloads in ledger order."""
    out = {}
    for number in attempts:
        tree = baseline_tree
        for p in promotions:
            if p.attempt < number:
                tree = p.tree
        out[number] = tree
    return out


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown)"
