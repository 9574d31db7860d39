"""A prompt solution (`target.solution_kind = "prompt"`, docs/prompts.md) behind the Target seam.

The examples target's splits, val blocks, looks, holdout and shards, with one difference: a shard
is not a process. Its JobSpec carries the solution's text (read from the variant's clean checkout,
never through a symlink), the prompt template and the shard's ids and inputs; the kernel's
in-kernel executor (`compute/in_kernel.py`) hands it to the eval model's calls (`loop/prompt_eval.py`)
and gets back one record per example (PROMPT_RECORD), its `samples` replies. The kernel judges each
reply with the checks, as for a script (llm_judge checks through the injected `Judge`).

An example's score is its pass fraction over its samples. With one sample the gate judges 0/1
scores with exact McNemar, as for a script; with more it judges the fractions as continuous scores
in [0, 1] with the floor test (`gate.test = "betting"` under gate rules 2; every paired difference
lies in [-1, 1], so the floor -1 holds for every distribution: the test's level is exact whatever
the reply noise). An example whose eval model gave no reply (`model_error`) is a failed
measurement, never a 0: a server outage on the champion's side must not hand the candidate wins.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ratchet.compute.base import JobResult, JobSpec, SandboxSpec
from ratchet.compute.factory import job_resources
from ratchet.core.contract import Contract, LlmJudgeCheck, ModelSection
from ratchet.core.contract_prompt import SOLUTION_TEXT_CAP_BYTES
from ratchet.core.jobfiles import JUDGED_NAME
from ratchet.core.vocab import GateTest, ScoreKind
from ratchet.targets.base import Task, TaskOutcome, UnitResult
from ratchet.targets.checks import CheckResult, run_checks
from ratchet.targets.examples import Example, Split
from ratchet.targets.examples_measure import EXAMPLE_STATUSES, EXAMPLES_SEED, ExampleResult, ExampleStatus, failed_shard
from ratchet.targets.examples_target import ExamplesTarget, _shard_index, write_judged

PROMPT_ARGV = ("ratchet-prompt-shard",)
"""The argv of a prompt shard's JobSpec: a label (no process runs it; the in-kernel executor does)."""

PROMPT_RECORD = ("id", "samples", "charge")
"""One line of a prompt shard's stdout: {"id", "samples": [{"status": "ok" | "model_error", "output",
"reason", "cached"}], "charge": {"eval_calls", "eval_tokens", "eval_usd"}} (what its calls cost; a
cached reply costs nothing)."""

CHARGE_KEYS = ("eval_calls", "eval_tokens", "eval_usd")
"""What eval and judge calls are charged, as `job.finished` records it (docs/budgets.md)."""

BOUND_Z_DELTA = 0.025
"""One-sided error of the Hoeffding lower bound on a mean pass fraction (the report's bound)."""


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one output: `passed` (None: the reply was malformed, a check error),
    `reason`, and what the judge's call cost (`charge`, CHARGE_KEYS)."""

    passed: bool | None
    reason: str
    charge: Mapping[str, float]


Judge = Callable[[LlmJudgeCheck, str, Any, str], Verdict]
"""Judges one output with an llm_judge check: (check, input, expected output, actual output) -> Verdict."""


@dataclass(frozen=True)
class PromptExampleResult(ExampleResult):
    """An ExampleResult with its samples: `passes` of `samples` replies passed every check.
    `passed` is True only when every sample passed."""

    passes: int = 0
    samples: int = 1


def read_solution_text(checkout: Path, relpath: str, cap: int = SOLUTION_TEXT_CAP_BYTES) -> tuple[str | None, str]:
    """(text, "") of the prompt file `relpath` in `checkout`, or (None, why). Never follows a symlink
    (a tree pointing the solution at a file outside it would send that file to the model), refuses
    anything but a regular file, and a file over `cap` bytes; bad UTF-8 is replaced."""
    path = checkout
    try:
        for part in relpath.split("/"):
            path = path / part
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None, f"{relpath} is a symlink (a prompt solution must be a regular file)"
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None, f"{relpath} is not a regular file"
            data = f.read(cap + 1)
    except OSError as exc:
        return None, f"cannot read {relpath}: {exc.strerror or exc}"
    if len(data) > cap:
        return None, f"{relpath} is over {cap} bytes"
    return data.decode("utf-8", "replace"), ""


def prompt_payload(text: str | None, error: str, template: str, samples: int, examples: Sequence[Example]) -> bytes:
    """A prompt shard's stdin: {"prompt", "prompt_error", "template", "samples", "examples": [{"id",
    "input"}]} as JSON bytes. Expected outputs are never part of it."""
    return json.dumps({"prompt": text, "prompt_error": error, "template": template, "samples": samples,
                       "examples": [{"id": ex.id, "input": ex.input} for ex in examples]},
                      sort_keys=True, separators=(",", ":")).encode("utf-8")


def read_records(lines: Sequence[str], ids: Sequence[str], samples: int) -> dict[str, dict[str, Any]]:
    """Records of a prompt shard's stdout for exactly `ids` (PROMPT_RECORD): an id without one valid
    record (or with two) gets one whose samples are all `model_error` ("no record")."""
    found: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if (isinstance(obj, dict) and obj.get("id") in found and isinstance(obj.get("samples"), list)
                and len(obj["samples"]) == samples
                and all(isinstance(s, dict) and s.get("status") in ("ok", "model_error")
                        and isinstance(s.get("output"), str) for s in obj["samples"])):
            found[obj["id"]].append(obj)
    out = {}
    for i, records in found.items():
        if len(records) == 1:
            out[i] = records[0]
        else:
            why = "no record in the shard's output" if not records else f"{len(records)} records in the shard's output"
            out[i] = {"id": i, "samples": [{"status": "model_error", "output": "", "reason": why}] * samples,
                      "charge": {}}
    return out


def charge_of(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The sum of the records' charges (CHARGE_KEYS; counts as ints)."""
    total = dict.fromkeys(CHARGE_KEYS, 0.0)
    for record in records:
        given = record.get("charge")
        charge: Mapping[str, Any] = given if isinstance(given, dict) else {}
        for key in CHARGE_KEYS:
            value = charge.get(key, 0)
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
                total[key] += value
    return {k: (int(v) if k != "eval_usd" else v) for k, v in total.items()}


class PromptTarget(ExamplesTarget):
    """The examples target of a prompt solution (see the module docstring). `judge`: the llm_judge
    checks' judge (None: a contract without llm_judge checks). Raises ValueError for a target that
    is not a prompt solution."""

    def __init__(self, contract: Contract, sandbox: SandboxSpec, salt: str, split: Split, project_root: Path, *,
                 judge: Judge | None = None, **kwargs: Any):
        super().__init__(contract, sandbox, salt, split, project_root, **kwargs)
        if self.section.solution_kind != "prompt" or self.section.model is None:
            raise ValueError("PromptTarget needs target.solution_kind = 'prompt' and [target.model]")
        self.model: ModelSection = self.section.model
        self.samples = self.model.samples
        self.judge = judge
        self.plain_checks = [c for c in self.section.checks if not isinstance(c, LlmJudgeCheck)]
        self.judge_checks = [c for c in self.section.checks if isinstance(c, LlmJudgeCheck)]
        self.score_kind: ScoreKind = "binary" if self.samples == 1 else "continuous"
        if self.samples > 1:
            self.test: GateTest = "betting"
            self.metric_range = (0.0, 1.0)
            self.max_unit_loss = 1.0

    def plan_settings(self) -> dict[str, Any]:
        """The examples settings plus the prompt's: template, eval model and judge (their identity)."""
        judge = self.section.judge
        return {**super().plan_settings(), "solution_kind": "prompt", "prompt_template": self.section.prompt_template,
                "model": self.model.identity(), "samples": self.samples,
                "judge": judge.identity() if judge is not None else None}

    def spec(self, task: Task, checkout: Path) -> JobSpec:
        """The shard's JobSpec for the in-kernel executor: the solution's text, template and inputs
        on stdin (PROMPT_ARGV is only a label)."""
        examples = self._examples(task)
        text, error = read_solution_text(checkout, self.section.solution or "")
        payload = prompt_payload(text, error, self.section.prompt_template, self.samples, examples)
        per_call = self.model.timeout_s * (self.model.max_retries + 1)
        return JobSpec(job_id=task.job_id, argv=PROMPT_ARGV, workdir=checkout, env={},
                       timeout_s=len(examples) * self.samples * per_call + 60.0,
                       resources=job_resources(self.contract.compute), sandbox=self.sandbox, stdin_bytes=payload)

    def read(self, task: Task, result: JobResult) -> TaskOutcome:
        """Judge each example's samples with the kernel's expected output and the checks."""
        examples = self._examples(task)
        charges: list[Mapping[str, Any]] = []
        if result.state != "ok":
            judged: dict[str, ExampleResult] = dict(failed_shard(examples, result))
        else:
            text = result.stdout_path.read_text("utf-8", "replace") if result.stdout_path is not None \
                else result.stdout_tail
            records = read_records(text.split("\n"), [ex.id for ex in examples], self.samples)
            judged = {}
            for ex in examples:
                judged[ex.id], judge_charge = self._judge_example(ex, records[ex.id])
                charges += [records[ex.id], {"charge": judge_charge}]
            if result.stdout_path is not None:
                write_judged(result.stdout_path.parent / JUDGED_NAME, judged.values())
        ok = result.state == "ok"
        score = sum(_fraction(r) for r in judged.values())
        record = {
            "job_id": task.job_id, "variant": task.variant, "unit": _shard_index(task.job_id), "seed": EXAMPLES_SEED,
            "state": result.state, "value": score if ok else None,
            "reason": _shard_reason(judged.values(), self.samples) if ok else next(iter(judged.values())).reason,
            "elapsed_s": result.elapsed_s, "cpu_s": result.cpu_s, "cached": False, "units_charged": len(examples),
            "tree": task.tree, "examples": _compact(judged.values()), **charge_of(charges),
        }
        return self._outcome(task, judged, record)

    def _judge_example(self, ex: Example, record: Mapping[str, Any]) -> tuple[PromptExampleResult, dict[str, float]]:
        """One example's samples judged: (its result, what its judge calls cost)."""
        passes, checks, reasons, errors, model_errors = 0, [], [], 0, []
        charge = dict.fromkeys(CHARGE_KEYS, 0.0)
        for k, sample in enumerate(record["samples"]):
            if sample["status"] != "ok":
                model_errors.append(str(sample.get("reason") or "no reply"))
                continue
            outcome = run_checks(self.plain_checks, ex.input, ex.expected_output, sample["output"],
                                 project_root=self.project_root, run_script=self.run_script)
            results, error = list(outcome.per_check), outcome.error
            for check in self.judge_checks:
                verdict = self._verdict(check, ex, sample["output"])
                for key in CHARGE_KEYS:
                    charge[key] += float(verdict.charge.get(key, 0))
                if verdict.passed is None:
                    error = error or verdict.reason
                    results.append(CheckResult(check.type, False, f"error: {verdict.reason}"))
                else:
                    results.append(CheckResult(check.type, verdict.passed, "" if verdict.passed else verdict.reason))
            checks += results
            errors += error is not None
            if error is None and all(c.passed for c in results):
                passes += 1
            else:
                reasons.append(f"sample {k}: " + (error or "; ".join(f"{c.type}: {c.reason}"
                                                                     for c in results if not c.passed)))
        charge = {k: (int(v) if k != "eval_usd" else v) for k, v in charge.items()}
        if model_errors:
            return PromptExampleResult(ex.id, False, "model_error", tuple(checks), f"model_error: {model_errors[0]}",
                                       shard_failed=True, passes=passes, samples=self.samples), charge
        status: ExampleStatus = "check_error" if errors else "ok"
        return PromptExampleResult(ex.id, passes == self.samples, status, tuple(checks), "; ".join(reasons)[:2000],
                                   passes=passes, samples=self.samples), charge

    def _verdict(self, check: LlmJudgeCheck, ex: Example, output: str) -> Verdict:
        if self.judge is None:
            return Verdict(None, "no judge model is available to this run", {})
        return self.judge(check, ex.input, ex.expected_output, output)

    def _outcome(self, task: Task, judged: Mapping[str, ExampleResult], record: Mapping[str, Any]) -> TaskOutcome:
        results = {j.job_id: _unit(j.job_id, j.variant, j.unit, judged[j.key or ""]) for j in task.jobs}
        return TaskOutcome(results, record)

    def reuse(self, task: Task, recorded: Mapping[str, Any]) -> TaskOutcome | None:
        """The shard's recorded results ({id: [passed, status, passes, samples]}), when they are for
        this tree, these examples and this many samples."""
        stored = recorded.get("examples")
        examples = self._examples(task)
        if recorded.get("tree") != task.tree or not isinstance(stored, Mapping) \
                or set(stored) != {ex.id for ex in examples}:
            return None
        whole = recorded.get("state") != "ok"
        judged: dict[str, ExampleResult] = {}
        for ex in examples:
            entry = stored[ex.id]
            if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], bool)
                    and entry[1] in EXAMPLE_STATUSES and isinstance(entry[2], int) and entry[3] == self.samples):
                return None
            failed = whole or entry[1] == "model_error"
            reason = "" if entry[0] else f"{entry[1]} (recorded by job {task.job_id})"
            status = cast(ExampleStatus, entry[1])
            judged[ex.id] = PromptExampleResult(ex.id, entry[0] and not failed, status, (), reason,
                                                shard_failed=failed, passes=entry[2], samples=entry[3])
        return self._outcome(task, judged, recorded)

    def summary(self, values: Sequence[float]) -> tuple[float | None, float | None]:
        """One sample: the pass rate and its Wilson bound. More: the mean pass fraction and its
        Hoeffding (1963) lower bound mean - sqrt(ln(1/0.025) / (2n)) (scores in [0, 1])."""
        if self.samples == 1 or not values:
            return super().summary(values)
        mean = sum(values) / len(values)
        return mean, max(0.0, mean - math.sqrt(math.log(1 / BOUND_Z_DELTA) / (2 * len(values))))


def _fraction(result: ExampleResult) -> float:
    if isinstance(result, PromptExampleResult):
        return result.passes / result.samples
    return 1.0 if result.passed else 0.0


def _unit(job_id: str, variant: str, unit: int, result: ExampleResult) -> UnitResult:
    """One example as the gate sees it: its pass fraction, or a failed measurement (its shard failed
    as a whole, or the model gave no reply)."""
    if result.shard_failed:
        return UnitResult(job_id, variant, unit, None, True, result.status, result.reason, result)
    return UnitResult(job_id, variant, unit, _fraction(result), False, result.status, result.reason, result)


def _compact(results: Sequence[ExampleResult] | Any) -> dict[str, list[Any]]:
    """What `job.finished` keeps per example of a prompt shard: {id: [passed, status, passes, samples]}."""
    out = {}
    for r in results:
        passes, samples = (r.passes, r.samples) if isinstance(r, PromptExampleResult) else (int(r.passed), 1)
        out[r.example_id] = [r.passed, r.status, passes, samples]
    return out


def _shard_reason(results: Any, samples: int) -> str:
    results = list(results)
    if samples == 1:
        return f"{sum(r.passed for r in results)}/{len(results)} examples passed"
    return f"{sum(_fraction(r) for r in results):.2f}/{len(results)} pass fraction summed over examples"
