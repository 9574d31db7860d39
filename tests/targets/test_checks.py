"""Checks on one example's output, each with its edge cases; custom checks are real scripts run as
real subprocesses; the kernel-side reading of the shard runner's output."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ratchet.core.contract import (
    CustomCheck,
    ExactMatchCheck,
    JsonEqualityCheck,
    NormalizedMatchCheck,
    NumericToleranceCheck,
    RegexMatchCheck,
)
from ratchet.targets.checks import parse_shard_output, run_checks

EXACT = ExactMatchCheck(type="exact_match")
JSON = JsonEqualityCheck(type="json_equality")


def judge(check, expected, actual, root: Path | None = None, input_text: str = "in"):
    return run_checks([check], input_text, expected, actual, project_root=root or Path("."))


# --- exact and normalized -----------------------------------------------------------------------


def test_exact_match_is_character_for_character():
    assert judge(EXACT, "FR", "FR").passed
    outcome = judge(EXACT, "FR", "FR ")
    assert not outcome.passed and outcome.error is None
    assert outcome.per_check[0].type == "exact_match" and "'FR '" in outcome.per_check[0].reason


@pytest.mark.parametrize(
    ("toggles", "expected", "actual", "passes"),
    [
        ({}, "Hello  World", "  hello world\n", True),
        ({"lowercase": False}, "Hello World", "hello world", False),
        ({"strip": False}, "hello", " hello ", False),
        ({"collapse_whitespace": False}, "a b", "a \t b", False),
        ({"collapse_whitespace": False}, "a b", "  a b  ", True),
        ({"lowercase": False, "strip": False, "collapse_whitespace": False}, "a", "a", True),
    ],
)
def test_normalized_match_toggles(toggles, expected, actual, passes):
    check = NormalizedMatchCheck(type="normalized_match", **toggles)
    assert judge(check, expected, actual).passed is passes


# --- json equality ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "passes"),
    [
        ("true", "1", False),
        ("1", "true", False),
        ("false", "0", False),
        ("null", "false", False),
        ("1", "1.0", True),
        ("1", "1e0", True),
        ("2.5", "2.50", True),
        ('"1"', "1", False),
        ('{"a": [1, {"b": true}], "c": null}', '{"c": null, "a": [1.0, {"b": true}]}', True),
        ('{"a": [1, {"b": true}]}', '{"a": [1, {"b": 1}]}', False),
        ("[1, 2]", "[2, 1]", False),
        ('{"a": 1}', '{"a": 1, "b": 2}', False),
        ("[]", "{}", False),
    ],
)
def test_json_equality_compares_by_json_type(expected, actual, passes):
    assert judge(JSON, json.loads(expected), actual).passed is passes


def test_json_equality_fails_unparsable_output_with_a_reason():
    outcome = judge(JSON, {"a": 1}, "{'a': 1}")
    assert not outcome.passed and outcome.error is None
    assert "not JSON" in outcome.per_check[0].reason
    assert not judge(JSON, 1, "NaN").passed


def test_json_equality_reads_a_string_expected_value_as_a_string_not_as_json_text():
    assert judge(JSON, "hello", '"hello"').passed
    assert not judge(JSON, "hello", "hello").passed  # bare text is not JSON
    assert not judge(JSON, "[1, 2]", "[1, 2]").passed  # the string "[1, 2]" is not the array
    assert judge(JSON, "[1, 2]", '"[1, 2]"').passed
    assert judge(JSON, [1, 2], "[1,2]").passed


def test_json_equal_walks_deep_values_without_recursion_and_too_deep_output_fails():
    from ratchet.targets.checks import json_equal

    def nest(leaf, depth):
        for _ in range(depth):
            leaf = [leaf]
        return leaf

    assert json_equal(nest(1, 5000), nest(1.0, 5000)) and not json_equal(nest(1, 5000), nest(True, 5000))
    outcome = judge(JSON, nest(1, 5000), "[" * 5000 + "1" + "]" * 5000)
    assert not outcome.passed and outcome.error is None and "not JSON" in outcome.per_check[0].reason


# --- the JSON type of the expected value ---------------------------------------------------------


def test_text_checks_never_coerce_a_non_string_expected_value():
    for expected in (1.0, 1, True, None, [1], {"a": 1}):
        outcome = judge(EXACT, expected, "1")
        assert not outcome.passed and outcome.error is not None, expected
        assert "exact_match compares text" in outcome.error
    normalized = judge(NormalizedMatchCheck(type="normalized_match"), 1.0, "1")
    assert normalized.error is not None and "normalized_match compares text" in normalized.error
    assert judge(EXACT, "1.0", "1.0").passed and not judge(EXACT, "1.0", "1").passed


def test_one_trailing_newline_is_ignored_on_each_side_of_a_text_check():
    # the shard runner has already stripped one newline from stdout: print("a") arrives as "a"
    assert judge(EXACT, "a\n", "a").passed
    assert judge(EXACT, "a\r\n", "a").passed
    assert judge(EXACT, "a", "a").passed
    assert not judge(EXACT, "a\n\n", "a").passed
    assert judge(EXACT, "a\n\n", "a\n").passed  # print("a\n")
    assert not judge(EXACT, "a", "a\n").passed  # print("a\n") for "a" prints one line too many


@pytest.mark.parametrize("text", ["\u0661", "\uff11", "\u0661.5", "1\u0660", "\U0001d7cf"])
def test_numeric_tolerance_accepts_ascii_digits_only(text):
    check = NumericToleranceCheck(type="numeric_tolerance", atol=10.0)
    assert not judge(check, 1, text).passed, text
    assert judge(check, "1", "1").passed


def test_numeric_tolerance_expects_a_number_or_a_string_holding_one():
    check = NumericToleranceCheck(type="numeric_tolerance", atol=0.01)
    assert judge(check, 2.5, "2.505").passed
    assert judge(check, "2.5", "2.505").passed
    for expected in (True, None, [2.5], {"x": 2.5}, "\u0662.5"):
        outcome = judge(check, expected, "2.5")
        assert outcome.error is not None and "not a number" in outcome.error, expected


def test_unjudgeable_names_the_expected_values_a_check_can_never_judge():
    from ratchet.targets.checks import unjudgeable

    numeric = NumericToleranceCheck(type="numeric_tolerance")
    assert unjudgeable(EXACT, "x") is None and "exact_match compares text" in unjudgeable(EXACT, 3)
    assert unjudgeable(numeric, 3) is None and unjudgeable(numeric, "3") is None
    assert "not a number" in unjudgeable(numeric, "three")
    assert unjudgeable(JSON, "anything") is None


# --- regex --------------------------------------------------------------------------------------


def test_regex_fullmatch_versus_search_and_ignorecase():
    full = RegexMatchCheck(type="regex_match", pattern=r"[A-Z]{2}")
    anywhere = RegexMatchCheck(type="regex_match", pattern=r"[A-Z]{2}", fullmatch=False)
    folded = RegexMatchCheck(type="regex_match", pattern=r"[A-Z]{2}", ignorecase=True)
    assert judge(full, "ignored", "FR").passed
    assert not judge(full, "ignored", "code: FR").passed
    assert judge(anywhere, "ignored", "code: FR").passed
    assert not judge(full, "ignored", "fr").passed
    assert judge(folded, "ignored", "fr").passed
    assert "does not fully match" in judge(full, "x", "FRA").per_check[0].reason


# --- numeric tolerance --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("atol", "rtol", "expected", "actual", "passes"),
    [
        (0.0, 0.0, "3", "3.0", True),
        (0.01, 0.0, "1.00", " 1.009\n", True),
        (0.01, 0.0, "1.00", "1.02", False),
        (0.0, 0.1, "100", "109", True),
        (0.0, 0.1, "100", "111", False),
        (1.0, 0.0, "1", "nan", False),
        (1.0, 0.0, "1", "NaN", False),
        (1e9, 1e9, "1", "inf", False),
        (0.0, 0.0, "inf", "inf", True),
        (0.0, 0.0, "inf", "-inf", False),
        (1.0, 0.0, "1", "one", False),
        (1.0, 0.0, "1", "", False),
        (1.0, 0.0, "1000", "1_000", False),
        (1.0, 0.0, "1", "0x1", False),
    ],
)
def test_numeric_tolerance(atol, rtol, expected, actual, passes):
    check = NumericToleranceCheck(type="numeric_tolerance", atol=atol, rtol=rtol)
    outcome = judge(check, expected, actual)
    assert outcome.passed is passes, outcome
    assert outcome.error is None


def test_numeric_tolerance_with_a_non_numeric_expected_output_is_an_error():
    outcome = judge(NumericToleranceCheck(type="numeric_tolerance"), "n/a", "1")
    assert not outcome.passed and "not a number" in outcome.error
    outcome = judge(NumericToleranceCheck(type="numeric_tolerance"), "NaN", "1")
    assert not outcome.passed and "not a number" in outcome.error


# --- custom -------------------------------------------------------------------------------------


def write_script(root: Path, name: str, body: str) -> CustomCheck:
    (root / name).write_text(textwrap.dedent(body))
    return CustomCheck(type="custom", script=name, timeout_s=1.0)


JUDGE_BODY = """
    import json, sys
    data = json.load(sys.stdin)
    if data["actual_output"].upper() == data["expected_output"] and data["input"] == "in":
        sys.exit(0)
    print("wanted " + data["expected_output"], file=sys.stderr)
    sys.exit(1)
"""


def test_custom_check_passes_on_exit_0_and_fails_on_exit_1_with_stderr_as_reason(tmp_path):
    check = write_script(tmp_path, "judge.py", JUDGE_BODY)
    assert judge(check, "FR", "fr", tmp_path).passed
    outcome = judge(check, "FR", "de", tmp_path)
    assert not outcome.passed and outcome.error is None
    assert outcome.per_check[0].reason == "wanted FR"


def test_custom_check_other_exit_codes_are_errors(tmp_path):
    check = write_script(tmp_path, "broken.py", "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)\n")
    outcome = judge(check, "FR", "FR", tmp_path)
    assert not outcome.passed
    assert "exited with code 3" in outcome.error and "oops" in outcome.error
    assert outcome.per_check[0].reason.startswith("error:")


def test_custom_check_timeout_is_an_error_and_kills_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    check = write_script(tmp_path, "slow.py", f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """)
    check = check.model_copy(update={"timeout_s": 4.0})  # room for two interpreter starts on a loaded machine
    outcome = judge(check, "FR", "FR", tmp_path)
    assert not outcome.passed and "timed out after 4s" in outcome.error
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5.0  # SIGKILL is asynchronous: give the kernel a moment to reap
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the custom check's child survived its timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie awaiting its (dead) parent's reaper is gone
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_custom_check_missing_script_is_an_error(tmp_path):
    outcome = judge(CustomCheck(type="custom", script="nope.py"), "FR", "FR", tmp_path)
    assert "does not exist" in outcome.error


def test_custom_check_does_not_see_the_operators_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    body = "import os, sys\nsys.exit(1 if 'SECRET_TOKEN' in os.environ else 0)\n"
    check = write_script(tmp_path, "env.py", body)
    assert judge(check, "x", "x", tmp_path).passed


def test_custom_check_runs_the_python3_on_path_not_ratchets_own(tmp_path, monkeypatch):
    """The user's `python3` (as their shell and the jobs find it) runs the check: a project whose
    check imports a package installed only there works."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "ran-by"
    python3 = bin_dir / "python3"
    python3.write_text(f"#!/bin/sh\necho users-python3 > {marker}\nexec {sys.executable} \"$@\"\n")
    python3.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    check = write_script(tmp_path, "judge.py", JUDGE_BODY)
    assert judge(check, "FR", "fr", tmp_path).passed
    assert marker.read_text().strip() == "users-python3"


# --- all checks together ------------------------------------------------------------------------


def test_all_checks_must_pass_and_every_check_is_reported(tmp_path):
    checks = [
        NormalizedMatchCheck(type="normalized_match"),
        RegexMatchCheck(type="regex_match", pattern=r"[A-Z]+"),
        write_script(tmp_path, "judge.py", JUDGE_BODY),
    ]
    good = run_checks(checks, "in", "FR", "FR", project_root=tmp_path)
    assert good.passed and [r.passed for r in good.per_check] == [True, True, True]
    bad = run_checks(checks, "in", "FR", "fr", project_root=tmp_path)
    assert not bad.passed
    assert [(r.type, r.passed) for r in bad.per_check] == [
        ("normalized_match", True), ("regex_match", False), ("custom", True)]


# --- reading the shard runner's output ----------------------------------------------------------


def record(example_id: str, status: str = "ok", output: str = "X") -> str:
    return json.dumps({"id": example_id, "status": status, "output": output, "exit_code": 0,
                       "stderr_tail": "", "elapsed_s": 0.1})


def test_parse_shard_output_tolerates_garbage_and_marks_missing_ids():
    stdout = "\n".join([
        "Traceback (most recent call last):",
        record("a"),
        "{not json",
        json.dumps({"id": "b", "status": "splendid", "output": "Y"}),  # unknown status: garbage
        json.dumps(["c"]),
        record("c", "crash", ""),
        record("zzz"),  # not asked for
        record("d"), record("d", output="other"),  # two records: unknown, never a pass
        '{"id": "e", "status": "ok", "output": 5}',  # output not a string: garbage
    ])
    records = parse_shard_output(stdout, ["a", "b", "c", "d", "e"])
    assert list(records) == ["a", "b", "c", "d", "e"]
    assert records["a"]["status"] == "ok" and records["a"]["output"] == "X"
    assert records["c"]["status"] == "crash"
    for missing in ("b", "d", "e"):
        assert records[missing]["status"] == "missing" and records[missing]["output"] == ""
    assert "2 records" in records["d"]["stderr_tail"]


def test_a_run_judged_under_other_check_rules_is_refused_on_resume():
    from ratchet.core.errors import DataError
    from ratchet.targets.checks import CHECKS_VERSION, refuse_other_checks_version

    refuse_other_checks_version(CHECKS_VERSION)
    for old in (None, 1, CHECKS_VERSION + 1):
        with pytest.raises(DataError) as info:
            refuse_other_checks_version(old)
        assert info.value.code == "examples.checks_version" and info.value.exit_code == 2
