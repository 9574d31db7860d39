"""The past of a run as the next attempt reads it from the run's state: what each earlier attempt
did with its level (`level_history`; `level_timeline`: plannings and decisions in ledger order,
for attempts that overlap), which val block an examples trial measures (`promotions_before`),
the dev results the ledger holds (`dev_mean`, `champion_dev_mean`, `champion_dev_failures`), and
what an agent is shown of earlier attempts (`past_attempts`; docs/gate.md, "Examples targets and
adaptive agents").

Pure: reads a RunState, returns values. `ratchet verify` uses the same functions to re-derive the
levels a run granted.
"""

from __future__ import annotations

from collections.abc import Iterable

from ratchet.agents.base import PastAttempt
from ratchet.core.gate import WITHOUT_JOBS
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.payloads import JobFinished, given
from ratchet.core.plan import NO_ATTEMPT
from ratchet.core.state import AttemptState, RunState
from ratchet.core.stats.level_pool import LevelStep, timeline_of
from ratchet.core.stats.multiplicity import LevelOutcome
from ratchet.present.status import final_verdict


def level_history(state: RunState, before: int, rules: int = GATE_RULES) -> list[LevelOutcome]:
    """What each attempt before `before` did with its level (stats.multiplicity.attempt_levels; the
    sequential view, the campaign reads `level_timeline`):
    `promoted`; `unspent` when decided without jobs (WITHOUT_JOBS) or given up before its
    trial; `not_promoted` otherwise. Under gate `rules` 1 a trial whose jobs completed no unit also
    counted as `unspent`, which depends on the data measured; rules 2 decide it before any job."""
    return [level_outcome(a, rules) for a in state.attempts if a.attempt < before]


def level_outcome(a: AttemptState, rules: int = GATE_RULES) -> LevelOutcome:
    """What attempt `a` did with its level (level_history's rule, for one attempt)."""
    if a.promoted:
        return "promoted"
    if a.gave_up is not None or a.reason in WITHOUT_JOBS or (rules == 1 and not a.units):
        return "unspent"
    return "not_promoted"


def level_timeline(state: RunState, rules: int = GATE_RULES) -> list[LevelStep]:
    """The plannings and decisions of the run's attempts in ledger order (stats.level_pool.LevelStep):
    ("planned", attempt) at its first trial planning (AttemptState.planned_seq), ("decided", attempt,
    level_outcome) at its decision (AttemptState.decided_seq); an attempt still running has no
    decision step. What stats.level_pool.levels_at_planning reads, in the campaign and in
    `ratchet verify`."""
    planned = {a.attempt: a.planned_seq for a in state.attempts if a.planned_seq is not None}
    decided = {a.attempt: (a.decided_seq, level_outcome(a, rules)) for a in state.attempts
               if a.decided_seq is not None}
    return timeline_of(planned, decided)


def promotions_before(state: RunState, attempt: int) -> int:
    """Promotions of attempts numbered below `attempt`: the index (0-based) of the val block an
    examples trial of `attempt` measures (a promotion moves the run to the next block)."""
    return sum(1 for a in state.attempts if a.promoted and a.attempt < attempt)


def pass_rate(jobs: Iterable[JobFinished], attempt: int, stage: str) -> float | None:
    """The pass rate in [0, 1] of the examples shards of (`attempt`, `stage`) among `jobs`: examples
    passed over examples measured (an example of a shard that did not end ok counts as failed);
    None when no such shard was recorded."""
    passes = total = 0
    for job in jobs:
        if job.attempt != attempt or job.stage != stage:
            continue
        examples = given(job.examples) or {}
        total += len(examples)
        if job.state == "ok":
            passes += sum(1 for entry in examples.values()
                          if isinstance(entry, list) and len(entry) in (2, 4) and entry[0] is True and entry[1] == "ok")
    return passes / total if total else None


def failed_examples(jobs: Iterable[JobFinished], attempt: int, stage: str) -> list[tuple[str, str]]:
    """(example id, status) of every example the shards of (`attempt`, `stage`) among `jobs` did
    not pass, in record order: status `failed` (a check said no) or how it ended (`crash`,
    `timeout`, ...; the shard's state when the whole shard did not end ok)."""
    out = []
    for job in jobs:
        if job.attempt != attempt or job.stage != stage:
            continue
        for example_id, entry in (given(job.examples) or {}).items():
            status = str(entry[1]) if isinstance(entry, list) and len(entry) in (2, 4) else "unknown"
            if job.state != "ok":
                out.append((example_id, job.state))
            elif not (isinstance(entry, list) and entry[0] is True and status == "ok"):
                out.append((example_id, "failed" if status == "ok" else status))
    return out


def dev_mean(state: RunState, attempt: int) -> float | None:
    """Attempt `attempt`'s candidate pass rate on the dev split (job stage `dev`), or None when its
    candidate was not measured there."""
    return pass_rate(state.finished_jobs.values(), attempt, "dev")


def champion_dev_source(state: RunState) -> tuple[int, str]:
    """(attempt, job stage) of the champion's dev measurement: the preflight's while it is the
    baseline, then the promoted candidate's `dev` stage."""
    if state.champion.attempt is None:
        return NO_ATTEMPT, "preflight"
    return state.champion.attempt, "dev"


def champion_dev_mean(state: RunState) -> float | None:
    """The champion's pass rate on the dev split (champion_dev_source; None when it had no dev
    measurement: the agent that proposed it reads no history)."""
    return pass_rate(state.finished_jobs.values(), *champion_dev_source(state))


def champion_dev_failures(state: RunState) -> list[tuple[str, str]]:
    """(example id, status) of the dev examples the champion did not pass (champion_dev_source)."""
    return failed_examples(state.finished_jobs.values(), *champion_dev_source(state))


def past_attempts(state: RunState, examples: bool) -> tuple[PastAttempt, ...]:
    """The judged attempts as an agent may know them (agents.base.PastAttempt), oldest first.
    `examples`: the run's target is an examples target, whose trials share the val block between
    promotions: the candidate's val mean is withheld, and a verdict reached with jobs reads only
    accepted / promoted or rejected / not_promoted; the dev pass rate is shown instead."""
    past = []
    for a in state.attempts:
        if a.verdict is None:
            continue
        verdict, reason = final_verdict(a)
        mean = a.candidate_mean
        if examples:
            mean = None
            if reason not in WITHOUT_JOBS:
                verdict, reason = ("accepted", "promoted") if a.promoted else ("rejected", "not_promoted")
        past.append(PastAttempt(a.attempt, a.tree, a.params, verdict, reason, mean,
                                dev_mean(state, a.attempt) if examples else None))
    return tuple(past)


def idle_streak(state: RunState) -> tuple[int, str | None]:
    """The finished attempts at the end of the run that ended because the agent did not work
    (AttemptState.unresponsive), counted backwards until one that did work, and the last one's
    failure (its give-up reason or its verdict's text); (0, None) when the last attempt worked.
    Attempts are taken in number order; one still in progress (no give-up, no verdict) is skipped."""
    count, last = 0, None
    for a in sorted(state.attempts, key=lambda a: a.attempt, reverse=True):
        if a.gave_up is None and a.verdict is None:
            continue
        if not a.unresponsive:
            break
        if last is None:
            last = a.gave_up or a.reason_text
        count += 1
    return count, last
