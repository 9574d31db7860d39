"""The campaign loop: attempts until a stop reason, each candidate judged by the gate
against the champion, promotions as commits on `ratchet/<run_id>/champion`, then the holdout.

Every step is recorded in the ledger before the next one starts, and every step is written with
`Kernel.once`, so a resumed kernel replays the loop from the ledger alone: finished jobs are reused,
nothing is recorded twice, and the agents (deterministic given the ledger) propose the same
candidates again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from msgspec import UNSET

from ratchet.agents.base import (
    MAX_JOBS_PER_LAUNCH,
    MAX_LAUNCH_TIMEOUT_S,
    MAX_LAUNCHES_PER_ATTEMPT,
    Action,
    Agent,
    AgentContext,
    GiveUp,
    InFlight,
    Launch,
    Submit,
    Verdict,
)
from ratchet.compute.outcome import read_result
from ratchet.core.budget import BudgetStop, exhausted, forecast, launch_refusal, trial_worst_case
from ratchet.core.gate import Decision
from ratchet.core.gate_design import margin_for_state
from ratchet.core.payloads import (
    AgentLaunched,
    AgentLeg,
    AttemptGaveUp,
    AttemptStarted,
    AttemptSubmitted,
    RunStarted,
    TrialPlanned,
    given,
)
from ratchet.core.plan import NO_ATTEMPT, Plan, Stage
from ratchet.core.state import AttemptState, RunState, parse_ts
from ratchet.core.stats.level_pool import levels_at_planning
from ratchet.loop.audit_trail import keep_attempt
from ratchet.loop.history import idle_streak, level_timeline, past_attempts
from ratchet.loop.kernel import Kernel
from ratchet.loop.launch import launch_from_json, refused_results, run_launch
from ratchet.loop.life import Stop, live_campaign
from ratchet.loop.promotion import promote
from ratchet.loop.rebase import moved, rebase, stale_decision
from ratchet.loop.recorded import measure_recorded_plan, preflight, record_plan, record_verdict, walk_recorded_plan
from ratchet.loop.revision import author_verdict, revisable
from ratchet.loop.trial import TrialOutcome
from ratchet.present.progress import CampaignUI, SerialUI
from ratchet.targets.base import Target
from ratchet.workspace.scope import check_scope


class Campaign:
    """One `ratchet run` on an open kernel with an agent and the run's target. `run()` returns the
    stop reason."""

    def __init__(self, kernel: Kernel, agent: Agent | Sequence[Agent], ui: CampaignUI, target: Target):
        self.k = kernel
        self.agents: list[Agent] = [agent] if isinstance(agent, Agent) else list(agent)
        """One agent per worker (`agent.workers`), or one shared by them all (search, files)."""
        self.contract = kernel.contract
        self.workers = self.contract.agent.workers
        self.ui: CampaignUI = ui if self.workers == 1 else SerialUI(ui)
        self.target = target
        self._local = threading.local()  # the worker thread's own agent and worker number
        self.stop_detail: str | None = None
        """The stop's detail for `run.stopped` (a budget stop's arithmetic, how val was used up), set
        by _stop_reason."""

    @property
    def agent(self) -> Agent:
        """The agent of the worker this thread runs (the only one with one worker)."""
        return getattr(self._local, "agent", self.agents[0])

    @property
    def worker(self) -> int | None:
        """The number (1-based) of the worker this thread runs; None with one worker."""
        return getattr(self._local, "worker", None)

    def as_worker(self, worker: int) -> None:
        """Make this thread worker `worker` (1-based) with its own agent."""
        self._local.worker = worker
        self._local.agent = self.agents[(worker - 1) % len(self.agents)]

    @property
    def confirms(self) -> bool:
        """Whether accepted candidates are re-measured on fresh units (a benchmark with
        gate.confirm; examples have no fresh units)."""
        return self.target.confirms

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> tuple[str, str | None]:
        """Attempts until a stop reason; then the holdout (if anything was promoted) and
        `run.stopped` (loop.life.live_campaign: Ctrl-C or SIGTERM stops it `interrupted`). Returns
        (stop_reason, budget name or None)."""
        for warning in run_warnings(self.k):
            self.ui.note(f"warning: {warning}")
        stop = live_campaign(self.k, self._stages)
        self.ui.stopped(stop.reason, stop.budget, stop.detail)
        return stop.reason, stop.budget

    def _stages(self) -> Stop:
        """The preflight, the attempts and the holdout; the Stop they end with."""
        self.preflight()
        if self.workers > 1:
            from ratchet.loop.crew import Crew

            reason, budget = Crew(self).run()
        else:
            reason, budget = self._loop()
        if reason != "interrupted" and self.k.state().promotions > 0:
            self._holdout()
        detailed = reason in ("budget_exhausted", "val_exhausted", "agent_unresponsive")
        return Stop(reason, budget, self.stop_detail if detailed else None)

    def _loop(self) -> tuple[str, str | None]:
        while True:
            if self.k.interrupted:
                return "interrupted", None
            state = self.k.state()
            last = state.attempt(state.last_attempt)
            if last is not None and last.gave_up is not None and last.stops_campaign:
                return "agent_stopped", None  # recorded before a kill: do not start another attempt
            number, in_progress = self._next_attempt(state)
            if not in_progress:
                stop = self._stop_reason(state)
                if stop is not None:
                    return stop
            outcome = self._attempt(number)
            if outcome == "agent_stopped":
                return "agent_stopped", None
            stopped = self.agent.stopped_by_budget
            if outcome == "budget_exhausted" and stopped is not None:
                return self._budget_stop(stopped)

    def _next_attempt(self, state: RunState) -> tuple[int, bool]:
        """The attempt to work on: an unfinished one (resume) or the next number."""
        last = state.attempt(state.last_attempt)
        if last is not None and not self._attempt_done(last):
            return last.attempt, True
        return state.last_attempt + 1, False

    def _attempt_done(self, a: AttemptState) -> bool:
        """An attempt is done once it gave up, was rejected (by its trial or its confirmation), or
        was promoted."""
        if a.gave_up is not None:
            return True
        if a.verdict is None:
            return False
        if a.verdict != "accepted":
            return True
        if self.confirms and a.confirm is None:
            return False
        if a.confirm is not None and a.confirm.verdict != "accepted":
            return True
        if self.k.find("champion.promoted", attempt=a.attempt) is not None:
            return True
        return self.k.find("attempt.started", rebases=a.attempt) is not None  # its re-base measures it now

    def _stop_reason(self, state: RunState, in_flight: int = 0) -> tuple[str, str | None] | None:
        """The stop that forbids starting another attempt now, or None. `in_flight`: attempts other
        workers are running: the worst case of each stays reserved (N workers never overrun what
        one could not)."""
        gate = self.contract.gate
        if gate.patience and state.consecutive_without_promotion >= gate.patience:
            return "plateau", None
        if gate.target is not None and self._target_reached(gate.target):
            return "target_reached", None
        idle, last = idle_streak(state)
        limit = self.contract.agent.max_idle_attempts
        if limit and idle >= limit:
            self.stop_detail = f"{idle} attempts in a row ended without a working agent; the last: {last}"
            return "agent_unresponsive", None
        blocks = self.target.trial_blocks()
        if blocks is not None and state.promotions >= blocks:
            self.stop_detail = (f"{state.promotions} promotion(s) made; val has room for {blocks} (one block of "
                                f"{self.target.looks('trial')[-1]} examples each): another trial would measure a "
                                "block whose verdicts the agents have already learned from")
            return "val_exhausted", None
        used = state.budget_used
        now_wall = used.wall_s + max(0.0, (self.k.clock() - parse_ts(self.k.log.events[-1].ts)).total_seconds())
        spent = replace(used, wall_s=now_wall)
        ran = [j for j in state.finished_jobs.values() if not j.cached and j.state not in ("skipped", "cancelled")]
        job_wall = sum(j.elapsed_s for j in ran) / len(ran) if ran else 0.0
        # The mean attempt's cost: per attempt finished. One worker finishes every attempt it started
        # before this check; several overlap theirs, and the wall per attempt finished is then what
        # one more attempt adds (counting the attempts in flight would stop the run too early).
        done = state.last_attempt if self.workers == 1 else sum(
            1 for a in state.attempts if a.verdict is not None or a.gave_up is not None)
        expected = forecast(spent, done, len(ran), job_wall,
                            2 * self.contract.gate.holdout_size, self.contract.compute.max_parallel)
        stop = exhausted(self.contract, spent, state.trials_run, self._reserve() + in_flight * self._trial_worst(),
                         self._trial_worst(), expected)
        if stop is None:
            stop = self.agent.budget_stop()  # an agent's own budget (model calls, tokens, USD)
        return self._budget_stop(stop) if stop is not None else None

    def _budget_stop(self, stop: BudgetStop) -> tuple[str, str]:
        """The run's stop for a budget's refusal; its arithmetic becomes `run.stopped.data.detail`."""
        self.stop_detail = stop.detail
        return "budget_exhausted", stop.name

    def _target_reached(self, target: float) -> bool:
        """True when the champion's latest confidence bound on the metric (lower for max, upper for
        min) reaches `target` (RunState.champion_bound: the last trial's champion side, or the
        promoted candidate's own measurement when that is more recent)."""
        bound = self.k.state().champion_bound
        if bound is None:
            return False
        return bound >= target if self.contract.target.direction == "max" else bound <= target

    def _trial_worst(self) -> int:
        """Job-units one attempt may spend at most: its trial's worst case, and the candidate's dev
        measurement when the agent reads history."""
        return trial_worst_case(self.target.looks("trial")[-1], self.confirms) + self._dev_units()

    def _dev_units(self) -> int:
        """Job-units of a candidate's dev measurement (one per dev example; 0 for a benchmark or an
        agent that reads no history)."""
        return len(self.target.dev_jobs(NO_ATTEMPT, "")) if self.agent.reads_history else 0

    def _reserve(self) -> int:
        return self.target.reserve_units()

    # -- one attempt ---------------------------------------------------------------------------

    def _attempt(self, number: int) -> str:
        """Attempt `number` from its start (or where a resume finds it) to its end: the agent's
        legs, the submission, the trial, the confirmation and the promotion. Returns `gave_up`,
        `judged`, `agent_stopped`, `budget_exhausted` (the agent's own budget) or `superseded` (its
        accepted candidate could not be promoted: the champion moved; a re-base attempt follows)."""
        revises = self._revises(number)
        self.k.once(AttemptStarted(attempt=number, revises=UNSET if revises is None else revises), "attempt")
        state = self.k.state()
        me = state.attempt(number)
        self.ui.attempt_started(number, self.contract.budget.max_attempts, state)
        if revises is not None:
            self.ui.note(f"attempt {number} revises attempt {revises} (the same session, told its verdict)")
        rebases = me.rebases if me is not None else None
        if rebases is not None:
            self.ui.note(f"attempt {number} re-measures attempt {rebases}'s change re-based onto the new champion")
        # An agent that proposes at once (search, files) is asked under the kernel's lock, its
        # submission recorded before another worker asks: siblings never propose blind to it.
        with self.k.guard if self.agent.proposes_at_once and self.workers > 1 else nullcontext():
            state = self.k.state()
            submitted = self.k.recorded(AttemptSubmitted, attempt=number)
            if submitted:
                action: Action = self._recorded_submission(submitted)
            elif rebases is not None:
                action = self._rebase_submission(rebases)
            else:
                action = self._converse(self._context(state, number, revises))
            if isinstance(action, Submit):
                action = self._record_submission(number, action)
        if isinstance(action, GiveUp):
            self.k.once(AttemptGaveUp(attempt=number, reason=action.reason, stops_campaign=action.stops_campaign,
                                      unresponsive=action.unresponsive or UNSET), "attempt")
            if self.agent.stopped_by_budget is not None:
                self.ui.note(f"attempt {number}: {action.reason}")
                return "budget_exhausted"
            if action.stops_campaign:
                self.ui.note(f"attempt {number}: the agent has nothing more to propose: {action.reason}")
                return "agent_stopped"
            self.ui.note(f"attempt {number} gave up: {action.reason}")
            return "gave_up"
        assert isinstance(action, Submit)  # _converse runs every Launch before it returns
        return "judged" if self._submit(number, action) else "superseded"

    def _context(self, state: RunState, number: int, revises: int | None) -> AgentContext:
        """What attempt `number`'s agent knows at its start: the champion it builds on (as
        `attempt.started` found it), the finished attempts, the verdict it revises, and with
        several workers the siblings' attempts in flight."""
        me = state.attempt(number)
        base = (me.base_tree if me is not None else None) or state.champion.tree or ""
        in_flight: tuple[InFlight, ...] = ()
        if self.workers > 1:
            in_flight = tuple(InFlight(a.attempt, a.worker, a.params, a.summary, a.tree) for a in state.attempts
                              if a.attempt != number and a.verdict is None and a.gave_up is None)
        proposal = number - sum(1 for a in state.attempts if a.rebases is not None and a.attempt < number)
        return AgentContext(number, base, self.contract.campaign.seed,
                            past_attempts(state, self.target.kind == "examples"),
                            self._author_verdict(state, revises) if revises is not None else None,
                            in_flight, proposal)

    def _rebase_submission(self, original: int) -> Submit:
        """A re-base attempt's submission: attempt `original`'s, as recorded (`_record_submission`
        re-bases its tree onto the champion)."""
        recorded = self.k.recorded(AttemptSubmitted, attempt=original)
        assert recorded is not None  # only an accepted attempt is re-based
        sub = self._recorded_submission(recorded)
        return replace(sub, report=f"Re-base of attempt {original}'s change onto the new champion.\n\n{sub.report}")

    def _revises(self, number: int) -> int | None:
        """The attempt that attempt `number` revises, or None: as `attempt.started` recorded it,
        else the previous attempt when it was judged without a promotion and its agent's session may
        submit again (`Agent.can_revise`)."""
        started = self.k.recorded(AttemptStarted, attempt=number)
        if started is not None:
            return given(started.revises)
        previous = self.k.state().attempt(number - 1)
        if revisable(previous) and self.agent.can_revise(number - 1):
            return number - 1
        return None

    def _author_verdict(self, state: RunState, attempt: int) -> Verdict:
        """The verdict on `attempt` as its author is shown it (loop.revision.author_verdict)."""
        def stderr_of(job_id: str) -> str:
            result = read_result(self.k.run.job_files(job_id).result)
            return result.stderr_tail if result is not None else ""

        return author_verdict(state, attempt, self.target.kind == "examples", stderr_of)

    def _converse(self, ctx: AgentContext) -> Action:
        """The legs of one attempt: start (or resume), then each Launch run and woken (a Launch
        without jobs, a checkpoint, is woken at once: no launch is recorded), until a Submit or a
        GiveUp. More than MAX_LAUNCHES_PER_ATTEMPT launches end the attempt, not the
        campaign; a launch whose worst case does not fit the budget runs no job."""
        launched = [p for e in self.k.events_of("agent.launched")
                    if isinstance(p := e.payload, AgentLaunched) and p.attempt == ctx.attempt]
        action = self._resumed(ctx, launched) or self.agent.start(ctx)
        number = len(launched)  # a resumed or restarted attempt goes on numbering its launches
        checkpoints = 0
        while isinstance(action, Launch):
            if not action.jobs:  # a checkpoint: nothing to run, the agent's leg is its record
                checkpoints += 1
                if checkpoints > MAX_LAUNCHES_PER_ATTEMPT:  # bounded like launches, whatever the agent
                    return GiveUp(f"more than {MAX_LAUNCHES_PER_ATTEMPT} checkpoints in one attempt",
                                  stops_campaign=False)
                action = self.agent.wake(ctx, ())
                continue
            number += 1
            if number > MAX_LAUNCHES_PER_ATTEMPT:
                return GiveUp(f"more than {MAX_LAUNCHES_PER_ATTEMPT} launches in one attempt", stops_campaign=False)
            refusal = self._launch_refusal(action)
            if refusal is not None:
                self.ui.note(f"attempt {ctx.attempt}: launch {number} not run: {refusal}")
                self.k.once(AgentLaunched(attempt=ctx.attempt, launch=number, jobs=[], note=action.note[:2000],
                                          refused=refusal), "attempt", "launch")
                results = refused_results(action, refusal)
            else:
                results = run_launch(self.k, ctx, number, action, self.ui.jobs)
            action = self.agent.wake(ctx, results)
        return action

    def _resumed(self, ctx: AgentContext, launched: list[AgentLaunched]) -> Action | None:
        """After a kernel restart mid-attempt: an agent that picks its conversation up again
        (`Agent.resume`) and whose last leg launched gets that launch replayed (finished jobs reused) and
        is woken once; None otherwise (the attempt starts again, launch numbers continuing)."""
        legs = [p for e in self.k.events_of("agent.leg")
                if isinstance(p := e.payload, AgentLeg) and p.attempt == ctx.attempt]
        if legs and legs[-1].outcome == "checkpoint" and self.agent.resume(ctx, legs, self.k.blobs.get_bytes):
            return self.agent.wake(ctx, ())  # it slept with nothing launched: woken at once
        if not legs or not launched or not self.agent.resume(ctx, legs, self.k.blobs.get_bytes):
            return None
        last = launched[-1]
        if last.refused or not last.launch_blob:
            return None
        action = launch_from_json(self.k.blobs.get_json(last.launch_blob))
        results = run_launch(self.k, ctx, last.launch, action, self.ui.jobs)
        return self.agent.wake(ctx, results)

    def _launch_refusal(self, action: Launch) -> str | None:
        """Why the budget will not run this launch ("<budget>: <arithmetic>"), or None."""
        state = self.k.state()
        jobs = action.jobs[:MAX_JOBS_PER_LAUNCH]
        wall = sum(min(j.timeout_s, MAX_LAUNCH_TIMEOUT_S) for j in jobs)
        in_flight = max(1, sum(1 for a in state.attempts if a.verdict is None and a.gave_up is None))
        stop = launch_refusal(self.contract, state.budget_used, len(jobs), wall, in_flight * self._trial_worst(),
                              self._reserve(), self.contract.compute.max_parallel)
        return f"{stop.name}: {stop.detail}" if stop is not None else None

    def _recorded_submission(self, submitted: AttemptSubmitted) -> Submit:
        """The Submit recorded by `attempt.submitted` (a resume measures exactly what was submitted,
        even if the agent would now propose something else: a changed candidates folder, an LLM)."""
        report = self.k.blobs.get_bytes(submitted.report_blob or "").decode("utf-8")
        return Submit(tree=submitted.tree, report=report, summary=submitted.summary or "",
                      params=dict(submitted.params) if submitted.params is not None else None,
                      invalid=submitted.invalid or None)

    def _record_submission(self, number: int, sub: Submit) -> Submit:
        """Record `attempt.submitted` (once) against the champion now, and return the submission
        as recorded. With several workers the champion may have moved since the agent started:
        the candidate is re-based onto it first (loop.rebase; a conflict keeps the agent's tree,
        and `_submit` rejects it `stale`)."""
        with self.k.guard:
            recorded = self.k.recorded(AttemptSubmitted, attempt=number)
            if recorded is not None:
                return self._recorded_submission(recorded)
            state = self.k.state()
            champion, me = state.champion, state.attempt(number)
            base = me.base_tree if me is not None else None
            if sub.tree is not None and base and champion.tree and base != champion.tree:
                rebased = rebase(self.k.git, base, champion.tree, sub.tree)
                if rebased.tree is not None:
                    sub = replace(sub, tree=rebased.tree, report=f"{sub.report}\n\n(Re-based onto the champion of "
                                  f"attempt {champion.attempt}, promoted after this candidate was built.)")
            report_blob = self.k.blobs.put_bytes(sub.report.encode("utf-8"))
            diff_blob = (keep_attempt(self.k, number, champion.commit or "", champion.tree or "", sub.tree)
                         if sub.tree is not None and champion.tree else None)
            self.k.once(AttemptSubmitted(
                attempt=number, tree=sub.tree, summary=sub.summary, report_blob=report_blob,
                params=dict(sub.params) if sub.params is not None else None, invalid=sub.invalid, diff_blob=diff_blob,
                unresponsive=sub.unresponsive or UNSET,
            ), "attempt")
        return sub

    def _submit(self, number: int, sub: Submit) -> bool:
        """Judge attempt `number`'s recorded submission `sub`: without jobs, or by its trial (and
        confirmation) against the champion it was submitted against, then promote it. Returns False
        when its accepted candidate could not be promoted because the champion moved meanwhile
        (a re-base attempt is due), True otherwise."""
        early = self._judge_without_jobs(number, sub)
        if early is not None:
            self._judged(number, "trial", early, None)
            return True
        assert sub.tree is not None
        if self.agent.reads_history:
            self._measure_dev(number, sub.tree)
        with self.k.guard:  # the trial's number, levels and val block, then its plan recorded: one step
            state = self.k.state()
            planned = self.k.recorded(TrialPlanned, attempt=number, stage="trial")
            trial = planned.trial if planned else state.trials_run + 1
            gate = self.contract.gate
            levels = levels_at_planning(gate.alpha, gate.multiplicity, self.contract.budget.max_attempts, number,
                                        level_timeline(state), confirm=self.confirms)
            me = state.attempt(number)
            champion_tree = (me.against_tree if me is not None else None) or state.champion.tree or ""
            block = self._block(number, state)
            stage = self._plan_stage("trial", number, trial, champion_tree, sub.tree, self.target.looks("trial"),
                                     levels.trial, block)
        outcome = self._measure_stage(number, *stage)
        if outcome.decision.verdict != "accepted":
            return True
        if self.confirms:
            with self.k.guard:
                stage = self._plan_stage("confirm", number, trial, champion_tree, sub.tree,
                                         self.target.looks("confirm", outcome.decision.units), levels.confirm, block)
            confirm = self._measure_stage(number, *stage)
            if confirm.decision.verdict != "accepted":
                return True
            outcome = confirm
        return self._promote(number, sub, outcome)

    def _block(self, number: int, state: RunState) -> int:
        """The val block (0-based) an examples trial of attempt `number` measures: the promotions
        recorded before its trial was planned (now, when it is not planned yet)."""
        planned = self.k.find("trial.planned", attempt=number, stage="trial")
        if planned is None:
            return state.promotions
        return sum(1 for e in self.k.events_of("champion.promoted") if e.seq < planned.seq)

    def _measure_dev(self, number: int, tree: str) -> None:
        """Measure attempt `number`'s candidate alone on what agents may see (Target.dev_jobs: an
        examples target's dev split, job stage `dev`), before its trial: the history shows the next
        attempts this figure instead of anything measured on val. Finished jobs are reused on a
        resume. Raises measure.Interrupted on Ctrl-C."""
        jobs = self.target.dev_jobs(number, tree)
        if jobs:
            self.k.runner(self.target, self.ui.jobs).measure_jobs(jobs, attempt=number, stage="dev")

    def _judge_without_jobs(self, number: int, sub: Submit) -> Decision | None:
        """The decision reached before any job (no_change, duplicate, scope_violation,
        invalid_candidate, stale), judged against the champion the submission was recorded
        against, or None when the candidate is to be measured."""
        state = self.k.state()
        level = 0.0
        if sub.tree is None:
            return Decision.without_jobs("invalid_candidate", sub.invalid or "no candidate tree", level)
        me = state.attempt(number)
        champion = (me.against_tree if me is not None else None) or state.champion.tree or ""
        if me is not None and moved(me) and me.base_tree is not None:
            rebased = rebase(self.k.git, me.base_tree, champion, sub.tree)  # the recorded tree is re-based already
            if rebased.tree is None:
                return stale_decision(state, me, rebased.conflicts)
        if sub.tree == champion:
            return Decision.without_jobs("no_change", "the candidate's tree equals the champion's: nothing to measure",
                                         level)
        measured = {a.tree for a in state.attempts if a.attempt != number and a.units}
        if sub.tree in measured:
            return Decision.without_jobs("duplicate", "this tree was already measured in this run", level)
        scope = self.contract.scope
        report = check_scope(self.k.git.diff_entries(champion, sub.tree), scope.allowed,
                             self.contract.protected_paths, self.contract.hidden_paths)
        if not report.ok:
            return Decision.without_jobs("scope_violation", "; ".join(report.violations)[:1000], level)
        return None

    def _plan_stage(self, stage: Stage, number: int, trial: int, champion_tree: str, candidate_tree: str,
                    looks: tuple[int, ...], level: float, block: int) -> tuple[Plan, TrialPlanned]:
        """Plan `stage` of attempt `number` (champion against candidate on `looks`, an examples target
        on val block `block`) at `level` and record it (`record_plan`)."""
        plan = self.target.plan(stage, number, trial, champion_tree, candidate_tree, looks, block)
        return plan, record_plan(self.k, plan, level, self._margin(stage))

    def _measure_stage(self, number: int, plan: Plan, planned: TrialPlanned) -> TrialOutcome:
        """Walk a recorded plan and record its verdict (`trial.judged`)."""
        outcome = measure_recorded_plan(self.k, self.target, plan, planned, self._margin(plan.stage), self.ui.jobs,
                                        self.ui.look_ended)
        self._judged(number, plan.stage, outcome.decision, outcome)
        return outcome

    def _margin(self, stage: str) -> float:
        """The margin tested as the null (docs/gate.md): the larger of gate.min_effect and
        gate.min_effect_rel x |the mean of the champion this candidate faces|, as last measured
        (the preflight's for the baseline). 0 for the holdout. A resume uses the margin recorded with
        the plan (walk_recorded_plan), never one computed from later events."""
        gate = self.contract.gate
        if stage == "holdout":
            return 0.0
        return margin_for_state(gate.min_effect, gate.min_effect_rel, self.k.state().champion_mean)

    def _judged(self, number: int, stage: str, decision: Decision, outcome: TrialOutcome | None,
                **extra: Any) -> None:
        judged = record_verdict(self.k, number, stage, decision, outcome, **extra)
        self.ui.judged(number, stage, judged)

    # -- promotion and holdout -----------------------------------------------------------------

    def _promote(self, number: int, sub: Submit, outcome: TrialOutcome) -> bool:
        """See `loop.promotion.promote`."""
        return promote(self.k, self.ui, number, sub, outcome)

    def _holdout(self) -> None:
        state = self.k.state()
        if state.holdout is not None:
            return
        self.ui.note("measuring the final champion against the baseline on units no decision used (once)")
        champion = state.champion.tree or ""
        plan = self.target.plan("holdout", NO_ATTEMPT, 0, state.baseline.tree or "", champion,
                                self.target.looks("holdout"))
        outcome = walk_recorded_plan(self.k, self.target, plan, self.contract.gate.alpha, 0.0, self.ui.jobs,
                                     self.ui.look_ended)
        runner = self.k.runner(self.target, self.ui.jobs)
        extras = self.target.holdout_extras(
            champion, outcome.results or {},
            lambda jobs: runner.measure_jobs(jobs, attempt=NO_ATTEMPT, stage="holdout"))
        self._judged(NO_ATTEMPT, "holdout", outcome.decision, outcome, **({"splits": extras} if extras else {}))

    def preflight(self) -> None:
        """See `preflight`."""
        preflight(self.k, self.target, self.ui)


def run_warnings(kernel: Kernel) -> list[str]:
    """The warnings recorded in the run's `run.started` (see life.record_started); [] for runs recorded
    before warnings were."""
    started = kernel.recorded(RunStarted)
    return [str(w) for w in (started.warnings or [])] if started else []
