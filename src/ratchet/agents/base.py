"""The agent protocol: an attempt is a conversation of legs between the kernel and an
agent. `start(context)` and `wake(context, results)` return an Action:

    Launch(jobs, note)   run the agent's own experiments (charged to the budget), then wake it
    Submit(tree, report) hand a candidate tree and a written report to the gate
    GiveUp(reason)       end the attempt (and the campaign: stop reason `agent_stopped`)

Every agent kind inherits `Agent`, which gives each optional hook the loop calls (`resume`,
`budget_stop`, `stopped_by_budget`) a default that does nothing. Values only; the kernel does every
effect.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ratchet.core.budget import BudgetStop
from ratchet.core.payloads import AgentLeg

MAX_LAUNCHES_PER_ATTEMPT = 8
"""Legs of `Launch` one attempt may take before the kernel refuses more (an agent that never submits)."""

MAX_REPORT_CHARS = 8000
"""Characters of the report a `Submit` carries (the command agent's channel refuses a longer one; the
llm agent keeps this much of a reply)."""

MAX_SUMMARY_CHARS = 200
"""Characters of a `Submit`'s one-line summary (refused by the channel, clipped by the llm agent)."""

MAX_LAUNCH_TIMEOUT_S = 240 * 60.0
"""Seconds one launched job may run, whatever the agent asks (a longer timeout is clamped to this)."""

MAX_JOBS_PER_LAUNCH = 128
"""Jobs one `Launch` (one leg's launches: 8 launches per sleep, arrays of at most 16) may ask for;
the kernel runs no more."""


@dataclass(frozen=True)
class LaunchJob:
    """One experiment an agent asks the kernel to run: `command` (shell) in a clean checkout of
    `tree` (None: the champion's tree), for at most `timeout_s` seconds, with `seed` in the seed env."""

    name: str
    command: str
    timeout_s: float = 60.0
    tree: str | None = None
    seed: int = 0
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra variables for the job (`SWEEP_INDEX` for the i-th job of an array)."""
    artifacts: tuple[str, ...] = ()
    """Relative paths in the job's checkout the executor copies back after the job ends, before the
    checkout is removed (`compute.artifacts.collect_artifacts`)."""
    group: str | None = None
    """The agent's name for the launch this job belongs to (jobs of one array share it)."""
    max_parallel: int | None = None
    """At most this many jobs of `group` run at once (None: the executor's own limit)."""


@dataclass(frozen=True)
class Launch:
    """Run these experiments, then wake me with their results (no jobs: a checkpoint, wake me at
    once with no results; nothing is run or recorded as a launch)."""

    jobs: tuple[LaunchJob, ...]
    note: str = ""


@dataclass(frozen=True)
class Submit:
    """A candidate: `tree` (git tree hash) and a written `report` (hypothesis, what ran, what it
    measured, why it should be promoted); `summary` is one line for tables; `params` the tunables
    (search agent) or None. `invalid` is set instead of `tree` when the agent could not build its
    candidate (e.g. a patch that does not apply): the attempt is rejected with that reason."""

    tree: str | None
    report: str
    summary: str
    params: Mapping[str, Any] | None = None
    invalid: str | None = None
    unresponsive: bool = False
    """The agent could not produce a candidate because what it depends on did not answer (the llm
    agent's server: no reply after every retry); `invalid` says what. Counts toward
    `agent.max_idle_attempts`."""


@dataclass(frozen=True)
class GiveUp:
    """The agent has nothing more to propose (`stops_campaign`: the campaign ends, stop reason
    `agent_stopped`), or this attempt cannot go on (`stops_campaign=False`: the attempt ends
    `gave_up`, the next one starts); `reason` says why."""

    reason: str
    stops_campaign: bool = True
    unresponsive: bool = False
    """The attempt ended because the agent did not work (its CLI failed to start, timed out, or
    ended twice without a request): counts toward `agent.max_idle_attempts`, after which the run
    stops `agent_unresponsive`."""


Action = Launch | Submit | GiveUp


@dataclass(frozen=True)
class LaunchResult:
    """What one launched experiment did: state (a job state or metric state), exit code, value of the
    target's metric when one was printed, the stdout/stderr tails (data, never instructions)."""

    name: str
    state: str
    exit_code: int | None
    value: float | None
    stdout_tail: str
    stderr_tail: str
    artifacts_dir: str | None = None
    """A kernel-owned directory holding the job's declared artifacts as copied back by
    `compute.artifacts.collect_artifacts` (None: none were declared or the job never ran)."""
    elapsed_s: float | None = None


@dataclass(frozen=True)
class PastAttempt:
    """One finished attempt as the agent may know it (loop/history.py builds it from the ledger).

    params: the tunables (search agent) or None; tree: the candidate tree; verdict and reason: the
    gate's, except on an examples target, where an attempt whose trial ran jobs shows only verdict
    `accepted` with reason `promoted`, or `rejected` with reason `not_promoted` (a reason such as
    futility, or an `inconclusive` verdict, would tell how the val block scored); candidate_mean:
    the candidate's mean on its trial's units (benchmarks; None on an examples target, whose trials
    between promotions all measure one val block, and when not measured); dev_mean: examples
    targets, the candidate's pass rate in [0, 1] on the dev split (None when not measured: a
    benchmark, an agent that does not read history, a candidate decided without jobs).
    """

    attempt: int
    tree: str | None
    params: Mapping[str, Any] | None
    verdict: str | None
    reason: str | None
    candidate_mean: float | None
    dev_mean: float | None = None


@dataclass(frozen=True)
class Verdict:
    """The gate's verdict on a submitted attempt as its author may read it (loop/revision.py builds
    it from the ledger when the next attempt revises it).

    attempt: the attempt judged; tree: its candidate tree (None: it had none); verdict and reason:
    the gate's, masked on an examples target as PastAttempt says; detail: lines of figures and the
    reason's text (a benchmark: estimate, interval, p-value, units, the means; an examples target:
    the dev pass rate only, nothing measured on val); failures: lines naming what failed (a
    benchmark: the stderr tails of its failed trial and confirm jobs; an examples target: the dev
    examples it did not pass); submission: which submission of its session it was (1: the first).
    """

    attempt: int
    tree: str | None
    verdict: str
    reason: str
    detail: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    submission: int = 1


@dataclass(frozen=True)
class AgentContext:
    """What an agent knows at the start of an attempt: the attempt number (1-based), the champion's
    tree, the campaign seed, the history of finished attempts (from the ledger), and `revising`:
    the verdict of the attempt this one revises (the same session continues: `Agent.can_revise`),
    or None for a fresh attempt. With several workers (`agent.workers`): `in_flight` the other
    attempts started and not yet finished (their params and summary once submitted: verdict None),
    so an agent does not propose what a sibling is measuring; `proposal` the attempt's number among
    the attempts agents proposed (re-base attempts, which no agent works in, are not counted; 0:
    the same as `attempt`)."""

    attempt: int
    champion_tree: str
    campaign_seed: int
    history: tuple[PastAttempt, ...] = field(default_factory=tuple)
    revising: Verdict | None = None
    in_flight: tuple[InFlight, ...] = field(default_factory=tuple)
    proposal: int = 0

    @property
    def ordinal(self) -> int:
        """`proposal` when set, else `attempt`: which of an agent's proposals this is (1-based)."""
        return self.proposal or self.attempt


@dataclass(frozen=True)
class InFlight:
    """A sibling's attempt in flight (started, not finished) as another worker's agent may know it:
    its number, the worker running it, and once submitted its params (search agent), summary and
    candidate tree (None before)."""

    attempt: int
    worker: int | None
    params: Mapping[str, Any] | None = None
    summary: str | None = None
    tree: str | None = None


class TreeBuilder(Protocol):
    """What agents may use to build candidate trees without touching the user's working tree
    (implemented by `workspace.git.Git`)."""

    def overlay_tree(self, base_tree: str, files: Mapping[str, bytes | None]) -> str: ...

    def apply_patch(self, base_tree: str, patch: bytes) -> str: ...

    def read_blob(self, tree: str, path: str) -> bytes | None: ...


class Agent(ABC):
    """An agent: `start` opens an attempt; `wake` continues it after a `Launch`. The other hooks
    have defaults that do nothing; an agent kind overrides those it needs."""

    reads_history: bool = True
    """Whether what the agent proposes may depend on the results of earlier attempts. On an examples
    target each candidate of such an agent is measured on the dev split before its trial (job stage
    `dev`, |dev| job-units) so that the history has something to show; an agent that never reads it
    (the files agent's prepared candidates) sets False and costs nothing more."""

    proposes_at_once: bool = False
    """Whether `start` returns its submission at once, cheaply, without launching anything (search,
    files): with several workers the campaign then asks it under the kernel's lock and records the
    submission before another worker asks, so each ask sees every sibling's proposal in flight.
    One instance is then shared by the workers."""

    stopped_by_budget: BudgetStop | None = None
    """The agent's own budget (model calls, tokens, USD) that made it give up, once one has: the
    loop then stops the run with stop reason `budget_exhausted`, naming that budget. Default: None
    (the agent has no budget of its own)."""

    @abstractmethod
    def start(self, ctx: AgentContext) -> Action:
        """The first leg of attempt `ctx.attempt`."""

    @abstractmethod
    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        """The next leg, after the last `Launch` ran: `results` one per launched job, in order."""

    def resume(self, ctx: AgentContext, legs: Sequence[AgentLeg], read_blob: Callable[[str], bytes]) -> bool:
        """Pick attempt `ctx.attempt` up again after a kernel restart, from its recorded
        `agent.leg` payloads (oldest first; `read_blob` reads a recorded blob). True: the loop replays
        the last recorded launch (finished jobs reused) and calls `wake` once. False: the loop calls
        `start` and the attempt begins again. Default: False (the agent keeps no conversation)."""
        return False

    def can_revise(self, attempt: int) -> bool:
        """Whether the session that submitted attempt `attempt` (just judged, not promoted) may
        submit again: the loop then starts the next attempt as its revision (`attempt.started`
        data.revises) and calls `start` with `AgentContext.revising` set. Default: False (every
        attempt is fresh)."""
        return False

    def budget_stop(self) -> BudgetStop | None:
        """The agent's own budget that forbids another attempt now, checked before each attempt
        (stop reason `budget_exhausted`, the budget named, its arithmetic the stop's detail), or
        None. Default: None."""
        return None
