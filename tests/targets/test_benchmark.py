"""Reading the metric from a benchmark's stdout, and building a benchmark job."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

from ratchet.compute.base import SandboxSpec
from ratchet.compute.env import default_path
from ratchet.core.errors import RatchetError
from ratchet.core.plan import PlannedJob
from ratchet.targets.base import Task
from ratchet.targets.metric import parse_metric
from ratchet.targets.shell import ShellJobs


def test_metric_is_read_from_the_last_json_object():
    out = 'starting\n{"score": 0.1}\nepoch 2\n{"score": 0.75, "loss": 3}\nbye\n'
    reading = parse_metric(out, "score")
    assert (reading.state, reading.value) == ("ok", 0.75)


def test_integers_are_numbers():
    assert parse_metric('{"acc": 3}', "acc").value == 3.0


def test_garbage_lines_and_non_object_json_are_ignored():
    out = '{"score": 1.5}\n[1, 2]\n"text"\n{not json}\n{"a": 1} trailing\n42\n'
    assert parse_metric(out, "score").value == 1.5


def test_last_object_without_the_key_is_no_metric_naming_its_keys():
    reading = parse_metric('{"score": 1}\n{"loss": 2, "acc": 3}\n', "score")
    assert reading.state == "no_metric" and reading.value is None
    assert "acc, loss" in reading.reason and "'score'" in reading.reason


def test_no_json_object_is_no_metric_quoting_the_tail():
    out = "x" * 500 + "\nTraceback: boom at the end"
    reading = parse_metric(out, "score")
    assert reading.state == "no_metric"
    assert "boom at the end" in reading.reason and "x" * 300 not in reading.reason
    assert parse_metric("", "score").state == "no_metric"


def test_a_json_object_printed_over_several_lines_is_said_not_read():
    out = 'loading\n' + json.dumps({"score": 0.9, "n": 3}, indent=2) + "\n"
    reading = parse_metric(out, "score")
    assert reading.state == "no_metric" and reading.value is None
    assert "with 'score' printed over 4 lines" in reading.reason and "single line" in reading.reason
    assert "printed over" not in parse_metric("no json at all\n{ not json\n}\n", "score").reason


def test_a_metric_printed_on_stderr_is_said_not_read():
    reading = parse_metric("working\n", "score", stderr='warning: slow\n{"score": 0.9}\n')
    assert reading.state == "no_metric" and "only stdout is read" in reading.reason
    reading = parse_metric('{"loss": 1}\n', "score", stderr='{"score": 0.9}\n')
    assert "keys: loss" in reading.reason and "only stdout is read" in reading.reason
    assert "stderr" not in parse_metric("working\n", "score", stderr='{"other": 1}\n').reason


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("true", "true"),
        ("false", "false"),
        ('"0.9"', '"0.9"'),
        ("null", "null"),
        ("[1]", "[1]"),
    ],
)
def test_non_numbers_are_bad_metric(raw, shown):
    reading = parse_metric(f'{{"score": {raw}}}', "score")
    assert reading.state == "bad_metric" and reading.value is None
    assert shown in reading.reason


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_are_bad_metric(raw):
    reading = parse_metric(f'{{"score": {raw}}}', "score")
    assert reading.state == "bad_metric"
    assert raw in reading.reason


def test_a_huge_integer_is_bad_metric():
    assert parse_metric('{"score": %s}' % ("9" * 400), "score").state == "bad_metric"


def test_ok_value_is_finite_float():
    reading = parse_metric('  {"score": -0.25}  \n', "score")
    assert reading.state == "ok" and math.isfinite(reading.value) and reading.value == -0.25


def _shell_spec(tmp_path, seed_env="MY_SEED", sandbox=None):
    jobs = ShellJobs(command="python3 bench.py", metric="score", seed_env=seed_env, timeout_s=30.0,
                     kind="benchmark", sandbox=sandbox or SandboxSpec())
    job = PlannedJob("t1-u0-candidate", "candidate", "a" * 40, 0, 17, 0, 0)
    return jobs.spec(Task(job.job_id, job.variant, job.tree, (job,)), tmp_path)


def test_benchmark_job_builds_an_allow_listed_shell_job(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-leak")
    spec = _shell_spec(tmp_path, sandbox=SandboxSpec(mode="bwrap"))
    assert spec.argv == ("/bin/sh", "-c", "python3 bench.py")
    assert spec.env["MY_SEED"] == "17" and spec.env["RATCHET_VARIANT"] == "candidate"
    assert spec.env["RATCHET_JOB_ID"] == "t1-u0-candidate" and spec.env["RATCHET_UNIT"] == "0"
    assert "OPENAI_API_KEY" not in spec.env and set(spec.env) == {
        "PATH",
        "LANG",
        "MY_SEED",
        "RATCHET_JOB_ID",
        "RATCHET_VARIANT",
        "RATCHET_UNIT",
    }
    assert spec.workdir == Path(tmp_path) and spec.timeout_s == 30.0 and spec.sandbox.mode == "bwrap"
    # The PATH Ratchet was started with, minus the virtual environment Ratchet runs from.
    venv_bin = os.path.join(sys.prefix, "bin")
    assert spec.env["PATH"] == default_path() and (sys.prefix == sys.base_prefix
                                                  or venv_bin not in spec.env["PATH"].split(":"))


@pytest.mark.parametrize("name", ["PATH", "HOME", "LD_PRELOAD", "PYTHONPATH", "RATCHET_UNIT", "TMPDIR"])
def test_reserved_seed_variables_are_refused(tmp_path, name):
    with pytest.raises(RatchetError) as err:
        _shell_spec(tmp_path, seed_env=name)
    assert err.value.code == "job.reserved_env" and name in err.value.message
