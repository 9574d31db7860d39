"""The examples target (`target.kind = "examples"`, docs/guide.md) behind the Target seam.

Units are example ids. Val is cut into blocks of the last look's size (`examples.val_blocks`); a
trial measures the block of the promotions before it in a seeded order, its looks `gate.units`
clamped to the val size, judged with exact McNemar looks; there is no confirmation (no fresh val
examples exist); the holdout is the test split, measured once, plus the champion's pass rates on
dev and val for the report. The preflight measures the baseline on the dev split, and a candidate
of an agent that reads history is measured alone on the dev split before its trial (`dev_jobs`).

Planned jobs are grouped into shards: one executor job per (look, variant) chunk of at most
`shard_size` examples, named `<attempt/stage>-l<look>-<variant>-s<k>` (`-retry` for a champion
retry). Which variant runs first at a look is drawn from the run's salt, never chosen by anyone.
Only aggregate pass rates leave the kernel: per-example results stay in the ledger's compact form
and expected outputs never reach a job.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ratchet.compute.base import JobResult, JobSpec, SandboxSpec
from ratchet.compute.env import job_env
from ratchet.compute.factory import job_resources
from ratchet.core.canonical import digest
from ratchet.core.contract import Contract
from ratchet.core.gate_rules import GATE_RULES
from ratchet.core.jobfiles import JUDGED_NAME
from ratchet.core.plan import NO_ATTEMPT, Plan, PlannedJob, Stage, UnitDraw, compile_plan
from ratchet.core.stats.paired import wilson_interval
from ratchet.core.vocab import Direction, GateTest, ScoreKind, Variant
from ratchet.targets import shard_runner
from ratchet.targets.base import Task, TaskOutcome, UnitResult
from ratchet.targets.checks import ScriptRunner, parse_shard_lines
from ratchet.targets.examples import Example, Split, clamp_looks, status_counts, val_blocks, val_order
from ratchet.targets.examples_measure import (
    DEFAULT_SHARD_SIZE,
    EXAMPLES_SEED,
    SHARD_SLACK_S,
    ExampleResult,
    as_unit_result,
    compact,
    failed_shard,
    from_compact,
    judge_record,
    make_shards,
    shard_output_cap,
    shard_payload,
    shard_timeout_s,
)

_PLANNED_ID = re.compile(r"^(?P<head>.+)-u\d+-(?P<variant>champion|candidate)(?P<retry>-r\d+)?$")


def pass_rate(results: Sequence[ExampleResult]) -> dict[str, Any]:
    """{"passes", "n", "rate", "interval", "statuses"}: the Wilson 95% interval (Wilson 1927) and how the
    failed examples ended (examples.status_counts)."""
    n = len(results)
    passes = sum(r.passed for r in results)
    low, high = wilson_interval(passes, n)
    return {"passes": passes, "n": n, "rate": passes / n if n else None, "interval": [low, high],
            "statuses": status_counts((r.passed, r.status) for r in results)}


def per_check_rates(results: Sequence[ExampleResult]) -> dict[str, float]:
    """Pass rate of each check over the examples where the checks ran, keyed by the check's `name`, or
    its type when it has none (checks of one type without names share one rate)."""
    counts: dict[str, list[int]] = {}
    for r in results:
        for check in r.per_check:
            c = counts.setdefault(check.name or check.type, [0, 0])
            c[0] += bool(check.passed)
            c[1] += 1
    return {name: passed / n for name, (passed, n) in counts.items() if n}


class ExamplesTarget:
    """The examples target of one run (see the module docstring).

    split: the run's dev / val / test examples; project_root: where custom check scripts live;
    shard_size: examples per job; slack_s: see SHARD_SLACK_S; run_script: runs custom checks
    (default: a subprocess); rules: the gate rules the run records (core.gate_design.GATE_RULES;
    under rules 1 every trial measured the whole val split, without blocks). Raises ValueError for
    a target that is not of kind examples or shard_size < 1.
    """

    kind = "examples"
    score_kind: ScoreKind = "binary"
    direction: Direction = "max"
    confirms = False
    test: GateTest = "sign_flip"  # unused: pass/fail scores are judged by exact McNemar
    metric_range: tuple[float, float] | None = None
    max_unit_loss: float | None = None

    def __init__(self, contract: Contract, sandbox: SandboxSpec, salt: str, split: Split, project_root: Path, *,
                 shard_size: int = DEFAULT_SHARD_SIZE, slack_s: float = SHARD_SLACK_S,
                 run_script: ScriptRunner | None = None, rules: int = GATE_RULES):
        t = contract.target
        if t.kind != "examples" or not t.examples or not t.solution:
            raise ValueError(f"ExamplesTarget needs a target of kind examples, not {t.kind!r}")
        if shard_size < 1:
            raise ValueError(f"shard_size must be >= 1, got {shard_size}")
        self.contract = contract
        self.section = t
        self.sandbox = sandbox
        self.salt = salt
        self.split = split
        self.project_root = Path(project_root)
        self.exclude = tuple(dict.fromkeys([t.examples, *contract.hidden_paths]))
        self.shard_size = shard_size
        self.slack_s = slack_s
        self.run_script = run_script
        self.rules = rules
        self.by_id: dict[str, Example] = {ex.id: ex for part in (split.dev, split.val, split.test) for ex in part}
        names = [c.name for c in t.checks]
        self.guardrail_checks = {g.metric: names.index(g.metric) for g in contract.gate.guardrails}
        self.guardrail_rules = tuple(contract.gate.guardrails)
        """Each guardrail's check (by its `name`) as an index into target.checks."""

    # -- plans -------------------------------------------------------------------------------------

    def looks(self, stage: Stage, units_used: int = 0) -> tuple[int, ...]:
        """gate.units clamped to the val size (trial); the test split's size (holdout)."""
        if stage == "holdout":
            return (len(self.split.test),)
        return clamp_looks(self.contract.gate.units, len(self.split.val))

    def _first(self, attempt: int, look: int) -> int:
        """0: the champion runs first at this look, 1: the candidate (from the run's salt)."""
        return int(digest(["ratchet.examples-order", self.salt, attempt, look])[-1], 16) & 1

    def val_blocks(self) -> list[tuple[Example, ...]]:
        """The val blocks trials measure (examples.val_blocks at the last look's size); under rules 1
        one block, the whole val split."""
        if self.rules == 1:
            return [self.split.val]
        return val_blocks(self.split.val, self.contract.campaign.seed, self.looks("trial")[-1])

    def trial_blocks(self) -> int | None:
        """How many promotions val has room for: its number of blocks (None under rules 1: no limit)."""
        return None if self.rules == 1 else len(self.val_blocks())

    def plan(self, stage: Stage, attempt: int, trial: int, champion_tree: str, candidate_tree: str,
             looks: Sequence[int], block: int = 0) -> Plan:
        """Val block `block` (the promotions before the trial) in the trial's seeded order (test
        examples for the holdout). Raises ValueError for a block val does not have."""
        if stage == "holdout":
            order: Sequence[Example] = self.split.test
        else:
            blocks = self.val_blocks()
            if self.rules == 1:
                block = 0
            if not 0 <= block < len(blocks):
                raise ValueError(f"val block {block} does not exist: val has room for {len(blocks)} block(s) of "
                                 f"{len(blocks[0])} examples")
            order = val_order(blocks[block], self.contract.campaign.seed, trial)
        draws = []
        for i, ex in enumerate(order[: looks[-1]]):
            look = next(k for k, n in enumerate(looks) if i < n)
            draws.append(UnitDraw(EXAMPLES_SEED, self._first(attempt, look), ex.id))
        return compile_plan(stage=stage, attempt=attempt, trial=trial, champion_tree=champion_tree,
                            candidate_tree=candidate_tree, target=self.plan_settings(), looks=looks, draws=draws)

    def plan_settings(self) -> dict[str, Any]:
        """What of the target a plan's digest covers (besides trees and units)."""
        return {"kind": "examples", "solution": self.section.solution, "timeout_s": self.section.timeout_s,
                "checks": [c.model_dump() for c in self.section.checks], "sandbox": self.sandbox.mode,
                "network": self.sandbox.network}

    def single_side_jobs(self, name: str, tree: str, examples: Sequence[Example], variant: Variant,
                         attempt: int = NO_ATTEMPT) -> list[PlannedJob]:
        """Planned jobs measuring one tree on `examples` outside any plan (the preflight on dev, a
        candidate on dev, the final champion on dev and val): ids `a<attempt>-<name>-u<i>-<variant>`."""
        return [PlannedJob(f"a{attempt:04d}-{name}-u{i:03d}-{variant}", variant, tree, i,
                           EXAMPLES_SEED, 0, 0, ex.id) for i, ex in enumerate(examples)]

    def dev_jobs(self, attempt: int, tree: str) -> list[PlannedJob]:
        """Attempt `attempt`'s candidate `tree` on the dev split (job stage `dev`, one job-unit per
        example): ids `a0003-dev-u012-candidate`."""
        return self.single_side_jobs("dev", tree, self.split.dev, "candidate", attempt)

    def reserve_units(self) -> int:
        """Baseline and champion on test, the champion on dev and val."""
        sizes = self.split.sizes()
        return 2 * sizes["test"] + sizes["dev"] + sizes["val"]

    def holdout_extras(self, champion_tree: str, results: Mapping[str, UnitResult],
                       measure: Callable[[list[PlannedJob]], Mapping[str, UnitResult]]) -> dict[str, Any]:
        """The champion's and the baseline's pass rates on test (from the holdout), the champion's
        on dev and val (measured now), and its pass rate per check type."""
        sides: dict[str, dict[int, ExampleResult]] = {"champion": {}, "candidate": {}}
        for r in results.values():  # a champion retry (recorded later) replaces the first result
            sides[r.variant][r.unit] = r.detail
        champ, base = list(sides["candidate"].values()), list(sides["champion"].values())
        splits: dict[str, Any] = {"test": pass_rate(champ), "test_baseline": pass_rate(base)}
        everything = list(champ)
        for name in ("dev", "val"):
            part = getattr(self.split, name)
            if not part:
                continue
            measured = measure(self.single_side_jobs(f"holdout-{name}", champion_tree, part, "candidate"))
            details = [r.detail for r in measured.values()]
            splits[name] = pass_rate(details)
            everything += details
        splits["per_check"] = per_check_rates(everything)
        return splits

    def preflight_jobs(self, baseline_tree: str) -> list[PlannedJob]:
        """The baseline on the dev split (its pass rate is the first champion figure)."""
        return self.single_side_jobs("preflight-dev", baseline_tree, self.split.dev, "champion")

    def check_preflight(self, results: Sequence[UnitResult], job_dir: Path) -> None:
        """A baseline may fail every dev example (it is what the agents improve): never refused."""

    # -- tasks -------------------------------------------------------------------------------------

    def tasks(self, jobs: Sequence[PlannedJob]) -> list[Task]:
        """Shards of consecutive planned jobs sharing a look and a variant, in run order (the
        variant drawn to go first at each look first). Raises ValueError for an example given twice
        in one group."""
        groups: dict[tuple[int, int, str], list[PlannedJob]] = {}
        for job in sorted(jobs, key=lambda j: (j.look, j.order)):
            groups.setdefault((job.look, job.order, job.variant), []).append(job)
        out = []
        for (look, _, variant), group in groups.items():
            prefix = _shard_prefix(group[0], look)
            examples = [self.by_id[j.key or ""] for j in group]
            shards = make_shards(examples, self.shard_size)
            start = 0
            for k, shard in enumerate(shards):
                out.append(Task(f"{prefix}-s{k:03d}", variant, group[0].tree, tuple(group[start: start + len(shard)])))
                start += len(shard)
        return out

    def _examples(self, task: Task) -> list[Example]:
        return [self.by_id[j.key or ""] for j in task.jobs]

    def spec(self, task: Task, checkout: Path) -> JobSpec:
        """The shard runner (`python3 -I -c <source>`) with the shard's ids and inputs on stdin."""
        examples = self._examples(task)
        n = len(examples)
        payload = shard_payload(examples, self.section.solution or "", self.section.timeout_s)
        index = _shard_index(task.job_id)
        env = job_env(self.section.seed_env, EXAMPLES_SEED, task.job_id, task.variant, str(index), sandbox=self.sandbox)
        return JobSpec(job_id=task.job_id, argv=("python3", "-I", "-c", _runner_source()), workdir=checkout,
                       env=env, timeout_s=shard_timeout_s(n, self.section.timeout_s, self.slack_s),
                       resources=job_resources(self.contract.compute),
                       sandbox=self.sandbox, stdin_bytes=payload, output_cap_bytes=shard_output_cap(n))

    def read(self, task: Task, result: JobResult) -> TaskOutcome:
        """Judge each example's record with the kernel's expected output and the checks."""
        examples = self._examples(task)
        if result.state != "ok":
            judged = failed_shard(examples, result)
        else:
            ids = [ex.id for ex in examples]
            if result.stdout_path is not None and result.stdout_path.is_file():
                # newline="\n": records end in "\n" only; a raw U+2028 or "\x85" inside one is data
                with open(result.stdout_path, encoding="utf-8", errors="replace", newline="\n") as lines:
                    records = parse_shard_lines(lines, ids)
            else:
                records = parse_shard_lines(result.stdout_tail.split("\n"), ids)
            judged = {ex.id: judge_record(ex, records[ex.id], self.section.checks, project_root=self.project_root,
                                          timeout_s=self.section.timeout_s, run_script=self.run_script)
                      for ex in examples}
            if result.stdout_path is not None:
                write_judged(result.stdout_path.parent / JUDGED_NAME, judged.values())
        passes = sum(r.passed for r in judged.values())
        ok = result.state == "ok"
        record = {
            "job_id": task.job_id, "variant": task.variant, "unit": _shard_index(task.job_id), "seed": EXAMPLES_SEED,
            "state": result.state, "value": float(passes) if ok else None,
            "reason": f"{passes}/{len(examples)} examples passed" if ok else next(iter(judged.values())).reason,
            "elapsed_s": result.elapsed_s, "cpu_s": result.cpu_s, "cached": False, "units_charged": len(examples),
            "tree": task.tree, "examples": compact(judged.values(), bool(self.guardrail_checks)),
        }
        if self.guardrail_checks and ok:
            record["guardrails"] = {name: sum(self._check_passes(r)[name] for r in judged.values()) / len(judged)
                                    for name in self.guardrail_checks}
        return self._outcome(task, judged, record)

    def _check_passes(self, result: ExampleResult) -> dict[str, float]:
        """Each guardrail check's score on one example: 1.0 when it passed, 0.0 when it failed or the
        checks did not run (a crash, a timeout: the check was not met)."""
        return {name: float(len(result.per_check) > i and result.per_check[i].passed)
                for name, i in self.guardrail_checks.items()}

    def _outcome(self, task: Task, judged: Mapping[str, ExampleResult], record: Mapping[str, Any]) -> TaskOutcome:
        results = {}
        for j in task.jobs:
            r = as_unit_result(j.job_id, j.variant, j.unit, judged[j.key or ""])
            if self.guardrail_checks and not r.failed:
                r = replace(r, guardrails=self._check_passes(judged[j.key or ""]))
            results[j.job_id] = r
        return TaskOutcome(results, record)

    def skipped(self, task: Task, result: JobResult | None, why: str) -> TaskOutcome | None:
        """An examples look always runs to its end (a shard that failed as a whole is rare, and its
        examples' results are what the gate reads): never skipped."""
        return None

    def reuse(self, task: Task, recorded: Mapping[str, Any]) -> TaskOutcome | None:
        """The shard's recorded compact results, when they are for this tree and these examples."""
        judged = from_compact(task.job_id, recorded, task.tree, self._examples(task))
        return None if judged is None else self._outcome(task, judged, recorded)

    def cache_key(self, task: Task) -> str | None:
        """Examples shards are never cached (the checks are judged by the kernel each time)."""
        return None

    def from_cache(self, task: Task, hit: Mapping[str, Any]) -> TaskOutcome | None:
        """Never called: see cache_key."""
        return None

    def cache_entry(self, outcome: TaskOutcome) -> dict[str, Any] | None:
        """Nothing is cached."""
        return None

    def summary(self, values: Sequence[float]) -> tuple[float | None, float | None]:
        """The pass rate and its Wilson 95% lower bound (Wilson 1927)."""
        if not values:
            return None, None
        low, _ = wilson_interval(int(sum(values)), len(values))
        return sum(values) / len(values), low


JUDGED_REASON_CHARS = 2000
"""Characters of an example's reason kept in judged.jsonl (a reason may quote a long output)."""


def write_judged(path: Path, judged: Iterable[ExampleResult]) -> None:
    """The kernel's verdict on each example of a shard, one JSON line each ({"id", "passed",
    "status", "reason", "checks": [[type, passed, reason], ...]}), next to the shard's stdout (which
    holds the outputs) in the run's job directory, for the report's per-example table. Agents never
    see a run's directory. A file that cannot be written leaves the report without per-check
    results; the measurement does not depend on it."""
    lines = [json.dumps({"id": r.example_id, "passed": r.passed, "status": r.status,
                         "reason": r.reason[:JUDGED_REASON_CHARS],
                         "checks": [[c.type, c.passed, c.reason[:JUDGED_REASON_CHARS]] for c in r.per_check]},
                        ensure_ascii=False) + "\n" for r in judged]
    try:
        path.write_text("".join(lines), encoding="utf-8")
    except OSError:
        pass


def _shard_prefix(job: PlannedJob, look: int) -> str:
    """`a0001-trial-u003-candidate` -> `a0001-trial-l<look>-candidate` (`-retry` for `-r1`)."""
    m = _PLANNED_ID.match(job.job_id)
    head = m.group("head") if m else job.job_id
    tail = "retry" if m and m.group("retry") else job.variant
    return f"{head}-l{look}-{tail}"


def _shard_index(job_id: str) -> int:
    return int(job_id.rsplit("-s", 1)[1])


@functools.cache
def _runner_source() -> str:
    """The shard runner's source (stdlib only, no ratchet imports: it runs as a plain script)."""
    return Path(shard_runner.__file__).read_text(encoding="utf-8")
