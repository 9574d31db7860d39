"""What the model may know of the run: the champion's figures, the history of attempts, and (examples
targets) the champion's failures on the dev split. Never unit seeds, holdout figures, val or test
examples: the `Evidence` the loop supplies carries none of those, by construction of these types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ratchet.agents.base import AgentContext


@dataclass(frozen=True)
class ChampionFigures:
    """The champion as last measured: mean of the metric (direction as in the contract), its 95%
    interval (`low`, `high`; None when unknown) and the units it rests on."""

    mean: float | None
    low: float | None = None
    high: float | None = None
    units: int = 0


@dataclass(frozen=True)
class AttemptSummary:
    """One finished attempt as the model may see it: its one-line summary, the verdict and reason,
    the estimated gain over the champion it faced (metric units, larger is better) and the
    confidence bound on that gain the gate used (None when not measured), and the directive it
    followed ("" when none)."""

    attempt: int
    summary: str
    verdict: str | None
    reason: str | None
    estimate: float | None = None
    bound: float | None = None
    directive: str = ""


@dataclass(frozen=True)
class DevFailure:
    """One dev example the champion's solution fails: input, expected and actual output, and which
    check failed (with its reason)."""

    input: str
    expected: str
    actual: str
    check: str


class Evidence(Protocol):
    """The loop's view of the run for the llm agent (built from the ledger).

    champion(ctx): the champion's figures, or None before anything was measured.
    attempts(ctx): finished attempts, oldest first (never per-unit seeds or holdout figures).
    dev_failures(ctx): examples targets: the champion's failures on the DEV split only (never val or
    test); benchmark targets: empty.
    """

    def champion(self, ctx: AgentContext) -> ChampionFigures | None: ...

    def attempts(self, ctx: AgentContext) -> Sequence[AttemptSummary]: ...

    def dev_failures(self, ctx: AgentContext) -> Sequence[DevFailure]: ...


class ContextEvidence:
    """Evidence from the `AgentContext` alone: the history's verdicts and candidate means, no
    champion figures, no dev failures. What the agent sees when the loop supplies nothing richer."""

    def champion(self, ctx: AgentContext) -> ChampionFigures | None:
        """None: the context carries no champion figures."""
        return None

    def attempts(self, ctx: AgentContext) -> Sequence[AttemptSummary]:
        """One summary per finished attempt of `ctx.history` (its dev pass rate, else its candidate
        mean, as the summary)."""
        return [AttemptSummary(p.attempt, _figure(p.dev_mean, p.candidate_mean), p.verdict, p.reason)
                for p in ctx.history]

    def dev_failures(self, ctx: AgentContext) -> Sequence[DevFailure]:
        """Nothing: the context carries no dev results."""
        return ()


def _figure(dev_mean: float | None, candidate_mean: float | None) -> str:
    if dev_mean is not None:
        return f"dev pass rate {dev_mean:.6g}"
    return "" if candidate_mean is None else f"candidate mean {candidate_mean:.6g}"


def in_flight_summaries(ctx: AgentContext) -> list[AttemptSummary]:
    """The siblings' attempts in flight (`AgentContext.in_flight`, several workers) as rows of the
    history with no verdict yet (shown `pending`): what they proposed once submitted, so the model
    does not propose it again."""
    return [AttemptSummary(f.attempt, f"in flight (worker {f.worker}): {f.summary or 'not submitted yet'}", None, None)
            for f in ctx.in_flight]
