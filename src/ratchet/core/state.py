"""The run's state as a pure reduction over its ledger events: `fold(events) -> RunState`.

Pure: no I/O, no clock. Every number here comes from the events (wall time from their `ts`), read
as their payload models (core.payloads): one handler per event kind, taking that kind's model.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from msgspec import UNSET

from ratchet.core.events import Event
from ratchet.core.payloads import (
    AgentHarvested,
    AgentLaunched,
    AgentLeg,
    AttemptGaveUp,
    AttemptStarted,
    AttemptSubmitted,
    ChampionPromoted,
    JobFinished,
    JobStarted,
    LedgerRepaired,
    ModelCalled,
    ModelReserved,
    RunAbandoned,
    RunResumed,
    RunStarted,
    RunStopped,
    TrialJudged,
    TrialPlanned,
    given,
)
from ratchet.core.vocab import RunStatus


@dataclass(frozen=True)
class TreeRef:
    """A git commit and its tree hash (either may be None when not recorded)."""

    commit: str | None
    tree: str | None


@dataclass(frozen=True)
class Champion:
    """The current champion. `attempt` is None (and `estimate` None) while it is the baseline;
    `estimate`/`interval` are in direction-normalized metric units."""

    commit: str | None
    tree: str | None
    estimate: float | None = None
    interval: tuple[float, float] | None = None
    attempt: int | None = None


@dataclass(frozen=True)
class Judgment:
    """One recorded trial.judged: the gate's verdict on one stage of a trial. `champion_mean` /
    `candidate_mean`: each side's raw mean (metric units, not direction-normalized; a pass rate for
    examples) over the units the stage used; None when judged without jobs. For the holdout the
    champion side is the baseline and the candidate side the final champion. `guardrails`: each
    guardrail's result as recorded (trial.judged data.guardrails; empty without guardrails)."""

    stage: str
    verdict: str | None
    reason: str | None
    reason_text: str | None
    estimate: float | None
    interval: tuple[float, float] | None
    p_value: float | None
    units: int | None
    level: float | None
    attempt: int | None
    champion_mean: float | None = None
    candidate_mean: float | None = None
    guardrails: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class AttemptState:
    """One attempt. Verdict fields come from its stage "trial" judgment (the last one recorded);
    `confirm` is its stage "confirm" judgment; `gave_up` the agent's reason when it gave up, and
    `stops_campaign` whether that give-up ended the campaign (else only the attempt); `promoted`
    whether its candidate became the champion; `unresponsive` whether it ended because the agent
    did not work (`attempt.gave_up` / `attempt.submitted` data.unresponsive); `candidate_mean` /
    `champion_mean`: the trial's raw means of each side (Judgment); `revises` the attempt whose
    verdict this one revises in the same agent session (`attempt.started` data.revises); `worker`
    the worker that ran it (`attempt.started` data.worker; None: a run of one worker); `rebases` the
    accepted attempt whose change it re-measures (data.rebases); `base_tree` / `base_commit` the
    champion its agent started from (a re-base: the champion its original was submitted against);
    `against_tree` / `against_commit` the champion when its candidate was submitted: the one its
    submitted tree is built on (re-based onto it when the champion had moved) and its trial measures
    it against; `planned_seq` the seq of its first `trial.planned` of stage trial, `decided_seq` that
    of the event that decided it (its promotion, a trial or confirmation verdict other than accepted, its
    give-up): the ledger order the levels of attempts that overlap are read from (loop.history)."""

    attempt: int
    tree: str | None = None
    summary: str | None = None
    params: Mapping[str, Any] | None = None
    report_blob: str | None = None
    launches: int = 0
    legs: int = 0
    verdict: str | None = None
    reason: str | None = None
    reason_text: str | None = None
    estimate: float | None = None
    interval: tuple[float, float] | None = None
    p_value: float | None = None
    units: int | None = None
    level: float | None = None
    candidate_mean: float | None = None
    champion_mean: float | None = None
    confirm: Judgment | None = None
    gave_up: str | None = None
    stops_campaign: bool = False
    promoted: bool = False
    unresponsive: bool = False
    revises: int | None = None
    planned_seq: int | None = None
    decided_seq: int | None = None
    guardrails: tuple[Mapping[str, Any], ...] = ()
    """Each guardrail's result in the trial's judgment (trial.judged data.guardrails)."""
    worker: int | None = None
    rebases: int | None = None
    base_tree: str | None = None
    base_commit: str | None = None
    against_tree: str | None = None
    against_commit: str | None = None


@dataclass(frozen=True)
class BudgetUsed:
    """Budget spent so far: attempts started, job-units charged (cached jobs charge 0), CPU and
    GPU hours of non-cached jobs, and wall seconds summed over sessions (each from run.started or
    run.resumed to the last event before the next run.resumed, a `ledger.repaired` not counted: the
    time between a kill and its resume is no session's)."""

    attempts: int = 0
    evaluations: int = 0
    cpu_hours: float = 0.0
    gpu_hours: float = 0.0
    wall_s: float = 0.0
    eval_calls: int = 0
    """Prompt solutions: eval and judge model calls made (job.finished `eval_calls`)."""
    eval_tokens: int = 0
    """Prompt solutions: their input plus output tokens."""
    eval_usd: float = 0.0
    """Prompt solutions: their dollars."""


@dataclass(frozen=True)
class RunState:
    """Everything `ratchet status` and a resume need, folded from the events.

    `baseline_mean`: the baseline's raw mean as the preflight measured it (None: no preflight value).
    `baseline_guardrails`: each guardrail's mean over the preflight's jobs, by name (empty without).
    `champion_mean` / `champion_bound`: the champion's raw mean (a pass rate for examples) and its
    guarding confidence bound as last measured: by the preflight, then by each trial's champion side
    (not a trial that measured a champion replaced since, as with several workers), then by the
    promoted candidate's own measurement (None: never measured; the bound needs 2 units).
    `finished_jobs`: job_id -> the job.finished payload; `running_jobs`: job_id -> external id (or
    pid) of jobs started and not finished; `open_trial`: the payload of the last trial.planned with
    no trial.judged for its (attempt, stage) yet; `limits`: run.started's limits as recorded.
    """

    run_id: str | None = None
    state: RunStatus = "running"
    stop_reason: str | None = None
    stop_budget: str | None = None
    stop_detail: str | None = None
    contract_digest: str | None = None
    baseline: TreeRef = TreeRef(None, None)
    champion: Champion = Champion(None, None)
    baseline_mean: float | None = None
    champion_mean: float | None = None
    champion_bound: float | None = None
    baseline_guardrails: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    promotions: int = 0
    attempts: tuple[AttemptState, ...] = ()
    holdout: Judgment | None = None
    budget_used: BudgetUsed = BudgetUsed()
    finished_jobs: Mapping[str, JobFinished] = field(default_factory=lambda: MappingProxyType({}))
    running_jobs: Mapping[str, str | int | None] = field(default_factory=lambda: MappingProxyType({}))
    last_attempt: int = 0
    trials_run: int = 0
    consecutive_without_promotion: int = 0
    open_trial: TrialPlanned | None = None
    limits: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    holdout_reserve: int = 0
    salt: str | None = None
    sandbox: str | None = None
    target_kind: str | None = None
    direction: str | None = None
    sessions: int = 0
    repairs: int = 0
    model_calls: int = 0
    last_seq: int = -1

    def attempt(self, number: int) -> AttemptState | None:
        """The attempt with 1-based number `number`, or None."""
        return next((a for a in self.attempts if a.attempt == number), None)


def parse_ts(ts: str) -> dt.datetime:
    """An event's `ts` (ISO-8601 UTC text) as an aware datetime."""
    return dt.datetime.fromisoformat(ts)


def _interval(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return (value[0], value[1])
    return None


def _judgment(d: TrialJudged) -> Judgment:
    return Judgment(
        stage=d.stage,
        verdict=d.verdict,
        reason=d.reason,
        reason_text=d.reason_text,
        estimate=d.estimate,
        interval=_interval(d.interval),
        p_value=d.p_value,
        units=d.units,
        level=d.level,
        attempt=d.attempt,
        champion_mean=given(d.champion_mean),
        candidate_mean=given(d.candidate_mean),
        guardrails=tuple(d.guardrails) if d.guardrails is not UNSET else (),
    )


class Folder:
    """Mutable accumulator of fold() (and of readers folding as they go, such as `ratchet verify`):
    RunState's fields as plain attributes, one handler per event kind; `step(event)` applies one,
    `result()` freezes. The frozen RunState is built only by result(): replacing a 30-field frozen
    dataclass on every event was most of replay's time."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.state: RunStatus = "running"
        self.stop_reason: str | None = None
        self.stop_budget: str | None = None
        self.stop_detail: str | None = None
        self.contract_digest: str | None = None
        self.baseline = TreeRef(None, None)
        self.champion = Champion(None, None)
        self.baseline_mean: float | None = None
        self.champion_mean: float | None = None
        self.preflight_guardrails: dict[str, list] = {}  # name -> [sum, jobs] of the preflight's guardrail values
        self.champion_bound: float | None = None
        self.preflight = [0.0, 0]  # sum of values, units: the baseline's preflight mean
        self.promotions = 0
        self.holdout: Judgment | None = None
        self.last_attempt = 0
        self.trials_run = 0
        self.open_trial: TrialPlanned | None = None
        self.limits: Mapping[str, Any] = MappingProxyType({})
        self.holdout_reserve = 0
        self.salt: str | None = None
        self.sandbox: str | None = None
        self.target_kind: str | None = None
        self.direction: str | None = None
        self.sessions = 0
        self.repairs = 0
        self.model_calls = 0
        self.last_seq = -1
        self.seq = -1  # the seq of the event being stepped
        # Keys as the events hold them (replay never validates): ints and strs in a well-formed ledger.
        self.attempts: dict[Any, dict[str, Any]] = {}  # number -> AttemptState fields set so far
        self.built: dict[Any, AttemptState] = {}  # number -> AttemptState as of its last change (for result)
        self.changed: set[Any] = set()  # attempts touched since result() last listed them
        self.order: list[Any] = []  # attempt numbers in the order result() lists them (ascending)
        self.position: dict[Any, int] = {}  # number -> its index in order
        self.listed: list[AttemptState] = []  # their states as result() last listed them
        self.finished: dict[str, JobFinished] = {}
        self.running: dict[str, str | int | None] = {}
        self.judged_since_promotion: set[Any] = set()
        self.started = 0  # BudgetUsed.attempts
        self.evaluations = 0
        self.eval_spent = [0, 0, 0.0]  # eval calls, eval tokens, eval USD (prompt solutions)
        self.cpu_hours = 0.0
        self.gpu_hours = 0.0
        self.last_ts: str | None = None  # ts of the last event counted in a session
        self.session_start: dt.datetime | None = None
        self.closed_wall_s = 0.0
        self.handlers: dict[str, Any] = {}

    def touch_attempt(self, number: Any, **changes: Any) -> None:
        if not isinstance(number, int):
            return
        fields = self.attempts.get(number)
        if fields is None:
            fields = self.attempts[number] = {"attempt": number}
        fields.update(changes)
        self.built.pop(number, None)
        self.changed.add(number)

    def step(self, event: Event) -> None:
        handler = self.handlers.get(event.kind)
        if handler is None:
            handler = self.handlers[event.kind] = getattr(self, "on_" + event.kind.replace(".", "_"))
        self.seq = event.seq
        handler(event.payload)
        self.last_seq = event.seq
        # Wall clock: a repair or an abandon is written while no kernel ran (the downtime is no
        # session's); a timestamp is parsed only at a session's start and when asked (wall), as
        # the seconds depend on the last event counted alone.
        kind = event.kind
        if kind == "ledger.repaired" or kind == "run.abandoned":
            return
        if kind == "run.started" or kind == "run.resumed":
            self.closed_wall_s = self.wall()
            self.session_start = parse_ts(event.ts)
        self.last_ts = event.ts

    def wall(self) -> float:
        """Wall seconds so far: the closed sessions', plus the current one's up to the last event
        counted."""
        if self.session_start is None or self.last_ts is None:
            return self.closed_wall_s
        return self.closed_wall_s + max((parse_ts(self.last_ts) - self.session_start).total_seconds(), 0.0)

    def on_run_started(self, d: RunStarted) -> None:
        ref = TreeRef(d.baseline.commit, d.baseline.tree)
        self.run_id = d.run_id
        self.contract_digest = d.contract_digest
        self.baseline = ref
        self.champion = Champion(ref.commit, ref.tree)
        self.salt = d.salt
        self.sandbox = d.sandbox
        self.target_kind = d.target_kind
        self.direction = d.direction
        self.limits = MappingProxyType(dict(d.limits))
        self.holdout_reserve = d.holdout_reserve
        self.sessions += 1

    def on_run_resumed(self, d: RunResumed) -> None:
        self.state = "running"
        self.stop_reason = self.stop_budget = self.stop_detail = None
        self.sessions += 1

    def on_attempt_started(self, d: AttemptStarted) -> None:
        revises, worker, rebases = given(d.revises), given(d.worker), given(d.rebases)
        base = (self.champion.tree, self.champion.commit)
        original = self.attempts.get(rebases) if rebases is not None else None
        if original is not None:
            base = (original.get("against_tree"), original.get("against_commit"))
        extra = {k: v for k, v in (("revises", revises), ("worker", worker), ("rebases", rebases)) if v is not None}
        self.touch_attempt(d.attempt, base_tree=base[0], base_commit=base[1], **extra)
        self.started += 1
        self.last_attempt = max(self.last_attempt, d.attempt)

    def on_agent_launched(self, d: AgentLaunched) -> None:
        current = self.attempts.get(d.attempt)
        self.touch_attempt(d.attempt, launches=(current.get("launches", 0) if current else 0) + 1)

    def on_agent_leg(self, d: AgentLeg) -> None:
        self.touch_attempt(d.attempt, legs=self.attempts.get(d.attempt, {}).get("legs", 0) + 1)

    def on_agent_harvested(self, d: AgentHarvested) -> None:
        pass  # a record for the report and verify; no state

    def on_model_reserved(self, d: ModelReserved) -> None:
        pass  # the llm agent replays its own budget from these (loop.agents.model_budget_records)

    def on_model_called(self, d: ModelCalled) -> None:
        self.model_calls += 1

    def on_attempt_submitted(self, d: AttemptSubmitted) -> None:
        self.touch_attempt(
            d.attempt,
            tree=d.tree,
            summary=d.summary,
            report_blob=d.report_blob,
            params=MappingProxyType(dict(d.params)) if d.params is not None else None,
            unresponsive=d.unresponsive is True,
            against_tree=self.champion.tree,
            against_commit=self.champion.commit,
        )

    def decide(self, number: Any) -> dict[str, Any]:
        """{"decided_seq": seq} when attempt `number` has none yet (its first decision), else {}."""
        return {} if self.attempts.get(number, {}).get("decided_seq") is not None else {"decided_seq": self.seq}

    def on_attempt_gave_up(self, d: AttemptGaveUp) -> None:
        self.touch_attempt(d.attempt, gave_up=d.reason, stops_campaign=d.stops_campaign,
                           unresponsive=d.unresponsive is True, **self.decide(d.attempt))

    def on_trial_planned(self, d: TrialPlanned) -> None:
        self.open_trial = d
        if d.stage == "trial":
            self.trials_run += 1
            if self.attempts.get(d.attempt, {}).get("planned_seq") is None:
                self.touch_attempt(d.attempt, planned_seq=self.seq)

    def on_job_started(self, d: JobStarted) -> None:
        job_id = d.job_id
        self.finished.pop(job_id, None)
        self.running[job_id] = d.external_id or given(d.pid)

    def on_job_finished(self, d: JobFinished) -> None:
        job_id = d.job_id
        self.running.pop(job_id, None)
        self.finished[job_id] = d
        if d.stage == "preflight" and d.value is not None and d.state == "ok":
            for name, value in (d.guardrails or {}).items():  # UNSET and None are falsy
                sums = self.preflight_guardrails.setdefault(name, [0.0, 0])
                sums[0], sums[1] = sums[0] + float(value), sums[1] + 1
            self.preflight[0] += float(d.value)
            self.preflight[1] += d.units_charged or 1
            self.champion_mean = self.baseline_mean = self.preflight[0] / self.preflight[1]
        self.eval_spent[0] += given(d.eval_calls) or 0
        self.eval_spent[1] += given(d.eval_tokens) or 0
        self.eval_spent[2] += float(given(d.eval_usd) or 0.0)
        if d.cached:
            return
        self.evaluations += d.units_charged
        self.cpu_hours += float(d.cpu_s) / 3600.0
        self.gpu_hours += float(d.gpu_s or 0.0) / 3600.0

    def on_trial_judged(self, d: TrialJudged) -> None:
        judgment = _judgment(d)
        planned = self.open_trial
        if planned is not None and (planned.attempt, planned.stage) == (d.attempt, d.stage):
            self.open_trial = None
        if judgment.stage == "holdout":
            self.holdout = judgment
        elif judgment.stage == "confirm":
            self.touch_attempt(judgment.attempt, confirm=judgment,
                               **(self.decide(d.attempt) if d.verdict != "accepted" else {}))
        elif judgment.stage == "trial":
            measured = self.attempts.get(judgment.attempt, {}).get("against_commit")
            current = measured is None or measured == self.champion.commit  # not a champion replaced since
            if current and d.champion_mean is not None and d.champion_mean is not UNSET:
                self.champion_mean, self.champion_bound = d.champion_mean, given(d.champion_lcb)
            self.judged_since_promotion.add(judgment.attempt)
            self.touch_attempt(
                judgment.attempt,
                verdict=judgment.verdict,
                reason=judgment.reason,
                reason_text=judgment.reason_text,
                estimate=judgment.estimate,
                interval=judgment.interval,
                p_value=judgment.p_value,
                units=judgment.units,
                level=judgment.level,
                candidate_mean=judgment.candidate_mean,
                champion_mean=judgment.champion_mean,
                **(self.decide(d.attempt) if d.verdict != "accepted" else {}),
                guardrails=judgment.guardrails,
            )

    def on_champion_promoted(self, d: ChampionPromoted) -> None:
        self.champion = Champion(d.commit, d.tree, d.estimate, _interval(d.interval), d.attempt)
        self.touch_attempt(d.attempt, promoted=True, **self.decide(d.attempt))
        if d.mean is not None:
            self.champion_mean, self.champion_bound = d.mean, d.lcb
        self.judged_since_promotion.clear()
        self.promotions += 1

    def on_run_stopped(self, d: RunStopped) -> None:
        reason = d.stop_reason
        self.state = "interrupted" if reason == "interrupted" else "stopped"
        self.stop_reason = reason
        self.stop_budget = d.budget
        self.stop_detail = d.detail

    def on_run_abandoned(self, d: RunAbandoned) -> None:
        self.state = "stopped"
        self.stop_reason = "abandoned"
        self.stop_budget = self.stop_detail = None

    def on_ledger_repaired(self, d: LedgerRepaired) -> None:
        self.repairs += 1

    def _attempt(self, number: Any) -> AttemptState:
        """The AttemptState of attempt `number`, built once per change (a caller asking for the
        state after every event, `ratchet verify`, then pays per changed attempt, not per attempt)."""
        built = self.built.get(number)
        if built is None:
            built = self.built[number] = AttemptState(**self.attempts[number])
        return built

    def _attempt_states(self) -> tuple[AttemptState, ...]:
        """Every attempt's state in number order, re-listing only the attempts touched since the
        last call (a reader asking for the state before each of many events pays per change, not
        per attempt)."""
        for number in sorted(self.changed):
            i = self.position.get(number)
            if i is not None:
                self.listed[i] = self._attempt(number)
            elif not self.order or number > self.order[-1]:
                self.position[number] = len(self.order)
                self.order.append(number)
                self.listed.append(self._attempt(number))
            else:  # a number below one listed already (not in a well-formed run): list them anew
                self.order = sorted(self.attempts)
                self.position = {n: k for k, n in enumerate(self.order)}
                self.listed = [self._attempt(n) for n in self.order]
                break
        self.changed.clear()
        return tuple(self.listed)

    def result(self, jobs: bool = True) -> RunState:
        """The frozen RunState after the events stepped so far. `jobs` False leaves finished_jobs
        and running_jobs empty, sparing their copy (O(jobs)) to a reader that asks for the state
        before many events and reads neither (`ratchet verify`'s levels and margins)."""
        return RunState(
            run_id=self.run_id,
            state=self.state,
            stop_reason=self.stop_reason,
            stop_budget=self.stop_budget,
            stop_detail=self.stop_detail,
            contract_digest=self.contract_digest,
            baseline=self.baseline,
            champion=self.champion,
            baseline_mean=self.baseline_mean,
            champion_mean=self.champion_mean,
            champion_bound=self.champion_bound,
            baseline_guardrails=MappingProxyType({k: v[0] / v[1] for k, v in self.preflight_guardrails.items()}),
            promotions=self.promotions,
            attempts=self._attempt_states(),
            holdout=self.holdout,
            budget_used=BudgetUsed(self.started, self.evaluations, self.cpu_hours, self.gpu_hours, self.wall(),
                                   int(self.eval_spent[0]), int(self.eval_spent[1]), float(self.eval_spent[2])),
            finished_jobs=MappingProxyType(dict(self.finished) if jobs else {}),
            running_jobs=MappingProxyType(dict(self.running) if jobs else {}),
            last_attempt=self.last_attempt,
            trials_run=self.trials_run,
            consecutive_without_promotion=len(self.judged_since_promotion),
            open_trial=self.open_trial,
            limits=self.limits,
            holdout_reserve=self.holdout_reserve,
            salt=self.salt,
            sandbox=self.sandbox,
            target_kind=self.target_kind,
            direction=self.direction,
            sessions=self.sessions,
            repairs=self.repairs,
            model_calls=self.model_calls,
            last_seq=self.last_seq,
        )


def fold(events: Iterable[Event]) -> RunState:
    """The RunState after `events` (oldest first, as read by events.read_events). Pure.

    An empty sequence gives the initial RunState (run_id None, state "running").
    """
    folder = Folder()
    for event in events:
        folder.step(event)
    return folder.result()
