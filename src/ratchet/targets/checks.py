"""Checks: does one example's actual output pass `[[target.checks]]` (docs/examples-checks.md)?

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
from typing import Any, Literal, NamedTuple

from ratchet.compute.programs import locate
from ratchet.core.contract import (
    CustomCheck,
    ExactMatchCheck,
    JsonEqualityCheck,
    NormalizedMatchCheck,
    NumericToleranceCheck,
    RegexMatchCheck,
)
from ratchet.core.errors import DataError
from ratchet.targets.shard_runner import STATUSES, ProcessResult, run_process

AnyCheck = (
    ExactMatchCheck | NormalizedMatchCheck | JsonEqualityCheck
    | RegexMatchCheck | NumericToleranceCheck | CustomCheck
)
"""Any `[[target.checks]]` model."""

CHECKS_VERSION = 2
"""The version of the checks' ids and semantics (docs/examples-checks.md). Recorded in
`run.started`; a run recorded under another version is refused on resume. 1: expected outputs
were text (non-string values coerced, a string read as JSON text by json_equality, Unicode digits
accepted). 2: expected outputs keep their JSON type, one trailing newline ignored on each side of a
text check, ASCII digits only."""

JsonType = Literal["string", "number", "boolean", "null", "array", "object"]
"""The JSON type of a value, as the checks' table in docs/examples-checks.md names them."""

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
    "" when passed); `name`: the check's optional `name` (None when it has none)."""

    type: str
    passed: bool
    reason: str
    name: str | None = None


@dataclass(frozen=True)
class CheckOutcome:
    """All checks on one example. `passed`: every check passed and none errored; `per_check`: one
    CheckResult per check, in contract order; `error`: set when a check could not judge (a custom
    script crashed or timed out, an expected output of a JSON type the check cannot judge): the
    example then counts as failed (status `check_error`) and the error is reported."""

    passed: bool
    per_check: tuple[CheckResult, ...]
    error: str | None = None


class _CheckError(Exception):
    """A check that could not judge (as opposed to a failed output)."""


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def json_type(value: Any) -> JsonType:
    """The JSON type name of a parsed JSON value: string, number, boolean, null, array or object."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def strip_one_newline(text: str) -> str:
    """`text` without ONE trailing "\n" or "\r\n" (the trailing newline rule: the shard runner
    strips one from the solution's stdout, and the text checks strip one from a string expected
    output, so `print(answer)` matches "answer" and "answer\n" alike)."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def expected_text(check_type: str, expected: Any) -> str:
    """The expected output of a text check (exact_match, normalized_match): a JSON string, one
    trailing newline stripped. Raises _CheckError for any other JSON type: a text check never
    guesses how a number or an object should have been written (1.0 is not "1")."""
    if isinstance(expected, str):
        return strip_one_newline(expected)
    raise _CheckError(f"{check_type} compares text, but the expected output is a JSON {json_type(expected)} "
                      f"({_clip(_dumps(expected))}): write it as a JSON string, or use json_equality "
                      "or numeric_tolerance")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- the pure checks ------------------------------------------------------------------------------


def exact_match(expected: Any, actual: str) -> str:
    """"" when the output equals the expected string character for character (one trailing
    newline ignored on each side), else the reason. Raises _CheckError for a non-string expected."""
    want = expected_text("exact_match", expected)
    return "" if actual == want else f"output {_clip(repr(actual))} != expected {_clip(repr(want))}"


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


def normalized_match(check: NormalizedMatchCheck, expected: Any, actual: str) -> str:
    """"" when the normalized output equals the normalized expected string, else the reason.
    Raises _CheckError for a non-string expected."""
    a, e = normalize(actual, check), normalize(expected_text("normalized_match", expected), check)
    return "" if a == e else f"normalized output {_clip(repr(a))} != {_clip(repr(e))}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def json_equal(a: Any, b: Any) -> bool:
    """Equality by JSON type, recursively. Booleans equal only booleans (`true` never equals `1`);
    numbers compare by value whatever their form (`1` equals `1.0` and `1e0`); strings, null,
    arrays (in order) and objects (same keys, values equal) as in JSON. Iterative, so any depth
    of nesting is safe."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, int | float) and isinstance(y, int | float):
            if x != y:
                return False
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif not (type(x) is type(y) and x == y):
            return False
    return True


def json_equality(expected: Any, actual: str) -> str:
    """"" when the output parses as JSON and is json_equal to the expected JSON value, else the
    reason. The expected value is compared as it is: a JSON string expects the output to be that
    string JSON-encoded (`"ok"` with its quotes), never JSON text to be parsed again."""
    try:
        got = _parse_json(actual)
    except (ValueError, RecursionError) as exc:
        return f"output is not JSON ({_clip(str(exc))})"
    return "" if json_equal(expected, got) else f"JSON output {_clip(actual)} != expected {_clip(_dumps(expected))}"


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


_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                     re.IGNORECASE | re.ASCII)


def parse_number(text: str) -> float | None:
    """A decimal number written with ASCII digits (surrounding ASCII whitespace allowed;
    `inf`/`nan` spelled out), else None. Other scripts' digits (Arabic-Indic, fullwidth), `1_000`
    and hex are not numbers here."""
    stripped = text.strip(" \t\r\n")
    return float(stripped) if _NUMBER.fullmatch(stripped) else None


def expected_number(expected: Any) -> float:
    """The expected value of numeric_tolerance: a JSON number, or a JSON string holding an ASCII
    decimal number. Raises _CheckError for anything else (a boolean, null, an array, NaN)."""
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return float(expected)
    want = parse_number(expected) if isinstance(expected, str) else None
    if want is None or math.isnan(want):
        raise _CheckError(f"numeric_tolerance: the expected output {_clip(_dumps(expected))} is not a number")
    return want


def numeric_tolerance(check: NumericToleranceCheck, expected: Any, actual: str) -> str:
    """"" when |actual - expected| <= atol + rtol * |expected|, else the reason. A non-numeric or
    NaN output fails; equal infinities pass, any other infinity fails. Raises _CheckError when the
    expected value is not a number (see expected_number)."""
    want = expected_number(expected)
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


def unjudgeable(check: AnyCheck, expected: Any) -> str | None:
    """Why `check` can never judge an example whose expected output is `expected` (every run of it
    would be a check_error), or None. Pure: what `ratchet check` counts before any run."""
    try:
        if isinstance(check, ExactMatchCheck | NormalizedMatchCheck):
            expected_text(check.type, expected)
        elif isinstance(check, NumericToleranceCheck):
            expected_number(expected)
    except _CheckError as exc:
        return str(exc)
    return None


def refuse_other_checks_version(recorded: int | None) -> None:
    """Refuse to resume an examples run judged under other check rules. `recorded`: the
    CHECKS_VERSION in the run's `run.started` (None: a run recorded before the version was, i.e.
    version 1). Raises DataError `examples.checks_version` (exit 2) when it differs from this
    build's CHECKS_VERSION."""
    version = 1 if recorded is None else recorded
    if version != CHECKS_VERSION:
        raise DataError(
            "examples.checks_version",
            f"this run was judged under examples-check rules version {version}; this build judges under "
            f"version {CHECKS_VERSION}, so its verdicts would mix two sets of rules",
            hint="start a new run (docs/examples-checks.md#versions-of-these-rules says what changed)",
        )


# --- the custom check -----------------------------------------------------------------------------


def default_script_runner(argv: list[str], stdin_data: bytes, timeout_s: float, cwd: Path) -> ProcessResult:
    """Run a custom check in `cwd` with only CUSTOM_ENV_KEYS of the environment, its own process
    group, killed on timeout; stdout capped at CUSTOM_OUTPUT_CAP bytes."""
    env = {k: os.environ[k] for k in CUSTOM_ENV_KEYS if k in os.environ}
    return run_process(argv, stdin_data, timeout_s, CUSTOM_OUTPUT_CAP, cwd=str(cwd), env=env)


def check_python() -> str:
    """The interpreter a custom check runs with: `python3` on this process's PATH (a version
    manager's shim resolved to the version it selects, `compute.programs.locate`), the one the
    user's shell and the jobs find; Ratchet's own interpreter only when PATH has none."""
    return locate("python3", os.environ.get("PATH", "")) or sys.executable


def custom(check: CustomCheck, input_text: str, expected: Any, actual: str, project_root: Path,
           run_script: ScriptRunner) -> str:
    """Run `check.script` (relative to project_root) as [check_python(), script] with JSON
    {"input", "expected_output", "actual_output"} on stdin: `input` the text the solution read,
    `expected_output` the JSON value as given in the examples file, `actual_output` the output
    (one trailing newline stripped). Exit 0: "" (pass); exit 1: the stderr
    tail as the reason. A missing script, any other exit code, a signal or a timeout raises
    _CheckError."""
    script = (project_root / check.script).resolve()
    if not script.is_relative_to(project_root.resolve()):
        raise _CheckError(f"custom check {check.script} resolves outside {project_root}")
    if not script.is_file():
        raise _CheckError(f"custom check {check.script} does not exist in {project_root}")
    payload = json.dumps({"input": input_text, "expected_output": expected, "actual_output": actual})
    try:
        argv = [check_python(), str(script)]
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


def _judge(check: AnyCheck, input_text: str, expected: Any, actual: str, project_root: Path,
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


def run_checks(checks: Sequence[AnyCheck], input: str, expected: Any, actual: str, *,
               project_root: Path, run_script: ScriptRunner | None = None) -> CheckOutcome:
    """Judge one example's `actual` output (the solution's stdout, one trailing newline already
    stripped by the shard runner) against `expected` (the JSON value of the example's
    expected_output) with every check, in order. Semantics per JSON type: docs/examples-checks.md.

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
        results.append(CheckResult(check.type, reason == "", reason, check.name))
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
