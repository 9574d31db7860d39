"""What a baseline that measures nothing is told, through the real `ratchet run`: a timeout gets a
timeout hint, a missing module its own code naming the module and the job's interpreter, and a
metric printed over several lines or on stderr is said to be unread."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ratchet, set_contract

from ratchet.compute.env import default_path
from ratchet.compute.programs import locate

pytestmark = pytest.mark.slow


def _run(make_repo, tmp_path: Path, bench: str, append: str = "") -> dict:
    root = make_repo(tmp_path / "repo", files={"bench.py": bench})
    if append:
        set_contract(root, replace={"timeout_s = 60": append})
    code, out, err = ratchet("run", str(root))
    assert code == 2, err
    return out["error"]


def test_a_baseline_that_times_out_is_told_about_the_timeout(make_repo, tmp_path: Path):
    error = _run(make_repo, tmp_path, "import time\ntime.sleep(30)\n", append="timeout_s = 1")
    assert error["code"] == "preflight.no_metric" and "timeout" in error["message"]
    assert "target.timeout_s = 1 s" in error["hint"] and "faster" in error["hint"]
    assert "JSON" not in error["hint"]


def test_a_missing_module_names_the_module_and_the_jobs_interpreter(make_repo, tmp_path: Path):
    error = _run(make_repo, tmp_path, "import ratchet_test_absent_module\n")
    python = locate("python3", default_path())  # the job's PATH: Ratchet's own venv left out
    assert python is not None
    assert error["code"] == "preflight.missing_module"
    assert "'ratchet_test_absent_module'" in error["message"] and python in error["message"]
    assert f"{python} -m pip install ratchet_test_absent_module" in error["hint"]
    assert "sandbox.keep_ratchet_venv" in error["hint"] and "sandbox.read_only" in error["hint"]


def test_json_printed_with_indent_or_on_stderr_is_said_to_be_unread(make_repo, tmp_path: Path):
    error = _run(make_repo, tmp_path / "a", 'import json\nprint(json.dumps({"score": 1.0}, indent=2))\n')
    assert error["code"] == "preflight.no_metric" and "printed over 3 lines" in error["message"]
    assert "single line" in error["message"] and "one line of stdout" in error["hint"]
    error = _run(make_repo, tmp_path / "b", 'import sys\nprint(\'{"score": 1.0}\', file=sys.stderr)\n')
    assert error["code"] == "preflight.no_metric" and "only stdout is read" in error["message"]
