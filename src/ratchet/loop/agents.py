"""Building the run's agent from the contract (`agent.kind`), before the run's kernel is open (so a
bad agent setting stops `ratchet run` before anything is recorded), with a link through which the
agent records to that kernel once it is, and what the link reads back for it: the legs' spending,
the run's launches (`launch_summaries`, shown by `ratchet-sys launches`), the llm agent's journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet.agents.base import Agent, PastAttempt
from ratchet.compute.base import JobResult, JobSpec, run_jobs
from ratchet.core.budget import Account, Charge, Reservation, Settlement, limits_of, spent_of, standing
from ratchet.core.contract import Contract
from ratchet.core.events import Event
from ratchet.core.payloads import (
    AgentHarvested,
    AgentLaunched,
    AgentLeg,
    JobFinished,
    ModelCalled,
    ModelReserved,
    RunStarted,
    TrialJudged,
    given,
)
from ratchet.loop.kernel import Kernel
from ratchet.targets.examples import Example, ExampleData
from ratchet.workspace.git import Git

EVENT_KEYS: Mapping[str, tuple[str, ...]] = {AgentLeg.kind: ("attempt", "leg"),
                                             AgentHarvested.kind: ("attempt", "leg", "use")}
"""What makes an agent's record unique (a resume replaying a leg records nothing twice)."""


@dataclass
class AgentLink:
    """The agent's way to the run's kernel (set by `bind` once the kernel is open); `on_bind`
    callbacks run then (the llm agent rebuilds its model budget from the ledger)."""

    kernel: Kernel | None = None
    on_bind: list[Callable[[Kernel], None]] = field(default_factory=list)

    def bind(self, kernel: Kernel) -> None:
        """Attach the open kernel and run the `on_bind` callbacks."""
        self.kernel = kernel
        for callback in self.on_bind:
            callback(kernel)

    def _k(self) -> Kernel:
        if self.kernel is None:
            raise RuntimeError("the agent recorded before the run's kernel was open")
        return self.kernel

    def work_dir(self) -> Path:
        """The run's own agent work directory (`Kernel.agent_dir`), outside the project."""
        return self._k().agent_dir

    def put_bytes(self, data: bytes) -> str:
        """Store bytes as a blob of the run; returns its digest."""
        return self._k().blobs.put_bytes(data)

    def record(self, payload: AgentLeg | AgentHarvested) -> None:
        """Record an agent event once (see EVENT_KEYS)."""
        self._k().once(payload, *EVENT_KEYS.get(payload.kind, ("attempt",)))

    def run_job(self, spec: JobSpec) -> JobResult:
        """Run one job of the agent's own (a command agent's leg) to its end on the kernel's agent
        executor (local, whatever `compute.backend`); its result."""
        (result,) = run_jobs(self._k().agent_executor, [spec])
        return result

    def budget_view(self) -> Mapping[str, Any]:
        """What an agent may read of the budget: each limited budget's use, limit, what is left and its
        unit (`core.budget.standing`)."""
        k = self._k()
        state = k.state()
        val_trials = state.trials_run if k.contract.target.kind == "examples" else 0
        return standing(limits_of(k.contract), spent_of(state.budget_used, val_trials) + self.legs_spent())

    def launches_view(self) -> list[dict[str, Any]]:
        """The run's agent launches so far, every attempt's, as `ratchet-sys launches` shows them
        (`launch_summaries`)."""
        return launch_summaries(self._k())

    def siblings_view(self, attempt: int) -> list[dict[str, Any]]:
        """The jobs of the launches of the run's attempts other than `attempt` that are still in
        flight (`sibling_jobs`), for `ratchet-sys queue`."""
        return sibling_jobs(self._k(), attempt)

    def legs_spent(self) -> Charge:
        """What the run's command-agent legs were charged (input and output tokens, dollars), re-added
        from the `charged` of its `agent.leg` events: a resume counts what earlier sessions spent."""
        return legs_spent(self._k().log.events)

    def wall_left(self) -> float | None:
        """Seconds `budget.max_wall` still allows (None: unlimited)."""
        k = self._k()
        limit = k.contract.budget.max_wall_s
        return max(0.0, limit - k.state().budget_used.wall_s) if limit else None


def make_agent(contract: Contract, root: Path, git: Git, link: AgentLink, data: ExampleData | None = None) -> Agent:
    """The agent named by `agent.kind`, seeing trees through a view that hides `scope.hidden` and
    `target.examples`. Raises ContractError / DataError / SandboxError (exit 2) for a bad setting."""
    from ratchet.agents.view import AgentTreeView

    view = AgentTreeView(git, contract.hidden_paths)
    kind = contract.agent.kind
    if kind == "search":
        from ratchet.agents.search import SearchAgent

        assert contract.agent.search is not None
        search = SearchAgent(contract.agent.search, contract.target.direction, view)

        def warm(kernel: Kernel) -> None:  # a resume reads the history the run recorded when it started
            search.warm = warm_history(kernel)

        link.on_bind.append(warm)
        return search
    if kind == "command":
        from ratchet.agents.command.factory import build_command_agent

        dev = [{"input": ex.input, "expected_output": ex.expected_output} for ex in data.split.dev] if data else None
        return build_command_agent(contract, root, git, link.work_dir, link.put_bytes, link.record, link.run_job,
                                   dev_examples=dev, budget_view=link.budget_view, wall_left=link.wall_left,
                                   spent=link.legs_spent, launches_view=link.launches_view,
                                   siblings_view=link.siblings_view if contract.agent.workers > 1 else None)
    if kind == "llm":
        return _llm_agent(contract, root, view, link, data)
    from ratchet.agents.files import FilesAgent, list_candidates

    assert contract.agent.files is not None
    folder = root / contract.agent.files.path
    list_candidates(folder)  # fail now (exit 2) when the folder is missing
    return FilesAgent(folder, view)


def make_agents(contract: Contract, root: Path, git: Git, link: AgentLink, data: ExampleData | None = None
                ) -> list[Agent]:
    """The agents of the run's `agent.workers` workers: one shared instance for an agent that
    proposes at once (search, files: `Agent.proposes_at_once`), else one per worker (a command
    agent's CLI sessions; llm agents sharing one model budget, replayed from the ledger once).
    Raises what `make_agent` raises."""
    first = make_agent(contract, root, git, link, data)
    workers = contract.agent.workers
    if workers == 1 or first.proposes_at_once:
        return [first]
    agents = [first] + [make_agent(contract, root, git, link, data) for _ in range(workers - 1)]
    if contract.agent.kind == "llm":
        from ratchet.agents.llm.agent import LlmAgent

        def share(kernel: Kernel) -> None:  # after each agent's own replay: one Account for them all
            budget = agents[0].client.budget if isinstance(agents[0], LlmAgent) else None
            for agent in agents:
                if isinstance(agent, LlmAgent) and budget is not None:
                    agent.client.budget = budget

        link.on_bind.append(share)
    return agents


def warm_history(kernel: Kernel) -> tuple[PastAttempt, ...]:
    """The earlier runs' trials the run warm-starts from, as its `run.started` recorded them
    (loop.warm_start; () when it records none): a resume reads the same blob."""
    from ratchet.loop.warm_start import history_of

    started = kernel.recorded(RunStarted)
    warm = given(started.warm_start) if started is not None else None
    if not warm:
        return ()
    return history_of(kernel.blobs.get_json(str(warm["blob"]))["trials"])


def reads_history(contract: Contract) -> bool:
    """Whether the agent `agent.kind` names reads earlier attempts' results (`Agent.reads_history`
    of its class), known without building it (`ratchet check`)."""
    from ratchet.agents.command.agent import CommandAgent
    from ratchet.agents.files import FilesAgent
    from ratchet.agents.llm.agent import LlmAgent
    from ratchet.agents.search import SearchAgent

    kinds: dict[str, type[Agent]] = {"search": SearchAgent, "command": CommandAgent, "llm": LlmAgent,
                                     "files": FilesAgent}
    return kinds[contract.agent.kind].reads_history


def _llm_agent(contract: Contract, root: Path, view: Any, link: AgentLink, data: ExampleData | None) -> Agent:
    from ratchet.agents.llm.agent import LlmAgent

    limits = limits_of(contract)
    dev = {ex.id: ex for ex in data.split.dev} if data is not None else {}
    agent = LlmAgent.build(contract, root, view, Account(limits), LedgerJournal(link), LedgerEvidence(link, dev))

    def replay(kernel: Kernel) -> None:  # a resume: what earlier sessions spent and reserved stays charged
        agent.client.budget = Account.replay(limits, model_budget_records(kernel))

    link.on_bind.append(replay)
    return agent


# --- the llm agent's journal and evidence -----------------------------------------------------------


class LedgerJournal:
    """The llm agent's Journal over the run's ledger: prompts and replies as blobs (fsynced before
    they are used), `model.reserved` before each request is sent, `model.called` when it ended."""

    def __init__(self, link: AgentLink):
        self.link = link

    def put_blob(self, data: bytes) -> str:
        """Store bytes as a durable blob; returns its digest."""
        return self.link.put_bytes(data)

    def get_blob(self, digest: str) -> bytes:
        """The bytes of a stored blob (LedgerError when missing or corrupt)."""
        return self.link._k().blobs.get_bytes(digest)

    def record_reservation(self, reservation: Reservation, request_digest: str, request_blob: str) -> None:
        """`model.reserved`: the call's worst case is held (recorded before the request is sent)."""
        self.link._k().record(ModelReserved(key=reservation.key, charge=reservation.charge.to_json(),
                                            request_digest=request_digest, request_blob=request_blob))

    def record_call(self, record: Any) -> None:
        """`model.called`: how the call ended and what it was charged."""
        self.link._k().record(ModelCalled(**record.to_json()))

    def find_call(self, key: str) -> Any:
        """The latest recorded call of slot `key`, or None (a resume reuses its reply)."""
        from ratchet.agents.llm.records import CallRecord

        called = self.link._k().recorded(ModelCalled, key=key)
        return CallRecord.from_payload(called) if called is not None else None


def legs_spent(events: Iterable[Event]) -> Charge:
    """The sum of the `charged` of the `agent.leg` events among `events` (legs without one add nothing)."""
    total = Charge()
    for e in events:
        charged = given(e.payload.charged) if isinstance(e.payload, AgentLeg) else None
        if charged:
            total = total + Charge.from_json(charged)
    return total


def model_budget_records(kernel: Kernel) -> list[Reservation | Settlement]:
    """The run's model reservations and settlements in ledger order (Account.replay's input)."""
    out: list[Reservation | Settlement] = []
    for e in kernel.log.events:
        payload = e.payload
        if isinstance(payload, ModelReserved):
            out.append(Reservation(payload.key, Charge.from_json(payload.charge)))
        elif isinstance(payload, ModelCalled):
            out.append(Settlement(payload.key, Charge.from_json(payload.charged)))
    return out


class LedgerEvidence:
    """What the llm agent may know of the run, from its folded state: the champion's figures and
    each judged attempt's verdict, estimate and bound (never unit seeds, never holdout figures). On
    an examples target nothing measured on val: the dev pass rates, and of each attempt only what
    `loop.history.past_attempts` shows (promoted or not, or a reason decided without jobs)."""

    def __init__(self, link: AgentLink, dev: Mapping[str, Example] | None = None):
        self.link = link
        self.dev = dict(dev or {})

    def _examples(self) -> bool:
        return self.link._k().contract.target.kind == "examples"

    def champion(self, ctx: Any) -> Any:
        """The champion's mean as last measured (RunState.champion_mean: the preflight's, then each
        trial's champion side, then the promoted candidate's) and the units of the last trial that
        measured it, or None when it was never measured. Examples targets: its dev pass rate (the
        preflight's, then the promoted candidate's dev measurement) over the dev split."""
        from ratchet.agents.llm.briefing import ChampionFigures
        from ratchet.loop.history import champion_dev_mean

        k = self.link._k()
        state = k.state()
        if self._examples():
            dev = champion_dev_mean(state)
            started = k.recorded(RunStarted)
            sizes = (started.examples or {}).get("sizes", {}) if started is not None else {}
            return None if dev is None else ChampionFigures(dev, None, None, int(sizes.get("dev", 0)))
        mean = state.champion_mean
        if mean is None:
            return None
        judged = [p for e in k.events_of("trial.judged")
                  if isinstance(p := e.payload, TrialJudged) and p.stage == "trial"]
        return ChampionFigures(mean, None, None, judged[-1].units if judged else 0)

    def attempts(self, ctx: Any) -> list[Any]:
        """One summary per judged attempt, oldest first (examples targets: as `past_attempts` shows
        it, the dev pass rate leading the summary, no estimate or bound)."""
        from ratchet.agents.llm.briefing import AttemptSummary
        from ratchet.loop.history import past_attempts

        state = self.link._k().state()
        examples = self._examples()
        shown = {p.attempt: p for p in past_attempts(state, examples)}
        out = []
        for a in state.attempts:
            if a.attempt not in shown or a.attempt >= ctx.attempt:
                continue
            p = shown[a.attempt]
            if examples:
                dev = "not measured" if p.dev_mean is None else f"{p.dev_mean:.6g}"
                out.append(AttemptSummary(a.attempt, f"dev pass rate {dev}; {a.summary or ''}", p.verdict, p.reason))
                continue
            bound = a.interval[0] if a.interval else None
            out.append(AttemptSummary(a.attempt, a.summary or "", p.verdict, p.reason, a.estimate, bound))
        return out

    def dev_failures(self, ctx: Any) -> list[Any]:
        """Examples targets: the dev examples the champion did not pass in its dev measurement (the
        preflight's, then the promoted candidate's), with their input and expected output; the run
        keeps only pass / fail per example, so `actual` says how the example ended instead of the
        output. Never a val or test example (`dev` holds the dev split alone). [] for a benchmark."""
        from ratchet.agents.llm.briefing import DevFailure
        from ratchet.loop.history import champion_dev_failures, champion_dev_source
        from ratchet.loop.prompt_eval import dev_replies
        from ratchet.targets.examples import json_text

        k = self.link._k()
        replies = dev_replies(k, *champion_dev_source(k.state())) if k.contract.target.solution_kind == "prompt" \
            else {}
        out = []
        for example_id, status in champion_dev_failures(k.state()):
            ex = self.dev.get(example_id)
            if ex is not None and example_id in replies:  # a prompt solution: the model's reply, the check's reason
                out.append(DevFailure(ex.input, json_text(ex.expected_output), *replies[example_id]))
            elif ex is not None:
                out.append(DevFailure(ex.input, json_text(ex.expected_output),
                                      f"(the output is not kept; the example ended: {status})", status))
        return out


def launch_summaries(kernel: Kernel) -> list[dict[str, Any]]:
    """The run's launches so far, from its ledger: for each `agent.launched` in order, one row per
    launch name (a job's `group`, else its name) with its job count and how many of its jobs ended
    in each state (`queued` while a job has no `job.finished`; `agents.command.queue.launch_summary`).
    A launch the budget refused is one row with its reason."""
    from ratchet.agents.command.queue import job_state, launch_summary

    finished = {p.job_id: p for e in kernel.events_of("job.finished") if isinstance(p := e.payload, JobFinished)}
    rows: list[dict[str, Any]] = []
    for event in kernel.events_of("agent.launched"):
        launched = event.payload
        assert isinstance(launched, AgentLaunched)
        if launched.refused:
            rows.append(launch_summary(launched.attempt, launched.launch, None, [], refused=launched.refused))
            continue
        asked = kernel.blobs.get_json(launched.launch_blob)["jobs"] if launched.launch_blob else []
        by_name: dict[str, list[str]] = {}
        for job_id, job in zip(launched.jobs, asked, strict=False):
            done = finished.get(job_id)
            by_name.setdefault(job.get("group") or job["name"], []).append(job_state(done.state if done else None))
        rows += [launch_summary(launched.attempt, launched.launch, name, states) for name, states in by_name.items()]
    return rows


def sibling_jobs(kernel: Kernel, attempt: int) -> list[dict[str, Any]]:
    """Every job launched by the run's attempts other than `attempt` that are not yet judged (nor
    given up), in launch order: {attempt, worker, launch (its group, else its name), index (in its
    launch), command, why (the launch's note), state (`agents.command.queue.job_state`)}."""
    from ratchet.agents.command.queue import job_state

    state = kernel.state()
    open_attempts = {a.attempt: a.worker for a in state.attempts
                     if a.attempt != attempt and a.verdict is None and a.gave_up is None}
    rows: list[dict[str, Any]] = []
    for event in kernel.events_of("agent.launched"):
        launched = event.payload
        if not isinstance(launched, AgentLaunched) or launched.attempt not in open_attempts or not launched.launch_blob:
            continue
        asked = kernel.blobs.get_json(launched.launch_blob)["jobs"]
        for index, (job_id, job) in enumerate(zip(launched.jobs, asked, strict=False)):
            done = state.finished_jobs.get(job_id)
            running = job_id in state.running_jobs
            rows.append({"attempt": launched.attempt, "worker": open_attempts[launched.attempt],
                         "launch": job.get("group") or job["name"], "index": index, "command": job.get("command"),
                         "why": launched.note,
                         "state": "running" if running else job_state(done.state if done else None)})
    return rows
