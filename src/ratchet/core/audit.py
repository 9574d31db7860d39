"""The checks of `ratchet verify` (docs/verify.md): small pure functions over a run's events (read
once into a RunView, core/audit_view.py) that return Findings. Anything they need from outside the
events (blob bytes, a re-compiled plan, a re-derived decision, a signature check) is passed in.

Pure: no file, process or clock; commands/verify.py is the shell that feeds them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ratchet.core.audit_view import Judged, Planned, RunView
from ratchet.core.events import Event
from ratchet.core.gate import WITHOUT_JOBS
from ratchet.core.gate_design import margin_for_state
from ratchet.core.payloads import AttemptStarted, given
from ratchet.core.vocab import Stage

FindingCode = Literal[
    "verify.chain",
    "verify.blob",
    "verify.plan",
    "verify.plan_inputs",
    "verify.level",
    "verify.margin",
    "verify.verdict",
    "verify.results_missing",
    "verify.without_jobs",
    "verify.promotion",
    "verify.budget",
    "verify.holdout",
    "verify.test_split",
    "verify.signature",
    "verify.key",
    "verify.report",
]
FINDINGS: Mapping[str, str] = {
    "verify.chain": "an events.jsonl line is malformed, out of sequence or off the hash chain",
    "verify.blob": "a blob an event names is missing, or its content does not match its digest",
    "verify.plan": "a plan re-compiled from its recorded inputs differs from its blob or recorded digest",
    "verify.plan_inputs": "a plan's inputs (trial index, trees, stage order) disagree with the ledger",
    "verify.level": "a trial's recorded level is not the level the contract grants it",
    "verify.margin": "a trial's recorded margin is not the margin the contract and the ledger give",
    "verify.verdict": "a verdict, estimate, interval, p-value or mean re-derived from the per-unit results differs",
    "verify.results_missing": "a job the verdict needed has no job.finished before the verdict",
    "verify.without_jobs": "a verdict reached without jobs is not one the ledger supports",
    "verify.promotion": "a promotion not backed by an accepted trial (and, with confirm, an accepted confirmation)",
    "verify.budget": "attempts, job-units, val trials, GPU-hours or model use beyond their budget, or a charge that "
                     "is not what the recorded usage gives",
    "verify.holdout": "the holdout measured more than once, without a promotion, or on units a decision used",
    "verify.test_split": "a test, val or dev example measured outside the stages allowed to see it",
    "verify.signature": "a signed event's signature is missing or does not verify",
    "verify.key": "the run was signed with another key than the one given",
    "verify.report": "report.md's final digest or signature is not the ledger's",
}
"""Every check's code, with what a failure of it means."""

REL_TOL = 1e-9
"""Relative tolerance of a re-derived figure (the same code on another machine's floating point)."""

ABS_TOL = 1e-12
"""Absolute tolerance of a re-derived figure near zero."""

DECISION_FIELDS = ("verdict", "reason", "estimate", "interval", "p_value", "threshold", "units", "look", "level",
                   "retry_units")
"""The recorded decision fields a re-derivation must reproduce."""


@dataclass(frozen=True)
class Finding:
    """One failed check: its code (FINDINGS), the event it is about (None: the run as a whole) and
    what differed."""

    code: FindingCode
    seq: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """{"code", "seq", "message"}."""
        return {"code": self.code, "seq": self.seq, "message": self.message}


@dataclass(frozen=True)
class PlanInputs:
    """What a plan must be compiled from, as the ledger says: the stage, attempt, trial index, the
    two trees, (confirm) the units its trial decided on, and the promotions recorded before it (the
    val block an examples trial measures)."""

    stage: Stage
    attempt: int
    trial: int
    champion_tree: str
    candidate_tree: str
    units_used: int = 0
    block: int = 0


def same(a: Any, b: Any) -> bool:
    """Recorded value `a` equals re-derived `b` (floats within REL_TOL/ABS_TOL, lists item-wise)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):  # a guardrail's result: key-wise
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL) or (math.isnan(a) and math.isnan(b))
    return a == b


# -- blobs -------------------------------------------------------------------------------------------


def check_blobs(view: RunView, blob_problem: Callable[[str], str | None]) -> list[Finding]:
    """Every `*_blob` digest an event names is present and intact. `blob_problem(digest)`: why the
    blob cannot be vouched for, or None."""
    out, seen = [], {}
    for seq, where, blob in view.blob_refs:
        if blob not in seen:
            seen[blob] = blob_problem(blob)
        if seen[blob] is not None:
            out.append(Finding("verify.blob", seq, f"data.{where} = {blob}: {seen[blob]}"))
    return out


# -- plans -------------------------------------------------------------------------------------------


def plan_inputs(view: RunView) -> list[tuple[Planned, PlanInputs | Finding]]:
    """For every trial.planned, the inputs the ledger says its plan was compiled from (or why they
    cannot be known): trials numbered 1, 2, ... in order; a trial's champion the champion before it,
    its candidate the attempt's submitted tree and its block the promotions recorded before it; a
    confirmation after its own accepted trial, with that trial's index, trees, units and block; the
    holdout the baseline against the champion before it. A trial's champion is the one recorded
    when its candidate was submitted (with several workers the champion may move between the
    submission and the plan; the trial still measures against the tree the candidate is built on)."""
    out: list[tuple[Planned, PlanInputs | Finding]] = []
    trials: dict[Any, PlanInputs] = {}
    for p in view.planned:
        if p.stage == "trial":
            sub = view.submitted.get(p.attempt)
            if sub is None or not isinstance(sub.tree, str) or not isinstance(p.attempt, int):
                out.append((p, Finding("verify.plan_inputs", p.seq, f"trial plan of attempt {p.attempt!r} has no "
                                       "submitted candidate tree before it")))
                continue
            block = sum(1 for pr in view.promoted if pr.seq < p.seq)
            inputs = PlanInputs("trial", p.attempt, len(trials) + 1, view.champion_before(sub.seq) or "", sub.tree,
                                block=block)
            trials[p.attempt] = inputs
        elif p.stage == "confirm":
            trial = trials.get(p.attempt)
            judged = view.judged_for(p.attempt, "trial")
            if trial is None or judged is None or judged.seq > p.seq or judged.get("verdict") != "accepted":
                out.append((p, Finding("verify.plan_inputs", p.seq, f"confirmation of attempt {p.attempt!r} without "
                                       "an accepted trial before it")))
                continue
            units = judged.get("units")
            inputs = PlanInputs("confirm", trial.attempt, trial.trial, trial.champion_tree, trial.candidate_tree,
                                units if isinstance(units, int) else 0, trial.block)
        elif p.stage == "holdout":
            inputs = PlanInputs("holdout", 0, 0, view.baseline_tree or "", view.champion_before(p.seq) or "")
        else:
            out.append((p, Finding("verify.plan_inputs", p.seq, f"unknown stage {p.stage!r}")))
            continue
        out.append((p, inputs))
    return out


def compare_plan(p: Planned, recorded: bytes | None, compiled: bytes, compiled_digest: str) -> list[Finding]:
    """A re-compiled plan against the recorded one: the recorded digest, then the blob byte for byte
    (`recorded` None: the blob is unreadable, reported by check_blobs)."""
    out = []
    if p.plan_digest != compiled_digest:
        out.append(Finding("verify.plan", p.seq, f"{p.stage} plan of attempt {p.attempt}: recorded digest "
                           f"{p.plan_digest}, re-compiled {compiled_digest}"))
    if recorded is not None and recorded != compiled:
        at = next((i for i, (a, b) in enumerate(zip(recorded, compiled, strict=False)) if a != b),
                  min(len(recorded), len(compiled)))
        out.append(Finding("verify.plan", p.seq, f"{p.stage} plan of attempt {p.attempt}: blob {p.plan_blob} "
                           f"differs from the re-compiled plan from byte {at}: "
                           f"{recorded[at:at + 40]!r} vs {compiled[at:at + 40]!r}"))
    return out


# -- levels, margins, verdicts -------------------------------------------------------------------------


def expected_margin(p: Planned, min_effect: float, min_effect_rel: float, champion_mean: float | None) -> float:
    """The margin the stage of `p` is tested with (loop/campaign.py): 0 for the holdout; else
    margin_for_state with the champion's mean as the ledger stood before it (RunState.champion_mean)."""
    if p.stage == "holdout":
        return 0.0
    return margin_for_state(min_effect, min_effect_rel, champion_mean)


def check_settings(p: Planned, level: float, margin: float) -> list[Finding]:
    """The recorded level and margin of `p` against the expected ones (a margin recorded as None
    predates its recording and is not checked)."""
    out = []
    if not same(p.level, level):
        out.append(Finding("verify.level", p.seq, f"{p.stage} of attempt {p.attempt}: recorded level {p.level!r}, "
                           f"the contract grants {level!r}"))
    if p.margin is not None and not same(p.margin, margin):
        out.append(Finding("verify.margin", p.seq, f"{p.stage} of attempt {p.attempt}: recorded margin "
                           f"{p.margin!r}, expected {margin!r}"))
    return out


def compare_decision(judged: Judged, derived: Mapping[str, Any]) -> list[Finding]:
    """The recorded trial.judged against the decision re-derived from the per-unit results
    (`derived`: Decision.to_json() plus champion_mean / candidate_mean, compared where recorded, and
    each guardrail's result when recorded).
    The recorded reason text must start with the re-derived one (a failure's detail is appended)."""
    keys = [*DECISION_FIELDS, *(k for k in ("champion_mean", "candidate_mean", "guardrails") if judged.has(k))]
    diffs = [f"{key}: recorded {judged.get(key)!r}, re-derived {derived.get(key)!r}"
             for key in keys if key in derived and not same(judged.get(key), derived.get(key))]
    text = judged.get("reason_text")
    if not (isinstance(text, str) and text.startswith(str(derived.get("reason_text", "")))):
        diffs.append("reason_text differs")
    if not diffs:
        return []
    return [Finding("verify.verdict", judged.seq, f"{judged.stage} of attempt {judged.attempt}: " + "; ".join(diffs))]


def _champion_moved(view: RunView, attempt: Any, submitted_seq: int) -> bool:
    """Whether a promotion was recorded between attempt `attempt`'s start (a re-base attempt: its
    original's) and its submission at `submitted_seq`."""
    started = {a: seq for seq, a in view.attempts_started}
    seq = started.get(attempt)
    event = next((e for e in view.events if e.seq == seq), None) if seq is not None else None
    rebases = given(event.payload.rebases) if event is not None and isinstance(event.payload, AttemptStarted) else None
    if rebases is not None and rebases in view.submitted:
        seq = view.submitted[rebases].seq  # the original was built on the champion it was submitted against
    return seq is not None and view.champion_before(seq) != view.champion_before(submitted_seq)


def check_without_jobs(view: RunView) -> list[Finding]:
    """Trial verdicts with no plan: only the reasons reached without jobs, `no_change` only for the
    champion's own tree, `duplicate` only for a tree measured by an earlier attempt, and `stale`
    only when the champion moved between the attempt's start and its submission."""
    out, measured = [], set()
    for j in view.judged:
        if j.stage != "trial":
            continue
        sub = view.submitted.get(j.attempt)
        tree = sub.tree if sub else None
        if view.planned_for(j.attempt, "trial") is not None:
            if j.get("units"):
                measured.add(tree)
            continue
        reason = j.get("reason")
        problem = None
        if j.get("verdict") != "rejected" or reason not in WITHOUT_JOBS:
            problem = f"verdict {j.get('verdict')!r} ({reason!r}) without any plan"
        elif reason == "no_change" and tree != view.champion_before(j.seq):
            problem = f"no_change, but tree {tree} is not the champion's {view.champion_before(j.seq)}"
        elif reason == "duplicate" and tree not in measured:
            problem = f"duplicate, but tree {tree} was not measured by an earlier attempt"
        elif reason == "stale" and not _champion_moved(view, j.attempt, sub.seq if sub else j.seq):
            problem = "stale, but no attempt was promoted between its start and its submission"
        if problem:
            out.append(Finding("verify.without_jobs", j.seq, f"attempt {j.attempt}: {problem}"))
    return out


# -- promotions, budgets, holdout ----------------------------------------------------------------------


def check_promotions(view: RunView, confirms: bool) -> list[Finding]:
    """Every promotion follows its attempt's accepted trial and (when the target confirms) accepted
    confirmation, promotes the submitted tree, quotes the deciding estimate, and happens once;
    a comparison promotes nothing."""
    out, seen = [], set()
    for pr in view.promoted:
        problems = []
        trial, confirm = view.judged_for(pr.attempt, "trial"), view.judged_for(pr.attempt, "confirm")
        sub = view.submitted.get(pr.attempt)
        if view.mode == "compare":
            problems.append("a comparison promotes nothing")
        if trial is None or trial.seq > pr.seq or trial.get("verdict") != "accepted":
            problems.append("no accepted trial before it")
        if confirms and (confirm is None or confirm.seq > pr.seq or confirm.get("verdict") != "accepted"):
            problems.append("no accepted confirmation before it")
        if sub is None or sub.tree != pr.tree:
            problems.append(f"tree {pr.tree} is not the submitted {sub.tree if sub else None}")
        deciding = confirm if confirms else trial
        if deciding is not None and not same(pr.estimate, deciding.get("estimate")):
            problems.append(f"estimate {pr.estimate!r} is not the deciding {deciding.get('estimate')!r}")
        if pr.attempt in seen:
            problems.append("promoted twice")
        seen.add(pr.attempt)
        if problems:
            out.append(Finding("verify.promotion", pr.seq, f"attempt {pr.attempt}: " + "; ".join(problems)))
    return out


def check_holdout(view: RunView, plan_units: Mapping[int, Sequence[Any]]) -> list[Finding]:
    """The holdout: planned and judged at most once, only after a promotion, on units (seeds or
    example ids) no trial or confirmation used. `plan_units`: the units of each plan by its
    trial.planned seq."""
    out = []
    holdouts = [p for p in view.planned if p.stage == "holdout"]
    for p in holdouts[1:]:
        out.append(Finding("verify.holdout", p.seq, "the holdout was planned again"))
    for j in [j for j in view.judged if j.stage == "holdout"][1:]:
        out.append(Finding("verify.holdout", j.seq, "the holdout was judged again"))
    decided = {u for p in view.planned if p.stage != "holdout" for u in plan_units.get(p.seq, ())}
    for p in holdouts:
        if not any(pr.seq < p.seq for pr in view.promoted):
            out.append(Finding("verify.holdout", p.seq, "the holdout was measured though nothing was promoted"))
        reused = [u for u in plan_units.get(p.seq, ()) if u in decided]
        if reused:
            out.append(Finding("verify.holdout", p.seq, f"{len(reused)} holdout units were used by a decision: "
                               f"{reused[:3]}"))
    return out


SPLIT_STAGES: Mapping[str, frozenset[str]] = {
    "dev": frozenset({"preflight", "dev", "holdout"}),
    "val": frozenset({"trial", "confirm", "holdout"}),
    "test": frozenset({"holdout"}),
}
"""Examples targets: the job stages (core.vocab.JobStage) that may measure each split's examples:
dev the baseline's preflight, a candidate's dev measurement and the final champion's figures; val
the trials and the final champion's figures; test the holdout alone."""


def check_splits(view: RunView, splits: Mapping[str, Sequence[str]], plan_units: Mapping[int, Sequence[Any]]
                 ) -> list[Finding]:
    """Examples targets: the holdout plan is exactly the test split; trials and confirmations use val
    examples only; no job measures an example of a split outside the stages SPLIT_STAGES allows it."""
    out = []
    test, val = set(splits.get("test", ())), set(splits.get("val", ()))
    for p in view.planned:
        units = set(plan_units.get(p.seq, ()))
        if p.stage == "holdout" and units != test:
            out.append(Finding("verify.test_split", p.seq, f"the holdout measures {len(units)} examples, "
                               f"{len(units & test)} of the {len(test)} test examples"))
        if p.stage in ("trial", "confirm") and not units <= val:
            out.append(Finding("verify.test_split", p.seq, f"{p.stage} of attempt {p.attempt} uses "
                               f"{len(units - val)} examples outside val"))
    members = {name: set(splits.get(name, ())) for name in SPLIT_STAGES}
    for f in view.finished:
        ids = set(f.examples or ())
        for name, stages in SPLIT_STAGES.items():
            if ids & members[name] and f.stage not in stages:
                out.append(Finding("verify.test_split", f.seq, f"job {f.job_id} (stage {f.stage}) measured "
                                   f"{len(ids & members[name])} {name} examples"))
    return out


# -- signatures and the report -------------------------------------------------------------------------


def _hex(value: Any) -> bytes | None:
    try:
        return bytes.fromhex(value) if isinstance(value, str) else None
    except ValueError:
        return None

SignatureCheck = Callable[[bytes, str, int, str, Mapping[str, Any]], "str | None"]
"""(public key raw bytes, kind, seq, prev, data) -> why the signature fails, or None
(ledger.signing.check_signature)."""


def check_signatures(view: RunView, signed_kinds: frozenset[str], check: SignatureCheck,
                     given_key: bytes | None) -> tuple[list[Finding], list[str]]:
    """Every event of `signed_kinds` verifies against `given_key` (the key the checker got from
    outside the run) or, without one, against the key run.started recorded. Returns (findings,
    warnings): an unsigned run is a finding only when a key was given."""
    recorded = view.signing_key
    warnings: list[str] = []
    out: list[Finding] = []
    if given_key is None:
        if recorded is None:
            return [], ["the run records no signing key: signatures were not checked"]
        key = _hex(recorded.get("public"))
        if key is None:
            return [Finding("verify.key", 0, "run.started's signing key is not hex")], []
        warnings.append("signatures checked against the key the run itself records; pass --key to check them "
                        "against a key you trust")
    else:
        key = given_key
        if recorded is None or _hex(recorded.get("public")) != given_key:
            named = recorded.get("key_id") if recorded else None
            out.append(Finding("verify.key", 0, f"run.started records key {named}, not the key given"))
    for e in view.events:
        if e.kind in signed_kinds:
            problem = check(key, e.kind, e.seq, e.prev, e.data)
            if problem is not None:
                out.append(Finding("verify.signature", e.seq, f"{e.kind}: {problem}"))
    return out, warnings


_HEAD_RE = re.compile(r"^Ledger head: event (\d+), `(sha256:[0-9a-f]{64})`", re.M)
_SIG_RE = re.compile(r"^Signature of event (\d+) \(ed25519, key `([^`]*)`\): `([^`]*)`", re.M)


def evidence_lines(events: Sequence[Event], run_id: str) -> list[str]:
    """The report's closing section: the ledger head (last event's seq and digest) and the signature
    of the last signed event, with the command that checks both offline."""
    if not events:
        return []
    last = events[-1]
    lines = ["## Evidence", "", f"Ledger head: event {last.seq}, `{last.digest}`", ""]
    signed = next((e for e in reversed(events) if isinstance(e.data.get("signature"), Mapping)), None)
    if signed is not None:
        sig = signed.data["signature"]
        lines += [f"Signature of event {signed.seq} (ed25519, key `{sig.get('key_id')}`): `{sig.get('sig')}`", ""]
    lines += [f"Check it offline: `ratchet verify {run_id} --key .ratchet/keys/ed25519.pub`", ""]
    return lines


def check_report(view: RunView, text: str | None) -> tuple[list[Finding], list[str]]:
    """report.md's evidence section names an event of this ledger by its true digest and quotes that
    event's (or an earlier one's) signature as recorded. Returns (findings, warnings): a missing
    report or section is a warning."""
    if text is None:
        return [], ["no report.md: nothing to compare with the ledger"]
    head = _HEAD_RE.search(text)
    if head is None:
        return [], ["report.md has no evidence section (rendered before `ratchet verify` existed?)"]
    out = []
    seq, claimed = int(head.group(1)), head.group(2)
    if seq >= len(view.events) or view.events[seq].digest != claimed:
        actual = view.events[seq].digest if seq < len(view.events) else "no such event"
        out.append(Finding("verify.report", seq, f"report.md gives the ledger head as {claimed}; "
                           f"event {seq} is {actual}"))
    sig = _SIG_RE.search(text)
    if sig is not None:
        at = int(sig.group(1))
        recorded = view.events[at].data.get("signature") if at < len(view.events) else None
        quoted = recorded.get("sig") if isinstance(recorded, Mapping) else None
        if quoted != sig.group(3) or at > seq:
            out.append(Finding("verify.report", at, f"report.md quotes a signature of event {at} that the "
                               "ledger does not hold"))
    return out, []
