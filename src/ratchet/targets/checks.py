"""Checks: does one example's actual output pass `[[target.checks]]` (DESIGN.md §4)?

Every check is pure except `custom`, which runs a script of the project through an injectable
runner (default: a subprocess in its own process group, killed on timeout). All checks of a target
must pass. This module also reads the shard runner's output on the kernel side
(`parse_shard_output`): the kernel, never the job, holds the expected outputs.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ratchet.core.contract import (
    CustomCheck,
    ExactMatchCheck,
    JsonEqualityCheck,
    NormalizedMatchCheck,
    NumericToleranceCheck,
    RegexMatchCheck,
)
from ratchet.targets.shard_runner import STATUSES, ProcessResult, run_process

AnyCheck = (
    ExactMatchCheck | NormalizedMatchCheck | JsonEqualityCheck
    | RegexMatchCheck | NumericToleranceCheck | CustomCheck
)
"""Any `[[target.checks]]` model."""

REASON_CHARS = 500  # characters of a failure reason kept (custom stderr, quoted outputs)
CUSTOM_OUTPUT_CAP = 64 * 1024  # bytes of a custom check's stdout read (it is ignored anyway)
CUSTOM_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "SYSTEMROOT")
"""The only environment variables a custom check script inherits (no operator secrets)."""

MISSING = "missing"
"""The status parse_shard_output gives an example with no (or more than one) valid record."""

ScriptRunner = Callable[[list[str], bytes, float, Path], ProcessResult]
"""Runs a custom check: (argv, stdin bytes, timeout_s, cwd) -> ProcessResult."""


class CheckResult(NamedTuple):
    """One check's verdict on one example: its `type`, whether it `passed`, and why not (`reason`,
    "" when passed)."""

    type: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class CheckOutcome:
    """All checks on one example. `passed`: every check passed and none errored; `per_check`: one
    CheckResult per check, in contract order; `error`: set when a check could not judge (a custom
    script crashed or timed out, an expected output that is not JSON or not a number): the example
    then counts as failed and the error is reported."""

    passed: bool
    per_check: tuple[CheckResult, ...]
    error: str | None = None


class _CheckError(Exception):
    """A check that could not judge (as opposed to a failed output)."""


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


# --- the pure checks ------------------------------------------------------------------------------


def exact_match(expected: str, actual: str) -> str:
    """"" when equal character for character, else the reason."""
    return "" if actual == expected else f"output {_clip(repr(actual))} != expected {_clip(repr(expected))}"


def normalize(text: str, check: NormalizedMatchCheck) -> str:
    """Apply the enabled normalizations: collapse runs of whitespace to one space, strip the ends,
    lowercase (str.lower), in that order."""
    if check.collapse_whitespace:
        text = re.sub(r"\s+", " ", text)
    if check.strip:
        text = text.strip()
    if check.lowercase:
        text = text.lower()
    return text


def normalized_match(check: NormalizedMatchCheck, expected: str, actual: str) -> str:
    """"" when the normalized outputs are equal, else the reason."""
    a, e = normalize(actual, check), normalize(expected, check)
    return "" if a == e else f"normalized output {_clip(repr(a))} != {_clip(repr(e))}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def json_equal(a: Any, b: Any) -> bool:
    """Equality by JSON type, recursively. Booleans equal only booleans (`true` never equals `1`);
    numbers compare by value whatever their form (`1` equals `1.0` and `1e0`); strings, null,
    arrays (in order) and objects (same keys, values equal) as in JSON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_equality(expected: str, actual: str) -> str:
    """"" when both parse as JSON and are json_equal, else the reason. An unparsable actual output
    fails; an unparsable expected output raises _CheckError (the data is wrong, not the output)."""
    try:
        want = _parse_json(expected)
    except ValueError as exc:
        raise _CheckError(f"json_equality: the expected output is not JSON ({exc})") from None
    try:
        got = _parse_json(actual)
    except (ValueError, RecursionError) as exc:
        return f"output is not JSON ({_clip(str(exc))})"
    return "" if json_equal(want, got) else f"JSON output {_clip(actual)} != expected {_clip(expected)}"


@lru_cache(maxsize=64)
def _compiled(pattern: str, ignorecase: bool) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE if ignorecase else 0)


def regex_match(check: RegexMatchCheck, actual: str) -> str:
    """"" when `pattern` matches the whole output (`fullmatch = true`) or anywhere in it
    (`fullmatch = false`, re.search); the expected output plays no part."""
    rx = _compiled(check.pattern, check.ignorecase)
    hit = rx.fullmatch(actual) if check.fullmatch else rx.search(actual)
    how = "fully match" if check.fullmatch else "occur in"
    return "" if hit else f"pattern {check.pattern!r} does not {how} output {_clip(repr(actual))}"


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def parse_number(text: str) -> float | None:
    """A decimal number (surrounding whitespace allowed; `inf`/`nan` spelled out), else None.
    Python-only forms (`1_000`, hex) are not numbers here."""
    stripped = text.strip()
    return float(stripped) if _NUMBER.fullmatch(stripped) else None


def numeric_tolerance(check: NumericToleranceCheck, expected: str, actual: str) -> str:
    """"" when |actual - expected| <= atol + rtol * |expected|, else the reason. A non-numeric or
    NaN output fails; equal infinities pass, any other infinity fails. A non-numeric or NaN
    expected output raises _CheckError."""
    want = parse_number(expected)
    if want is None or math.isnan(want):
        raise _CheckError(f"numeric_tolerance: the expected output {_clip(repr(expected))} is not a number")
    got = parse_number(actual)
    if got is None:
        return f"output {_clip(repr(actual))} is not a number"
    if math.isnan(got):
        return "output is NaN"
    if math.isinf(got) or math.isinf(want):
        return "" if got == want else f"output {got!r} != expected {want!r}"
    bound = check.atol + check.rtol * abs(want)
    gap = abs(got - want)
    return "" if gap <= bound else f"|{got!r} - {want!r}| = {gap:.6g} > {bound:.6g}"


# --- the custom check -----------------------------------------------------------------------------


def default_script_runner(argv: list[str], stdin_data: bytes, timeout_s: float, cwd: Path) -> ProcessResult:
    """Run a custom check in `cwd` with only CUSTOM_ENV_KEYS of the environment, its own process
    group, killed on timeout; stdout capped at CUSTOM_OUTPUT_CAP bytes."""
    env = {k: os.environ[k] for k in CUSTOM_ENV_KEYS if k in os.environ}
    return run_process(argv, stdin_data, timeout_s, CUSTOM_OUTPUT_CAP, cwd=str(cwd), env=env)


def custom(check: CustomCheck, input_text: str, expected: str, actual: str, project_root: Path,
           run_script: ScriptRunner) -> str:
    """Run `check.script` (relative to project_root) as [sys.executable, script] with JSON
    {"input", "expected_output", "actual_output"} on stdin. Exit 0: "" (pass); exit 1: the stderr
    tail as the reason. A missing script, any other exit code, a signal or a timeout raises
    _CheckError."""
    script = (project_root / check.script).resolve()
    if not script.is_relative_to(project_root.resolve()):
        raise _CheckError(f"custom check {check.script} resolves outside {project_root}")
    if not script.is_file():
        raise _CheckError(f"custom check {check.script} does not exist in {project_root}")
    payload = json.dumps({"input": input_text, "expected_output": expected, "actual_output": actual})
    try:
        argv = [sys.executable, str(script)]
        result = run_script(argv, payload.encode("utf-8"), check.timeout_s, project_root)
    except OSError as exc:
        raise _CheckError(f"custom check {check.script} could not start: {exc}") from None
    stderr = result.stderr_tail.decode("utf-8", "replace").strip()
    if result.timed_out:
        raise _CheckError(f"custom check {check.script} timed out after {check.timeout_s:g}s")
    if result.returncode == 0:
        return ""
    if result.returncode == 1:
        return _clip(stderr[-REASON_CHARS:]) or f"custom check {check.script} failed (no reason on stderr)"
    raise _CheckError(f"custom check {check.script} exited with code {result.returncode}"
                      + (f": {_clip(stderr[-REASON_CHARS:])}" if stderr else ""))


# --- all checks -----------------------------------------------------------------------------------


def _judge(check: AnyCheck, input_text: str, expected: str, actual: str, project_root: Path,
           run_script: ScriptRunner) -> str:
    if isinstance(check, ExactMatchCheck):
        return exact_match(expected, actual)
    if isinstance(check, NormalizedMatchCheck):
        return normalized_match(check, expected, actual)
    if isinstance(check, JsonEqualityCheck):
        return json_equality(expected, actual)
    if isinstance(check, RegexMatchCheck):
        return regex_match(check, actual)
    if isinstance(check, NumericToleranceCheck):
        return numeric_tolerance(check, expected, actual)
    if isinstance(check, CustomCheck):
        return custom(check, input_text, expected, actual, project_root, run_script)
    raise TypeError(f"unknown check {check!r}")


def run_checks(checks: Sequence[AnyCheck], input: str, expected: str, actual: str, *,
               project_root: Path, run_script: ScriptRunner | None = None) -> CheckOutcome:
    """Judge one example's `actual` output (the solution's stdout, one trailing newline already
    stripped by the shard runner) against `expected` with every check, in order.

    All checks are evaluated (per_check is complete); the outcome passes only when all pass and
    none errored. The first error is kept in `error` (later ones are in their check's reason).
    `run_script` runs custom checks (default: default_script_runner). Raises nothing for bad
    outputs; raises TypeError for an object that is not a check model.
    """
    runner = run_script or default_script_runner
    results: list[CheckResult] = []
    error: str | None = None
    for check in checks:
        try:
            reason = _judge(check, input, expected, actual, project_root, runner)
        except _CheckError as exc:
            reason = f"error: {exc}"
            error = error or str(exc)
        results.append(CheckResult(check.type, reason == "", reason))
    passed = error is None and all(r.passed for r in results)
    return CheckOutcome(passed, tuple(results), error)


# --- the shard runner's output, read by the kernel ------------------------------------------------


def _valid_record(obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
        return None
    if obj.get("status") not in STATUSES or not isinstance(obj.get("output"), str):
        return None
    code = obj.get("exit_code")
    elapsed = obj.get("elapsed_s")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        return None
    if elapsed is not None and (isinstance(elapsed, bool) or not isinstance(elapsed, int | float)):
        return None
    tail = obj.get("stderr_tail")
    return {"id": obj["id"], "status": obj["status"], "output": obj["output"], "exit_code": code,
            "stderr_tail": tail if isinstance(tail, str) else "", "elapsed_s": elapsed}


def missing_record(example_id: str, why: str) -> dict[str, Any]:
    """The record of an example the shard gave no usable answer for: status MISSING, `why` in
    stderr_tail."""
    return {"id": example_id, "status": MISSING, "output": "", "exit_code": None,
            "stderr_tail": why, "elapsed_s": None}


def parse_shard_output(stdout: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Records of the shard runner's stdout, keyed by example id, for exactly the given `ids`.

    Lines that are not JSON records of the runner's shape, or whose id was not asked for, are
    ignored. An id with no record gets status "missing"; an id with two records or more also
    gets "missing" (unknown is never read as a pass). Record keys: id, status, output, exit_code,
    stderr_tail, elapsed_s.
    """
    return parse_shard_lines(stdout.split("\n"), ids)  # not splitlines: U+2028 may sit in a record


def parse_shard_lines(lines: Iterable[str], ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`parse_shard_output` over an iterable of lines (e.g. an open stdout file, read lazily): keeps
    one record per id and a count, so memory stays bounded by the ids asked for, whatever a job
    printed."""
    wanted = list(dict.fromkeys(ids))
    first: dict[str, dict[str, Any]] = {}
    count: dict[str, int] = {i: 0 for i in wanted}
    for line in lines:
        try:
            record = _valid_record(json.loads(line))
        except (ValueError, RecursionError):
            continue
        if record is not None and record["id"] in count:
            count[record["id"]] += 1
            first.setdefault(record["id"], record)
    out = {}
    for i in wanted:
        if count[i] == 1:
            out[i] = first[i]
        else:
            out[i] = missing_record(i, "no record in the shard's output" if not count[i]
                                    else f"{count[i]} records in the shard's output")
    return out
