"""The shard runner as the job runs it: a plain script in a real subprocess, on a real solution
that crashes, hangs, floods its output, and leaves children behind."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ratchet.targets.shard_runner as shard_runner
from ratchet.targets.checks import parse_shard_output

RUNNER = Path(shard_runner.__file__)
CAP = 1000

SOLUTION = """
    import subprocess, sys, time
    text = sys.stdin.read()
    if text == "crash":
        print("partial")
        raise SystemExit("boom: bad input")
    if text == "hang":
        time.sleep(60)
    if text == "flood":
        sys.stdout.write("x" * 100_000)
    if text == "two newlines":
        print("A\\n")
        sys.exit(0)
    if text == "orphan":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open("orphan.pid", "w").write(str(child.pid))
    if text == "ignore stdin":
        print("ignored")
        sys.exit(0)
    sys.stdout.write(text.upper() + "\\n")
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A job checkout with the test solution and the runner copied into a scratch dir."""
    (tmp_path / "solution.py").write_text(textwrap.dedent(SOLUTION))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "shard_runner.py").write_bytes(RUNNER.read_bytes())
    return tmp_path


def run_shard(checkout: Path, inputs: list[str], timeout_s: float = 1.0, via_file: bool = False):
    shard = {"solution": "solution.py", "timeout_s": timeout_s, "output_cap": CAP,
             "examples": [{"id": f"e{i}", "input": text} for i, text in enumerate(inputs)]}
    argv = [sys.executable, str(checkout / "scratch" / "shard_runner.py")]
    stdin = json.dumps(shard)
    if via_file:
        (checkout / "scratch" / "shard.json").write_text(stdin)
        argv.append(str(checkout / "scratch" / "shard.json"))
        stdin = ""
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=checkout, timeout=60)
    return proc


def test_one_bad_example_fails_itself_not_the_shard(checkout):
    proc = run_shard(checkout, ["fr", "crash", "hang", "flood", "dé"])
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in records] == ["e0", "e1", "e2", "e3", "e4"]
    by_id = {r["id"]: r for r in records}
    assert by_id["e0"]["status"] == "ok" and by_id["e0"]["output"] == "FR" and by_id["e0"]["exit_code"] == 0
    assert by_id["e1"]["status"] == "crash" and by_id["e1"]["exit_code"] == 1
    assert "boom: bad input" in by_id["e1"]["stderr_tail"] and by_id["e1"]["output"] == "partial"
    assert by_id["e2"]["status"] == "timeout"
    assert by_id["e3"]["status"] == "output_too_large" and by_id["e3"]["output"] == ""
    assert by_id["e4"]["status"] == "ok" and by_id["e4"]["output"] == "DÉ"
    assert all(set(r) == {"id", "status", "output", "exit_code", "stderr_tail", "elapsed_s"} for r in records)
    assert all(r["elapsed_s"] >= 0 for r in records)


def test_only_one_trailing_newline_is_stripped(checkout):
    proc = run_shard(checkout, ["two newlines"])
    assert json.loads(proc.stdout)["output"] == "A\n"


def test_input_reaches_the_solution_exactly(checkout):
    text = "  spaces, \"quotes\", ünïcode\nand a second line  "
    record = json.loads(run_shard(checkout, [text]).stdout)
    assert record["output"] == text.upper()


def test_a_large_input_the_solution_never_reads_does_not_block(checkout):
    (checkout / "solution.py").write_text("print('ignored')\n")
    record = json.loads(run_shard(checkout, ["y" * 2_000_000]).stdout)
    assert record["status"] == "ok" and record["output"] == "ignored"


def test_children_left_behind_are_killed_and_do_not_hold_the_shard(checkout):
    record = json.loads(run_shard(checkout, ["orphan"], timeout_s=30).stdout)
    assert record["status"] == "ok" and record["output"] == "ORPHAN"
    child = int((checkout / "orphan.pid").read_text())
    assert not _alive(child), "a child of the solution survived its example"


def test_timeout_kills_the_whole_process_group(checkout):
    (checkout / "solution.py").write_text(textwrap.dedent("""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open("child.pid", "w").write(str(child.pid))
        time.sleep(60)
    """))
    record = json.loads(run_shard(checkout, ["x"], timeout_s=1.0).stdout)
    assert record["status"] == "timeout"
    assert not _alive(int((checkout / "child.pid").read_text()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie awaiting its reaper is gone
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_output_at_the_cap_is_kept_and_one_byte_more_is_too_large(checkout):
    (checkout / "solution.py").write_text(
        "import sys\nn = int(sys.stdin.read())\nsys.stdout.write('x' * n)\n")
    stdout = run_shard(checkout, [str(CAP), str(CAP + 1)]).stdout
    at_cap, over = (json.loads(line) for line in stdout.splitlines())
    assert at_cap["status"] == "ok" and len(at_cap["output"]) == CAP
    assert over["status"] == "output_too_large"


def test_the_shard_can_come_from_a_file(checkout):
    proc = run_shard(checkout, ["ab"], via_file=True)
    assert json.loads(proc.stdout)["output"] == "AB"


@pytest.mark.parametrize(
    "shard",
    ["not json", "[]", '{"examples": []}', '{"solution": "s.py", "examples": [{"id": 1, "input": "x"}]}',
     '{"solution": "s.py", "timeout_s": 0, "examples": []}'],
)
def test_a_malformed_shard_exits_2_with_a_reason(checkout, shard):
    argv = [sys.executable, str(checkout / "scratch" / "shard_runner.py")]
    proc = subprocess.run(argv, input=shard, capture_output=True, text=True, cwd=checkout, timeout=60)
    assert proc.returncode == 2
    assert "bad shard" in proc.stderr and proc.stdout == ""


def test_a_missing_solution_crashes_every_example(checkout):
    (checkout / "solution.py").unlink()
    records = [json.loads(line) for line in run_shard(checkout, ["a", "b"]).stdout.splitlines()]
    assert [r["status"] for r in records] == ["crash", "crash"]


def test_runner_output_reads_back_on_the_kernel_side(checkout):
    proc = run_shard(checkout, ["fr", "crash"])
    records = parse_shard_output(proc.stdout, ["e0", "e1", "e2"])
    assert [records[i]["status"] for i in ("e0", "e1", "e2")] == ["ok", "crash", "missing"]


def test_runner_imports_only_the_standard_library():
    tree = ast.parse(RUNNER.read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules
