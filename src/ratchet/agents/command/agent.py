"""The command agent (`agent.kind = "command"`, docs/agents-command.md): any coding-agent CLI, run in its own
workspace under bubblewrap, talking to the kernel through the channel.

One attempt is a conversation of legs. A leg starts the CLI (`[agent.command].command` with the
attempt's prompt, or `wake_command` / `command` with a wake message) and ends when its process
exits: the agent slept (`ratchet-sys sleep`), submitted, or just stopped. The kernel then reads the
channel:
- a submit: the workspace is harvested into a candidate tree -> `Submit`;
- launches: the workspace's clean in-scope files become the experiments' tree -> `Launch`; the
  loop runs the jobs and calls `wake` with their results, delivered into `results/<launch>/<i>/`;
- nothing, from a CLI that exited by itself (exit code 0) with a new change in scope, under
  `agent.command.submit = "on_exit"` (the default): the workspace is harvested as the submission
  (leg outcome `on_exit`), its report read from REPORT.md or the end of the CLI's stdout
  (`submission.py`) -> `Submit`;
- nothing: the agent is woken once with a reminder (a nudge); a second time, the attempt ends
  `gave_up` (`GiveUp(stops_campaign=False)`);
- nothing, from a CLI that did not start (`did_not_start`: bwrap could not run it, or it failed
  within START_GRACE_S with nothing done) or that timed out: the attempt ends at once, unnudged,
  its reason holding the CLI's stderr tail; such attempts count toward `agent.max_idle_attempts`.

Submit and revise: after a verdict that did not promote, the loop asks `can_revise`; a session with
submissions left (`agent.command.max_submits`) is woken in the same workspace (and CLI session) with
the verdict (a leg of kind `revise`, `messages.verdict_text`), and what it submits next is judged as
the next attempt. A revise leg that ends with nothing new ends its attempt (the author declined).

Each leg is charged the tokens and dollars its CLI reported (`core.budget.agent_kinds.leg_charge`,
recorded as `agent.leg` data.charged). Once a model budget is reached no further leg runs: the
attempt ends and the run stops `budget_exhausted` (`stopped_by_budget`). A leg whose CLI reported no
usage while such a budget is limited ends the campaign (`agent_stopped`): its use cannot be counted;
a CLI that did not start (`start_failed`) used none, and its attempt ends as above.

The CLI runs as one job on the local executor the kernel owns (whatever the trials' backend):
stdin /dev/null, its program and that program's install prefix visible read-only (`agent_program`)
with `sandbox.read_only`, only allow-listed variables (`pass_env` names copied from the operator's
environment, nothing else of it), only its workspace and the leg's scratch (HOME, TMPDIR) writable
(the rest of its root read-only: `leg_sandbox`), no network unless `network`, killed
with all its descendants at the leg's time limit or when it exits. Without a working bwrap the
agent is refused (SandboxError, exit 2).

Records go through two callbacks, never to the ledger directly: `record_blob(bytes) -> digest` for
prompts, wake messages, requests, and each leg's command line and output (`output.py`: the end of
its stdout and stderr, kept even when the channel is refused); `record(payload)` for `agent.leg`
and `agent.harvested`. Legs run through a third, `run_job(spec) -> JobResult`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet.agents.base import (
    Action,
    Agent,
    AgentContext,
    GiveUp,
    Launch,
    LaunchJob,
    LaunchResult,
    PastAttempt,
    Submit,
    Verdict,
)
from ratchet.agents.command.artifacts import RESULTS_DIR, deliver_results
from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.legs import (
    PROMPT_FILE,
    WAKE_FILE,
    LegKind,
    LegRun,
    leg_job,
    leg_payload,
)
from ratchet.agents.command.limits import (
    CHANNEL_DIR,
    MAX_SLEEPS_PER_ATTEMPT,
    NUDGES_PER_ATTEMPT,
    REPORT_FILE,
)
from ratchet.agents.command.messages import (
    CHECKPOINT_REASON,
    JobView,
    TaskView,
    prompt_text,
    verdict_text,
    wake_text,
)
from ratchet.agents.command.program import did_not_start, start_problem, stderr_tail
from ratchet.agents.command.queue import (
    QueuedJob,
    QueueWatcher,
    attempt_launches,
    delivered,
    queue_json,
    write_leg_state,
)
from ratchet.agents.command.requests import SLEPT, LaunchRequest, LegRequests, leg_outcome, read_leg
from ratchet.agents.command.submission import exit_report, exits_to_submit, summary_of
from ratchet.agents.command.workspace import Harvest, ScopeRules, create_workspace, harvest
from ratchet.compute.base import JobResult, JobSpec
from ratchet.compute.programs import ProgramReach
from ratchet.compute.sandbox import probe_bwrap
from ratchet.core.budget import BudgetStop, Charge, ResourceName
from ratchet.core.budget.agent_kinds import COMMAND_RESOURCES, command_budget_stop
from ratchet.core.contract import CommandAgentConfig
from ratchet.core.errors import SandboxError
from ratchet.core.payloads import AgentHarvested, AgentLeg
from ratchet.core.vocab import LegOutcome

RecordBlob = Callable[[bytes], str]
"""Store bytes as a blob of the run; returns its digest (the loop passes `kernel.blobs.put_bytes`)."""

Record = Callable[[AgentLeg | AgentHarvested], None]
"""Record one `agent.leg` or `agent.harvested` event."""

Spent = Callable[[], Charge]
"""What the run's command-agent legs were charged so far, re-counted from the ledger (the loop
passes `AgentLink.legs_spent`): input and output tokens, dollars."""

RunJob = Callable[[JobSpec], JobResult]
"""Run one job to its end on the local executor the kernel owns, whatever the trials' backend;
returns its result (the loop passes `AgentLink.run_job`)."""

BUDGET_STOP_PREFIX = "budget_exhausted:"
"""A GiveUp reason starting with this names the model budget that ended the attempt (also in
`CommandAgent.stopped_by_budget`), as the llm agent's do."""


@dataclass(frozen=True)
class CommandSetup:
    """What the kernel hands a command agent. config: `[agent.command]`. project: the project's
    Git (objects of candidate trees go there). rules: the scope. work_dir: returns a kernel-owned
    directory outside the project, the run's own (`a0001/` workspaces go there; asked at each start
    and resume, as the run is known only once its kernel is open). task: what the prompt says.
    dev_examples: an examples target's dev split (JSON-ready values), None otherwise.
    limits: the run's budget limits by resource (`core.budget.limits_of`; empty: none counted).
    read_only: `sandbox.read_only`, bound into the agent's sandbox besides its program's prefixes."""

    config: CommandAgentConfig
    project: Any
    rules: ScopeRules
    work_dir: Callable[[], Path]
    task: TaskView
    dev_examples: Sequence[Any] | None = None
    limits: Mapping[ResourceName, float] = field(default_factory=dict)
    read_only: tuple[str, ...] = ()


@dataclass
class _Attempt:
    """The conversation state of one attempt (kernel memory; the workspace holds the rest)."""

    number: int
    workspace: Path
    legs: int = 0
    sleeps: int = 0
    nudges: int = 0
    names: set[str] = field(default_factory=set)
    pending: list[tuple[LaunchRequest, int]] = field(default_factory=list)
    queue: list[QueuedJob] = field(default_factory=list)
    note: str = ""
    notices: list[str] = field(default_factory=list)
    session: str | None = None
    history: tuple[PastAttempt, ...] = ()
    submits: int = 0
    """Submissions the session made so far (its attempts share one workspace and CLI session)."""
    submitted: str | None = None
    """The tree of the session's last submission (None: none yet)."""
    report: str | None = None
    """The report of the session's last submission (None: none yet)."""


class CommandAgent(Agent):
    """The Agent protocol over a coding-agent CLI (see the module docstring).

    record_blob / record / run_job: see RecordBlob, Record and RunJob. budget_view: returns what the agent may read
    of the budget (shown by `ratchet-sys budget` and in wake messages), or None. wall_left: seconds
    `budget.max_wall` still allows (None: unlimited); a leg's limit is the smaller of it and
    `timeout_s`. spent: what the run's legs were charged so far (see Spent; None: nothing is
    counted). environ: where `pass_env` values are read (default os.environ). bwrap: the
    bubblewrap executable probed (default: found on PATH). launches_view: returns the run's launches
    so far, earlier attempts' included (rows of `queue.launch_summary`, shown by `ratchet-sys
    launches`), or None: this attempt's only. siblings_view: given this attempt's number, the jobs of
    the run's other attempts' launches (several workers: `loop.agents.sibling_jobs`), listed after
    this attempt's by `ratchet-sys queue`; None: this attempt's only.
    Raises SandboxError `agent.sandbox_unavailable` (exit 2) when bwrap does not work here.
    """

    def __init__(self, setup: CommandSetup, record_blob: RecordBlob, record: Record, run_job: RunJob, *,
                 budget_view: Callable[[], Mapping[str, Any]] | None = None,
                 wall_left: Callable[[], float | None] | None = None, spent: Spent | None = None,
                 environ: Mapping[str, str] | None = None, bwrap: str | None = None,
                 launches_view: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
                 siblings_view: Callable[[int], Sequence[Mapping[str, Any]]] | None = None):
        status = probe_bwrap(bwrap)
        if not status.available:
            raise SandboxError(
                "agent.sandbox_unavailable",
                f"agent.kind = \"command\" runs the agent under bubblewrap, which does not work here: {status.reason}",
                hint="install bubblewrap and allow unprivileged user namespaces",
            )
        self.setup = setup
        self.record_blob = record_blob
        self.record = record
        self.run_job = run_job
        self.budget_view = budget_view
        self.wall_left = wall_left
        self.spent = spent
        self.environ = os.environ if environ is None else environ
        self.launches_view = launches_view
        self.siblings_view = siblings_view
        self.attempt: _Attempt | None = None

    # -- the protocol ----------------------------------------------------------------------------

    def start(self, ctx: AgentContext) -> Action:
        """Seed a fresh workspace for `ctx.attempt` (an earlier one at the same path is replaced),
        write the prompt and run the first leg; nothing when a model budget is already reached."""
        reached = self._reached(f"attempt {ctx.attempt} not started")
        if reached is not None:
            return reached
        if ctx.revising is not None:
            return self._revise(ctx, ctx.revising)
        self.attempt = _Attempt(ctx.attempt, self._new_workspace(ctx, ctx.champion_tree), history=ctx.history)
        return self._leg(ctx, "start", self._prompt(ctx))

    def can_revise(self, attempt: int) -> bool:
        """True when this agent's live session submitted attempt `attempt` and has submissions left
        (`agent.command.max_submits`); a kernel restart forgets the session (a new attempt is fresh)."""
        att = self.attempt
        return (att is not None and att.number == attempt and att.submitted is not None
                and att.submits < self.setup.config.max_submits)

    def _revise(self, ctx: AgentContext, verdict: Verdict) -> Action:
        """Attempt `ctx.attempt` revises attempt `verdict.attempt`: the live session goes on in its
        workspace, woken with the verdict; after a kernel restart (the session is gone), a fresh
        workspace seeded with the revised candidate's tree and a fresh session told the task, the
        verdict and the change's diff."""
        att = self.attempt
        cfg = self.setup.config
        if att is not None and att.number == verdict.attempt and att.submitted is not None:
            self.attempt = att = _Attempt(ctx.attempt, att.workspace, names=att.names, session=att.session,
                                          history=ctx.history, submits=att.submits, submitted=att.submitted,
                                          report=att.report)
        else:
            ws = self._new_workspace(ctx, verdict.tree or ctx.champion_tree)
            self.attempt = att = _Attempt(ctx.attempt, ws, history=ctx.history, submits=verdict.submission,
                                          submitted=verdict.tree)
        resumed = bool(cfg.wake_command and att.session)
        diff = None if resumed else self.setup.project.diff_text(ctx.champion_tree, verdict.tree or ctx.champion_tree)
        message = verdict_text(verdict, ctx.attempt, cfg.max_submits, diff)
        if resumed:
            message += "\n" + wake_text(att.number, att.legs + 1, "You may revise your change.", [], [], "",
                                        self._budget(), on_exit=self._on_exit)
        else:
            message += "\n" + self._prompt(ctx)
        return self._leg(ctx, "revise", message)

    def _new_workspace(self, ctx: AgentContext, tree: str) -> Path:
        """A fresh workspace for attempt `ctx.attempt` seeded from `tree` (an earlier one at the same
        path is replaced)."""
        base = self.setup.work_dir() / f"a{ctx.attempt:04d}"
        if base.exists():
            shutil.rmtree(base)
        base.mkdir(parents=True)
        s = self.setup
        return create_workspace(s.project, tree, base / "workspace", s.rules, s.dev_examples)

    def _prompt(self, ctx: AgentContext) -> str:
        """The attempt's prompt (messages.prompt_text) for this contract's task and submit mode."""
        task = self.setup.task
        if self.setup.dev_examples is not None:
            task = TaskView(task.brief, task.target, task.allowed, task.protected, f"{CHANNEL_DIR}/data/dev.jsonl")
        return prompt_text(ctx.attempt, ctx.champion_tree, task, ctx.history, on_exit=self._on_exit)

    @property
    def _on_exit(self) -> bool:
        """Whether a session also submits by exiting with changes (`agent.command.submit`)."""
        return self.setup.config.submit == "on_exit"

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]) -> Action:
        """Deliver the launches' results into the channel and run the next leg (no results after
        a checkpoint: the agent slept with nothing launched)."""
        att = self._current(ctx)
        checkpoint = not att.pending and not results
        jobs = self._deliver(att, results)
        reason = (CHECKPOINT_REASON if checkpoint else
                  f"Your {len(jobs)} launched job(s) finished; their results follow.")
        message = wake_text(att.number, att.legs + 1, reason, jobs, att.notices, att.note, self._budget(),
                            on_exit=self._on_exit)
        att.notices, att.note, att.pending = [], "", []
        return self._leg(ctx, "wake", message)

    def resume(self, ctx: AgentContext, legs: Sequence[AgentLeg], read_blob: Callable[[str], bytes]) -> bool:
        """Rebuild the conversation of attempt `ctx.attempt` after a kernel restart, from the
        payloads of its recorded `agent.leg` events (in order; `read_blob` reads a recorded blob). True when
        the last recorded leg ended in launches and the workspace is still there: the loop then
        runs those launches (reusing finished jobs) and calls `wake` once (after a `checkpoint`
        leg: `wake` with no results). False otherwise: the loop
        calls `start` (the attempt begins again in a fresh workspace)."""
        workspace = self.setup.work_dir() / f"a{ctx.attempt:04d}" / "workspace"
        if not legs or legs[-1].outcome not in SLEPT or not (workspace / CHANNEL_DIR).is_dir():
            return False
        att = _Attempt(ctx.attempt, workspace.resolve(), legs=len(legs), history=ctx.history)
        for leg in legs:
            att.nudges += leg.leg_kind == "nudge"
            if leg.outcome not in SLEPT or not leg.requests_blob:
                continue
            att.sleeps += 1
            recorded = json.loads(read_blob(leg.requests_blob))
            launches = [LaunchRequest.model_validate(r, strict=False) for r in recorded["launches"]]
            att.names.update(r.name for r in launches)
            att.pending = [(r, i) for r in launches for i in range(r.array)]
            att.queue += [QueuedJob(r.name, i, r.command, r.why) for r, i in att.pending]
            att.note = (recorded.get("sleep") or {}).get("note", "")
            att.notices = list(recorded.get("notices") or [])
        delivered(att.workspace, att.queue, RESULTS_DIR)  # earlier legs' results, as delivered then
        self.attempt = att
        return True

    def budget_stop(self) -> BudgetStop | None:
        """The model budget (input or output tokens, dollars) the run's legs have reached, or None
        (`core.budget.agent_kinds.command_budget_stop`): checked before each attempt and after each leg."""
        if self.spent is None:
            return None
        return command_budget_stop(self.setup.limits, self.spent())

    def _current(self, ctx: AgentContext) -> _Attempt:
        if self.attempt is None or self.attempt.number != ctx.attempt:
            raise ChannelError("channel.no_attempt", f"attempt {ctx.attempt} was never started by this agent",
                               hint="call start() for the attempt first")
        return self.attempt

    # -- one leg ---------------------------------------------------------------------------------

    def _leg(self, ctx: AgentContext, kind: LegKind, message: str) -> Action:
        att = self._current(ctx)
        reached = self._reached(f"leg {att.legs + 1} of attempt {att.number} not run")
        if reached is not None:
            return reached
        att.legs += 1
        name = PROMPT_FILE if kind == "start" else WAKE_FILE
        run = LegRun()
        try:
            self._prepare_channel(att, name, message)
            spec, reach = self._leg_spec(att, kind, name, message)
            began = time.time_ns()
            with QueueWatcher(att.workspace, lambda: queue_json(att.queue, self._siblings(att))):  # mid-leg
                run = LegRun(spec.argv, self.run_job(spec))
            with Channel(att.workspace) as channel:
                requests = read_leg(channel, att.names)
        except ChannelError as exc:  # the leg's output is kept all the same: it says what the agent did
            charge = self._record_leg(att, kind, message, run, None, "channel_refused", exc.message)
            return self._budget_end(att, run.result, charge) or GiveUp(f"the channel was refused: {exc.message}",
                                                                       stops_campaign=False)
        assert run.result is not None
        outcome = leg_outcome(requests)
        if outcome == "none" and did_not_start(run.result, att.workspace, began):
            problem = start_problem(run.result, reach)
            charge = self._record_leg(att, kind, message, run, requests, "start_failed", problem)
            # A CLI that did not start used no model (unless it said otherwise): no usage is no stop.
            ended = self._budget_end(att, run.result, charge) if charge is not None else None
            return ended or GiveUp(problem, stops_campaign=False, unresponsive=True)
        exited = self._exit_harvest(ctx, att, run.result) if outcome == "none" else None
        charge = self._record_leg(att, kind, message, run, requests, "on_exit" if exited else outcome, None)
        ended = self._budget_end(att, run.result, charge)
        if ended is not None:
            return ended
        if exited is not None:
            return self._exit_submit(att, exited, run.result)
        return self._decide(ctx, att, requests, run.result, kind)

    def _exit_harvest(self, ctx: AgentContext, att: _Attempt, result: JobResult) -> Harvest | None:
        """On `submit = "on_exit"`: the workspace harvested as a submission when the CLI exited by
        itself (exit code 0) with a new change in scope (taken paths, a tree other than the session's
        last submission); None otherwise."""
        if not self._on_exit or not exits_to_submit(result):
            return None
        s = self.setup
        got = harvest(s.project, ctx.champion_tree, att.workspace, s.rules, use="submit")
        return got if got.taken and got.tree != att.submitted else None

    def _exit_submit(self, att: _Attempt, got: Harvest, result: JobResult) -> Submit:
        """The Submit of a session that exited with changes: the harvested tree, the report from
        REPORT.md or the end of the CLI's stdout."""
        report, source = exit_report(att.workspace, result.stdout_tail, att.report)
        self.record(AgentHarvested(attempt=att.number, leg=att.legs, use="submit", **got.to_json()))
        att.submits, att.submitted, att.report = att.submits + 1, got.tree, report
        if source == REPORT_FILE:
            return Submit(tree=got.tree, report=report, summary=summary_of(report))
        if source == "stdout":
            report = f"(the session wrote no {REPORT_FILE}; the end of its output follows)\n\n{report}"
        return Submit(tree=got.tree, report=report, summary=f"(exited with changes in scope, no {REPORT_FILE})")

    def _budget_end(self, att: _Attempt, result: JobResult | None, charge: Charge | None) -> GiveUp | None:
        """How the attempt ends after a leg that ran when a model budget is limited: its budget
        reached (the run stops `budget_exhausted`), or its use unknown (the campaign stops). None:
        the leg's action goes on."""
        limited = [r for r in COMMAND_RESOURCES if self.setup.limits.get(r)]
        if result is None or not limited or self.spent is None:
            return None
        if charge is None:
            budget = f"budget.max_{limited[0]}"
            return GiveUp(f"leg {att.legs} of attempt {att.number}: the agent's CLI reported no usage (a `usage` "
                          f"object or a cost in its JSON output), so {budget} cannot be counted")
        return self._reached(f"leg {att.legs} of attempt {att.number} reached it")

    def _reached(self, what: str) -> GiveUp | None:
        """The GiveUp ending the attempt when a model budget is reached (`stopped_by_budget` set:
        the run stops `budget_exhausted`), or None. `what` says what it did to the attempt."""
        stop = self.budget_stop()
        if stop is None:
            return None
        self.stopped_by_budget = stop
        return GiveUp(f"{BUDGET_STOP_PREFIX}{stop.name}: budget.{stop.name} is reached; {what}", stops_campaign=False)

    def _prepare_channel(self, att: _Attempt, name: str, message: str) -> None:
        """Refresh the tool and write the message and the state files `ratchet-sys` reads
        (`queue.write_leg_state`)."""
        history = {"attempt": att.number, "leg": att.legs, "sleeps_used": att.sleeps,
                   "sleeps_left": MAX_SLEEPS_PER_ATTEMPT - att.sleeps, "launch_names_used": sorted(att.names),
                   "earlier_attempts": [{"attempt": a.attempt, "verdict": a.verdict, "reason": a.reason,
                                         "candidate_mean": a.candidate_mean, "dev_mean": a.dev_mean}
                                        for a in att.history]}
        write_leg_state(att.workspace, name, message, att.queue, self._launches(att), self._budget() or {}, history,
                        self._siblings(att))

    def _launches(self, att: _Attempt) -> Sequence[Mapping[str, Any]]:
        """`state/launches.json`: the run's launches so far (`launches_view`), else this attempt's."""
        if self.launches_view is not None:
            return list(self.launches_view())
        return attempt_launches(att.number, att.queue)

    def _siblings(self, att: _Attempt) -> list[Mapping[str, Any]]:
        """The other attempts' launched jobs (`siblings_view`), [] without one."""
        return list(self.siblings_view(att.number)) if self.siblings_view is not None else []

    def _budget(self) -> Mapping[str, Any] | None:
        return self.budget_view() if self.budget_view is not None else None

    def _leg_spec(self, att: _Attempt, kind: LegKind, name: str, message: str) -> tuple[JobSpec, ProgramReach]:
        """The job that runs the CLI for one leg (`legs.leg_job`) and where its program was found."""
        return leg_job(self.setup.config, self.setup.read_only, self.environ, att.workspace,
                       f"a{att.number:04d}-leg{att.legs:02d}", kind, name, message, att.session,
                       self.wall_left() if self.wall_left is not None else None)

    def _record_leg(self, att: _Attempt, kind: LegKind, message: str, run: LegRun,
                    requests: LegRequests | None, outcome: LegOutcome, problem: str | None) -> Charge | None:
        """Record the leg's `agent.leg` (`legs.leg_payload`) and note the session its CLI reported;
        returns what it was charged (None: its use is unknown)."""
        cfg = self.setup.config
        payload, charge, report = leg_payload(att.number, att.legs, kind, message, run, requests, outcome, problem,
                                              cfg, self.record_blob)
        if report is not None and report.session_id:
            if att.session and kind != "start" and report.session_id != att.session and cfg.wake_command:
                att.notices.append(f"the CLI answered in session {report.session_id}, not {att.session}")
            att.session = report.session_id
        self.record(payload)
        return charge

    # -- what the leg asked ----------------------------------------------------------------------

    def _decide(self, ctx: AgentContext, att: _Attempt, requests: LegRequests, result: JobResult,
                kind: LegKind) -> Action:
        att.notices += requests.notices
        if requests.submit is not None:
            return self._submit(ctx, att, requests)
        if requests.launches or requests.sleep is not None:  # a sleep without launches: a checkpoint
            att.sleeps += 1
            if att.sleeps > MAX_SLEEPS_PER_ATTEMPT:
                return GiveUp(f"more than {MAX_SLEEPS_PER_ATTEMPT} sleeps in one attempt", stops_campaign=False)
            att.note = requests.sleep.note if requests.sleep else ""
            return self._launch(ctx, att, requests.launches) if requests.launches else Launch(jobs=(), note=att.note)
        ended = f"the agent's process ended ({result.reason}) without a launch or a submit"
        if result.state == "timeout":  # a stuck CLI: a reminder would cost another timeout_s
            return GiveUp(f"{ended}: {stderr_tail(result)}", stops_campaign=False, unresponsive=True)
        if kind == "revise":  # told the verdict, the author chose not to revise: the session ends
            return GiveUp(f"the agent did not revise its submission ({result.reason}, no request and no new change)",
                          stops_campaign=False)
        if att.nudges >= NUDGES_PER_ATTEMPT:
            return GiveUp(f"{ended}, again after a reminder", stops_campaign=False, unresponsive=True)
        att.nudges += 1
        what = "a request or a change in scope" if self._on_exit else "a request"
        reason = (f"You ended your session without {what} ({result.reason}). Launch experiments and "
                  "sleep, or submit your change with a report. This is the only reminder: ending again "
                  f"without {what} ends the attempt.")
        message = wake_text(att.number, att.legs + 1, reason, [], att.notices, "", self._budget(),
                            on_exit=self._on_exit)
        att.notices = []
        return self._leg(ctx, "nudge", message)

    def _submit(self, ctx: AgentContext, att: _Attempt, requests: LegRequests) -> Submit:
        s = self.setup
        assert requests.submit is not None
        got = harvest(s.project, ctx.champion_tree, att.workspace, s.rules, use="submit")
        self.record(AgentHarvested(attempt=att.number, leg=att.legs, use="submit", **got.to_json()))
        att.submits, att.submitted, att.report = att.submits + 1, got.tree, requests.submit.report.strip()
        summary = requests.submit.summary or (requests.submit.report.strip().splitlines() or ["(no summary)"])[0][:200]
        return Submit(tree=got.tree, report=requests.submit.report, summary=summary)

    def _launch(self, ctx: AgentContext, att: _Attempt, launches: Sequence[LaunchRequest]) -> Launch:
        s = self.setup
        got = harvest(s.project, ctx.champion_tree, att.workspace, s.rules, use="launch")
        self.record(AgentHarvested(attempt=att.number, leg=att.legs, use="launch", **got.to_json()))
        jobs = []
        for request in launches:
            for i in range(request.array):
                jobs.append(LaunchJob(
                    name=f"{request.name}[{i}]", command=request.command, timeout_s=request.minutes * 60.0,
                    tree=got.tree, seed=i, env={"SWEEP_INDEX": str(i)}, artifacts=tuple(request.artifacts),
                    group=request.name, max_parallel=request.concurrency,
                ))
                att.pending.append((request, i))
                att.queue.append(QueuedJob(request.name, i, request.command, request.why))
        return Launch(jobs=tuple(jobs), note=att.note)

    def _deliver(self, att: _Attempt, results: Sequence[LaunchResult]) -> list[JobView]:
        """Deliver the launches' results into the channel (`artifacts.deliver_results`), settle the
        queue; the views for the wake message."""
        views = deliver_results(att.workspace, att.pending, results, att.queue)
        if len(results) != len(att.pending):
            att.notices.append(f"{len(att.pending)} jobs were launched but {len(results)} results came back")
        return views
