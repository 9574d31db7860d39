"""Re-deriving a run's measurements offline for `ratchet verify`: the run's target rebuilt from its
run directory alone (the contract kept there, the salt and sandbox run.started recorded, an
examples split from its recorded fingerprint), and a plan's verdict walked again through the gate
from the recorded `job.finished` results, look by look, exactly as `loop/trial.measure_looks` walked it
(champion retries included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.compute.base import SandboxMode, SandboxSpec
from ratchet.core.audit_view import Finished, RunView
from ratchet.core.contract import Contract
from ratchet.core.errors import DataError
from ratchet.core.gate import Decision, GateSettings, decide
from ratchet.core.gate_rules import recorded_rules
from ratchet.core.plan import Plan, PlannedJob, retry_job
from ratchet.loop.trial import unit_scores
from ratchet.targets.base import Target, UnitResult

BlobJson = Callable[[str], Any]
"""Reads a blob's JSON by digest (ledger.blobs.BlobStore.get_json)."""


def rebuild_target(contract: Contract, view: RunView, run_root: Path, blob_json: BlobJson) -> Target:
    """The run's Target as the kernel built it: the contract kept in the run directory, the salt and
    sandbox mode run.started recorded, and for an examples target the split rebuilt from the recorded
    fingerprint (id-only examples: plans and recorded results need nothing more), cutting val into
    blocks as the run's recorded gate rules did. Raises DataError `verify.no_salt` /
    `examples.bad_fingerprint`, RatchetError `gate.bad_rules`, LedgerError for an unreadable
    fingerprint blob."""
    salt = view.salt
    if not isinstance(salt, str) or not salt:
        raise DataError("verify.no_salt", "run.started records no salt: the run's plans cannot be re-compiled")
    mode: SandboxMode = "bwrap" if view.sandbox == "bwrap" else "none"
    sandbox = SandboxSpec(mode=mode, network=contract.sandbox.network)
    if contract.target.kind != "examples":
        from ratchet.targets.benchmark import BenchmarkTarget

        return BenchmarkTarget(contract, sandbox, salt)
    from ratchet.targets.examples import split_from_fingerprint
    from ratchet.targets.examples_target import ExamplesTarget

    blob = view.examples_fingerprint_blob
    if not isinstance(blob, str):
        raise DataError("examples.bad_fingerprint", "run.started records no examples fingerprint blob")
    split = split_from_fingerprint(blob_json(blob), contract.campaign.seed)
    if contract.target.solution_kind == "prompt":  # re-read only: no model is called
        from ratchet.targets.prompt_solution import PromptTarget

        return PromptTarget(contract, sandbox, salt, split, run_root, rules=recorded_rules(view.gate))
    return ExamplesTarget(contract, sandbox, salt, split, run_root, rules=recorded_rules(view.gate))


class Recorded:
    """The `job.finished` records of a run by job id, each read only as it stood before a given
    event (a verdict may use only what was measured before it)."""

    def __init__(self, finished: Sequence[Finished]):
        self._by_id: dict[Any, list[Finished]] = {}
        for f in finished:
            self._by_id.setdefault(f.job_id, []).append(f)

    def before(self, job_id: str, seq: int) -> Mapping[str, Any] | None:
        """The last job.finished data of `job_id` recorded before event `seq`, or None."""
        last = None
        for f in self._by_id.get(job_id, ()):
            if f.seq >= seq:
                break
            last = f.payload.to_data()
        return last


def _reuse(target: Target, jobs: Sequence[PlannedJob], recorded: Recorded, seq: int,
           out: dict[str, UnitResult]) -> str | None:
    """Read `jobs`' results from their records into `out`; the first task without a usable record."""
    for task in target.tasks(jobs):
        data = recorded.before(task.job_id, seq)
        outcome = target.reuse(task, data) if data is not None else None
        if outcome is None:
            return task.job_id
        out.update(outcome.results)
    return None


def rederive(plan: Plan, target: Target, settings: GateSettings, recorded: Recorded, seq: int
             ) -> dict[str, Any] | str:
    """The decision on `plan` re-derived from the results recorded before event `seq` (its verdict):
    Decision.to_json() plus the two sides' means (Target.summary). When the walk needs a look that
    was never measured, the `continue` decision that asked for it (the recorded verdict came too
    early); when a job the recorded looks needed has no usable record, that job's id."""
    results: dict[str, UnitResult] = {}
    retried: dict[int, UnitResult] = {}
    decision: Decision | None = None
    names = [g.name for g in settings.guardrails]  # guardrail decisions re-derive with the primary's
    for look, upto in enumerate(plan.looks):
        missing = _reuse(target, plan.jobs_for_look(look), recorded, seq, results)
        if missing is not None and decision is not None and not any(
                recorded.before(t.job_id, seq) for t in target.tasks(plan.jobs_for_look(look))):
            return _with_means(decision, target, unit_scores(plan, results, retried, plan.looks[look - 1], names))
        if missing is not None:
            return missing
        decision = decide(unit_scores(plan, results, retried, upto, names), settings)
        if decision.verdict == "continue" and decision.reason == "champion_retry":
            retry = [retry_job(j, 1) for j in plan.jobs if j.variant == "champion" and j.unit in decision.retry_units]
            again: dict[str, UnitResult] = {}
            missing = _reuse(target, retry, recorded, seq, again)
            if missing is not None:
                return missing
            retried.update({j.unit: again[j.job_id] for j in retry})
            decision = decide(unit_scores(plan, results, retried, upto, names), settings)
        if decision.verdict != "continue":
            return _with_means(decision, target, unit_scores(plan, results, retried, upto, names))
    raise AssertionError("the gate returned `continue` at the last look")  # decide() never does


def _with_means(decision: Decision, target: Target, scores: Sequence[Any]) -> dict[str, Any]:
    champion, _ = target.summary([s.champion for s in scores if s.champion is not None])
    candidate, _ = target.summary([s.candidate for s in scores if s.candidate is not None])
    return {**decision.to_json(), "champion_mean": champion, "candidate_mean": candidate}
