"""Measuring a solution on examples (`target.kind = "examples"`): shards of examples run as jobs,
the checks judged by the kernel, a ledger event before and after every shard (DESIGN.md §4-§6).

The shell around the gate for examples targets, mirroring `measure.JobRunner`: one job per shard,
each in a clean checkout of the tree under `<work_dir>/<job_id>/` (removed after the job);
`job.started` / `job.finished` recorded through `record`; shards already in `done` reused, never
re-run; `measure.Interrupted` raised when the executor was cancelled.

What a job sees (§5): a checkout WITHOUT `target.examples` nor the caller's `exclude`
(`contract.hidden_paths`: scope.hidden and target.examples), and on stdin the shard: ids and
inputs, never an expected output. The kernel keeps the expected outputs and judges the runner's
records with `run_checks` once the job has ended; custom check scripts run from `project_root`.

Where the shard runner lives: its source goes on the command line, `python3 -I -c <source>`, with
the shard on stdin. Nothing is written into the checkout, so a candidate tree can neither replace
the runner nor plant a symlink where it would be written, and `-I` keeps the checkout off the
runner's sys.path (a candidate's `json.py` cannot stand in for the runner's `json`). The solution
itself still runs as `python3 <solution>` in the checkout.
"""

from __future__ import annotations

import functools
import json
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from ratchet.compute.base import Executor, JobResult, JobSpec, SandboxSpec, run_jobs
from ratchet.compute.local import job_env
from ratchet.core.contract import TargetSection
from ratchet.core.gate import UnitScore
from ratchet.loop.measure import Interrupted, Record
from ratchet.targets import shard_runner
from ratchet.targets.checks import CheckResult, ScriptRunner, parse_shard_lines, run_checks
from ratchet.targets.examples import Example
from ratchet.workspace.git import Git

ExampleStatus = Literal["ok", "crash", "timeout", "output_too_large", "missing", "check_error"]
"""How one example's run ended, as the kernel judged it.

ok: the solution exited 0 and every check judged its output (`passed` says whether all passed).
crash: the solution exited non-zero or was killed by a signal (or the shard's job failed as a
whole). timeout: the solution ran past `target.timeout_s` (or the shard's job timed out).
output_too_large: its stdout passed EXAMPLE_OUTPUT_CAP_BYTES. missing: the shard's output held no
single valid record for it. check_error: a check could not judge (a custom script crashed or timed
out, an expected output that is not JSON or not a number); the example counts as failed.
"""

EXAMPLE_STATUSES: tuple[str, ...] = get_args(ExampleStatus)

DEFAULT_SHARD_SIZE = 100
"""Examples per job when the caller does not say."""

EXAMPLE_OUTPUT_CAP_BYTES = 256 * 1024
"""Bytes of one example's stdout the runner keeps; past it the example is `output_too_large`."""

PER_EXAMPLE_SLACK_S = 2.0
"""Seconds added to `target.timeout_s` per example of a shard: process start and the runner's
drain grace after the solution exits."""

SHARD_SLACK_S = 30.0
"""Seconds added once per shard: the runner's and the sandbox's start."""

RECORD_OVERHEAD_BYTES = 16 * 1024
"""Bytes of one runner record besides the output: id, status, the stderr tail (2,000 characters,
at most 6 bytes each once JSON-escaped), numbers and keys."""

JSON_ESCAPE_FACTOR = 6
"""Worst-case growth of one output byte in a runner record (a control byte becomes `\\u00XX`)."""

EXAMPLES_SEED = 0
"""The seed every examples job carries in `target.seed_env`: a solution's answer should depend on
its input only, and both variants of a comparison see the same value."""

REASON_CHARS = 300  # characters of a job's stderr quoted in a reason


@dataclass(frozen=True)
class ExampleResult:
    """One example measured on one tree.

    passed: every check passed on a clean run (status ok). status: see ExampleStatus. per_check:
    one CheckResult per `[[target.checks]]` when the checks ran (status ok or check_error), else ().
    reason: why it failed ("" when passed); it may quote the expected output, so a val or test
    example's reason must never reach an agent. shard_failed: the shard's job failed as a whole
    (runner killed, shard timeout, state unknown): no verdict on the solution exists for this
    example, so the gate treats it as a failed measurement, not as a 0 (see paired_binary_scores).
    """

    example_id: str
    passed: bool
    status: ExampleStatus
    per_check: tuple[CheckResult, ...] = ()
    reason: str = ""
    shard_failed: bool = False


# --- pure pieces ----------------------------------------------------------------------------------


def shard_timeout_s(n: int, per_example_s: float, slack_s: float = SHARD_SLACK_S) -> float:
    """Wall seconds a shard of `n` examples may take: n * (per_example_s + PER_EXAMPLE_SLACK_S)
    + slack_s. The runner kills each example at per_example_s, so only a runner that is itself
    hindered (stopped, starved) reaches this."""
    return n * (per_example_s + PER_EXAMPLE_SLACK_S) + slack_s


def shard_output_cap(n: int, example_cap: int = EXAMPLE_OUTPUT_CAP_BYTES) -> int:
    """Bytes of a shard job's stdout kept: room for n worst-case records (every output byte
    JSON-escaped) plus one record's overhead, so an honest runner is never cut off."""
    return (n + 1) * (JSON_ESCAPE_FACTOR * example_cap + RECORD_OVERHEAD_BYTES)


def shard_payload(examples: Sequence[Example], solution: str, timeout_s: float,
                  output_cap: int = EXAMPLE_OUTPUT_CAP_BYTES) -> bytes:
    """The shard runner's stdin: {"solution", "timeout_s", "output_cap", "examples": [{"id",
    "input"}]} as JSON bytes (sorted keys, ASCII). Expected outputs are never part of it."""
    return _dumps({
        "solution": solution,
        "timeout_s": timeout_s,
        "output_cap": output_cap,
        "examples": [{"id": ex.id, "input": ex.input} for ex in examples],
    })


def _dumps(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")


def make_shards(examples: Sequence[Example], size: int) -> list[tuple[Example, ...]]:
    """Consecutive chunks of `size` examples, in the given order (the last may be shorter).
    Raises ValueError for size < 1 or an example id given twice (its records would collide)."""
    if size < 1:
        raise ValueError(f"shard size must be >= 1, got {size}")
    ids = [ex.id for ex in examples]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"example {twice} is given twice")
    return [tuple(examples[i: i + size]) for i in range(0, len(examples), size)]


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:REASON_CHARS] if lines else ""


def _run_reason(record: Mapping[str, Any], timeout_s: float) -> str:
    """Why a record whose status is not ok failed."""
    status, stderr = record["status"], _last_line(record.get("stderr_tail") or "")
    if status == "timeout":
        return f"timed out after {timeout_s:g} s"
    if status == "output_too_large":
        return f"stdout passed {EXAMPLE_OUTPUT_CAP_BYTES} bytes"
    if status == "missing":
        return record.get("stderr_tail") or "no record in the shard's output"
    code = record.get("exit_code")
    what = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
    return f"crashed ({what})" + (f": {stderr}" if stderr else "")


def judge_record(example: Example, record: Mapping[str, Any], checks: Sequence[Any], *,
                 project_root: Path, timeout_s: float,
                 run_script: ScriptRunner | None = None) -> ExampleResult:
    """One runner record (see `parse_shard_lines`) -> its ExampleResult. Checks run only on a
    clean run (status ok), with the kernel's expected output."""
    if record["status"] != "ok":
        return ExampleResult(example.id, False, record["status"], (), _run_reason(record, timeout_s))
    outcome = run_checks(checks, example.input, example.expected_output, record["output"],
                         project_root=project_root, run_script=run_script)
    if outcome.error is not None:
        return ExampleResult(example.id, False, "check_error", outcome.per_check, outcome.error)
    reason = "; ".join(f"{c.type}: {c.reason}" for c in outcome.per_check if not c.passed)
    return ExampleResult(example.id, outcome.passed, "ok", outcome.per_check, reason)


def failed_shard(examples: Iterable[Example], result: JobResult) -> dict[str, ExampleResult]:
    """Every example of a shard whose job failed as a whole: failed, status timeout (the shard
    timed out) or crash (anything else), `shard_failed` set, the job's reason quoted."""
    status: ExampleStatus = "timeout" if result.state == "timeout" else "crash"
    stderr = _last_line(result.stderr_tail)
    reason = f"the shard's job ended {result.state}: {result.reason}"
    if stderr:
        reason += f"; stderr: {stderr}"
    return {ex.id: ExampleResult(ex.id, False, status, (), reason, shard_failed=True) for ex in examples}


def paired_binary_scores(champion: Mapping[str, ExampleResult], candidate: Mapping[str, ExampleResult],
                         order: Sequence[str]) -> list[UnitScore]:
    """The gate's paired scores of an examples trial: unit i is example `order[i]`, each side 1.0
    (passed) or 0.0 (failed).

    A failed example (wrong output, crash, timeout, output too large, missing record, check error)
    is a 0 score, not a measurement failure: in examples mode the solution's failures ARE the
    measurement. Only an example whose shard's job failed as a whole (`shard_failed`) has no
    verdict and becomes a failed side (`*_failed`: a candidate is then never accepted, a champion
    is retried), so a champion shard lost to the machine cannot hand the candidate free wins. An
    example absent from a side's mapping has not run yet (None, not failed).
    """
    def side(result: ExampleResult | None) -> tuple[float | None, bool]:
        if result is None:
            return None, False
        if result.shard_failed:
            return None, True
        return (1.0 if result.passed else 0.0), False

    scores = []
    for unit, example_id in enumerate(order):
        champ, champ_failed = side(champion.get(example_id))
        cand, cand_failed = side(candidate.get(example_id))
        scores.append(UnitScore(unit, champ, cand, champion_failed=champ_failed,
                                candidate_failed=cand_failed))
    return scores


def compact(results: Iterable[ExampleResult]) -> dict[str, list[Any]]:
    """What `job.finished` keeps per example: {id: [passed, status]}."""
    return {r.example_id: [r.passed, r.status] for r in results}


def from_compact(job_id: str, data: Mapping[str, Any], tree: str,
                 shard: Sequence[Example]) -> dict[str, ExampleResult] | None:
    """Rebuild a shard's results from its `job.finished` data, or None when that data is not for
    this tree and exactly these examples (or is malformed): the shard must then run again."""
    stored = data.get("examples")
    if data.get("tree") != tree or not isinstance(stored, Mapping):
        return None
    if set(stored) != {ex.id for ex in shard}:
        return None
    whole = data.get("state") != "ok"
    out = {}
    for ex in shard:
        entry = stored[ex.id]
        if not (isinstance(entry, list | tuple) and len(entry) == 2 and isinstance(entry[0], bool)
                and entry[1] in EXAMPLE_STATUSES):
            return None
        passed = entry[0] and entry[1] == "ok" and not whole
        reason = "" if passed else f"{entry[1]} (recorded by job {job_id})"
        out[ex.id] = ExampleResult(ex.id, passed, entry[1], (), reason, shard_failed=whole)
    return out


# --- the runner -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Shard:
    job_id: str
    index: int
    examples: tuple[Example, ...]


class ExamplesRunner:
    """Measures a solution tree on examples, one job per shard (see the module docstring).

    target: a `[target]` of kind examples. project_root: where custom check scripts live.
    sandbox: the resolved SandboxSpec of every job. work_dir: where `<job_id>/` checkouts go.
    record: appends a ledger event. done: job_id -> `job.finished` data already in the ledger.
    exclude: paths never written into a checkout (pass `contract.hidden_paths`; target.examples is
    added regardless). shard_size: examples per job. slack_s: see SHARD_SLACK_S. run_script: runs
    custom checks (default: a subprocess). progress: called with (examples finished, total).
    Raises ValueError for a target that is not of kind examples or shard_size < 1.
    """

    def __init__(
        self,
        *,
        git: Git,
        executor: Executor,
        target: TargetSection,
        project_root: Path,
        sandbox: SandboxSpec,
        work_dir: Path,
        record: Record,
        done: Mapping[str, Mapping[str, Any]] | None = None,
        exclude: Sequence[str] = (),
        shard_size: int = DEFAULT_SHARD_SIZE,
        slack_s: float = SHARD_SLACK_S,
        run_script: ScriptRunner | None = None,
        progress: Callable[[int, int], None] | None = None,
    ):
        if target.kind != "examples" or not target.examples or not target.solution:
            raise ValueError(f"ExamplesRunner needs a target of kind examples, not {target.kind!r}")
        if shard_size < 1:
            raise ValueError(f"shard_size must be >= 1, got {shard_size}")
        self.git = git
        self.executor = executor
        self.target = target
        self.project_root = Path(project_root)
        self.sandbox = sandbox
        self.work_dir = Path(work_dir)
        self.record = record
        self.done = dict(done or {})
        self.exclude = tuple(dict.fromkeys([target.examples, *exclude]))
        self.shard_size = shard_size
        self.slack_s = slack_s
        self.run_script = run_script
        self.progress = progress
        self._lock = threading.Lock()

    def measure(self, tree: str, examples: Sequence[Example], *, job_prefix: str, attempt: int,
                stage: str, variant: str) -> dict[str, ExampleResult]:
        """Measure `tree` on `examples`; returns example id -> ExampleResult for every example.

        Shard k (consecutive chunks of shard_size, in the given order) is job `<job_prefix>-s<kkk>`.
        Shards in `done` for this tree and these examples are reused without a job. Raises
        Interrupted when the executor was cancelled (shards that finished are recorded),
        ValueError for an example given twice.
        """
        out: dict[str, ExampleResult] = {}
        todo: list[_Shard] = []
        for k, chunk in enumerate(make_shards(examples, self.shard_size)):
            shard = _Shard(f"{job_prefix}-s{k:03d}", k, chunk)
            reused = from_compact(shard.job_id, self.done[shard.job_id], tree, chunk) \
                if shard.job_id in self.done else None
            if reused is None:
                todo.append(shard)
            else:
                out.update(reused)
        total = len(examples)
        self._progress(len(out), total)
        if todo:
            self._run(tree, todo, out, attempt=attempt, stage=stage, variant=variant, total=total)
        return out

    def _run(self, tree: str, todo: list[_Shard], out: dict[str, ExampleResult], *, attempt: int,
             stage: str, variant: str, total: int) -> None:
        by_id = {s.job_id: s for s in todo}

        def on_start(job_id: str, pid: str) -> None:
            self._record("job.started", {"job_id": job_id, "attempt": attempt, "stage": stage,
                                         "variant": variant, "unit": by_id[job_id].index, "pid": int(pid)})

        def on_result(result: JobResult) -> None:
            if result.state == "cancelled":
                return
            shard = by_id[result.job_id]
            results = self._judge(shard, result)
            self._finish(shard, result, results, tree, attempt=attempt, stage=stage, variant=variant)
            out.update(results)
            self._progress(len(out), total)

        checkouts = [self.work_dir / s.job_id for s in todo]
        try:
            specs = [self._spec(s, tree, variant) for s in todo]
            results = run_jobs(self.executor, specs, on_start, on_result)
        finally:
            for checkout in checkouts:
                shutil.rmtree(checkout, ignore_errors=True)
        if any(r.state == "cancelled" for r in results):
            raise Interrupted("jobs were cancelled")

    def _spec(self, shard: _Shard, tree: str, variant: str) -> JobSpec:
        checkout = self.work_dir / shard.job_id
        if checkout.exists():  # a partial checkout of a killed kernel: start from scratch
            shutil.rmtree(checkout)
        checkout.parent.mkdir(parents=True, exist_ok=True)
        self.git.materialize_tree(tree, checkout, exclude=self.exclude)
        n = len(shard.examples)
        payload = shard_payload(shard.examples, self.target.solution or "", self.target.timeout_s)
        env = job_env(self.target.seed_env, EXAMPLES_SEED, shard.job_id, variant, str(shard.index),
                      sandbox=self.sandbox)
        return JobSpec(
            job_id=shard.job_id,
            argv=("python3", "-I", "-c", _runner_source()),
            workdir=checkout,
            env=env,
            timeout_s=shard_timeout_s(n, self.target.timeout_s, self.slack_s),
            sandbox=self.sandbox,
            stdin_bytes=payload,
            output_cap_bytes=shard_output_cap(n),
        )

    def _judge(self, shard: _Shard, result: JobResult) -> dict[str, ExampleResult]:
        if result.state != "ok":
            return failed_shard(shard.examples, result)
        ids = [ex.id for ex in shard.examples]
        if result.stdout_path is not None and result.stdout_path.is_file():
            # newline="\n": records end in "\n" only; a raw U+2028 or "\x85" inside one is data
            with open(result.stdout_path, encoding="utf-8", errors="replace", newline="\n") as lines:
                records = parse_shard_lines(lines, ids)
        else:
            records = parse_shard_lines(result.stdout_tail.split("\n"), ids)
        return {
            ex.id: judge_record(ex, records[ex.id], self.target.checks, project_root=self.project_root,
                                timeout_s=self.target.timeout_s, run_script=self.run_script)
            for ex in shard.examples
        }

    def _finish(self, shard: _Shard, result: JobResult, results: Mapping[str, ExampleResult], tree: str,
                *, attempt: int, stage: str, variant: str) -> None:
        passes = sum(r.passed for r in results.values())
        n = len(shard.examples)
        ok = result.state == "ok"
        reason = f"{passes}/{n} examples passed" if ok else next(iter(results.values())).reason
        data = {
            "job_id": shard.job_id, "variant": variant, "unit": shard.index, "seed": EXAMPLES_SEED,
            "state": result.state, "value": float(passes) if ok else None, "reason": reason,
            "elapsed_s": result.elapsed_s, "cpu_s": result.cpu_s, "cached": False, "units_charged": n,
            "attempt": attempt, "stage": stage, "tree": tree, "examples": compact(results.values()),
        }
        self._record("job.finished", data)
        self.done[shard.job_id] = data

    def _record(self, kind: str, data: Mapping[str, Any]) -> None:
        with self._lock:
            self.record(kind, data)

    def _progress(self, finished: int, total: int) -> None:
        if self.progress is not None:
            self.progress(finished, total)


@functools.cache
def _runner_source() -> str:
    """The shard runner's source (stdlib only, no ratchet imports: it runs as a plain script)."""
    return Path(shard_runner.__file__).read_text(encoding="utf-8")
