"""Measuring a solution on examples (`target.kind = "examples"`): the pure pieces of a shard job
(its stdin, limits, how its output is judged and recorded). `examples_target.ExamplesTarget` puts
them behind the Target seam; the one runner (`loop/measure.py`) runs the shards.

What a job sees: a checkout WITHOUT `target.examples` nor the caller's `exclude`
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

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from ratchet.compute.base import JobResult
from ratchet.targets.base import UnitResult
from ratchet.targets.checks import CheckResult, ScriptRunner, run_checks
from ratchet.targets.examples import Example

ExampleStatus = Literal["ok", "crash", "timeout", "output_too_large", "missing", "check_error", "model_error"]
"""How one example's run ended, as the kernel judged it.

ok: the solution exited 0 and every check judged its output (`passed` says whether all passed).
crash: the solution exited non-zero or was killed by a signal (or the shard's job failed as a
whole). timeout: the solution ran past `target.timeout_s` (or the shard's job timed out).
output_too_large: its stdout passed EXAMPLE_OUTPUT_CAP_BYTES. missing: the shard's output held no
single valid record for it. check_error: a check could not judge (a custom script crashed or timed
out, an expected value of a type the check cannot judge); the example counts as failed.
model_error: a prompt solution's eval model gave no reply (HTTP error, timeout, unreachable server,
after the client's retries): no verdict on the prompt, a failed measurement (docs/prompts.md).
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
    example, so the gate treats it as a failed measurement, not as a 0 (see as_unit_result).
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


def as_unit_result(job_id: str, variant: str, unit: int, result: ExampleResult) -> UnitResult:
    """One example's result as the gate sees it: 1.0 (passed) or 0.0 (failed).

    A failed example (wrong output, crash, timeout, output too large, missing record, check error)
    is a 0 score, not a measurement failure: in examples mode the solution's failures ARE the
    measurement. Only an example whose shard's job failed as a whole (`shard_failed`) has no
    verdict and is a failed measurement (a candidate is then never accepted, a champion is retried),
    so a champion shard lost to the machine cannot hand the candidate free wins.
    """
    if result.shard_failed:
        return UnitResult(job_id, variant, unit, None, True, result.status, result.reason, result)
    return UnitResult(job_id, variant, unit, 1.0 if result.passed else 0.0, False, result.status, result.reason,
                      result)


def compact(results: Iterable[ExampleResult], checks: bool = False) -> dict[str, list[Any]]:
    """What `job.finished` keeps per example: {id: [passed, status]}, and with `checks` (a run with
    guardrails on checks) a third entry, one "1"/"0" per check that ran ("" when none did)."""
    if checks:
        return {r.example_id: [r.passed, r.status, "".join("1" if c.passed else "0" for c in r.per_check)]
                for r in results}
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
        if not (isinstance(entry, list | tuple) and len(entry) in (2, 3) and isinstance(entry[0], bool)
                and entry[1] in EXAMPLE_STATUSES and (len(entry) == 2 or isinstance(entry[2], str))):
            return None
        passed = entry[0] and entry[1] == "ok" and not whole
        reason = "" if passed else f"{entry[1]} (recorded by job {job_id})"
        checks = tuple(CheckResult("", bit == "1", "") for bit in entry[2]) if len(entry) == 3 else ()
        out[ex.id] = ExampleResult(ex.id, passed, entry[1], checks, reason, shard_failed=whole)
    return out
