"""`ratchet check`: the scope-import warning (scope protects files, not a process), the examples that
will always be a check_error, and a malformed examples file (every bad line, exit 2)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from helpers import ratchet
from repo_fixture import CONTRACT, git
from rich.console import Console

from ratchet.commands.check import check_report
from ratchet.commands.init import scaffold
from ratchet.present.render import render_check
from ratchet.targets.imports import benchmark_script, scope_imports

MODEL_PY = "def predict(x):\n    return x\n"


def _project(root: Path, bench: str, allowed: str, files: dict[str, str], command: str = "python3 bench.py") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    contract = CONTRACT.replace('allowed = ["params.toml"]', f"allowed = {allowed}")
    contract = contract.replace('command = "python3 bench.py"', f"command = {json.dumps(command)}")
    for rel, text in {"ratchet.toml": contract, "bench.py": bench, "params.toml": "x = 0.0\n", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return _committed(root)


def _committed(root: Path) -> Path:
    """`root` as a git repository with its files committed: `check` refuses what `run` refuses."""
    if not (root / ".git").exists():
        git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "baseline")
    return root


def test_check_warns_when_the_benchmark_imports_a_module_in_scope(tmp_path: Path):
    root = _project(tmp_path / "p", "import json\nfrom model import predict\nprint(json.dumps({'score': 1}))\n",
                    '["params.toml", "model.py"]', {"model.py": MODEL_PY})
    report = check_report(root)
    assert report["scope_imports"] == [{"importer": "bench.py", "module": "model", "allowed": "model.py"}]
    warning = next(w for w in report["warnings"] if "inside its own process" in w)
    assert "bench.py imports model" in warning and "docs/threat-model.md" in warning


def test_imports_are_followed_through_protected_modules_and_packages(tmp_path: Path):
    root = _project(tmp_path / "p", "import harness\n", '["params.toml", "pkg/"]', {
        "harness.py": "from pkg.sub import thing\nimport os\n",
        "pkg/__init__.py": "",
        "pkg/sub.py": "from . import helper\nthing = 1\n",
        "pkg/helper.py": "",
    })
    found = {(f.importer, f.module) for f in scope_imports("python3 -u bench.py --fast", root, ["pkg/"])}
    assert ("harness.py", "pkg.sub") in found and ("harness.py", "pkg") in found
    assert ("pkg/sub.py", "pkg.helper") in found


def test_no_warning_for_the_safe_pattern_or_commands_it_cannot_read(tmp_path: Path):
    scaffold(tmp_path / "safe", "benchmark")
    report = check_report(_committed(tmp_path / "safe"))
    assert report["scope_imports"] == [] and not any("inside its own process" in w for w in report["warnings"])
    root = _project(tmp_path / "shell", "from model import predict\n", '["params.toml", "model.py"]',
                    {"model.py": MODEL_PY}, command="./run.sh && echo done")
    assert check_report(root)["scope_imports"] == []
    assert benchmark_script("python3 -m pkg.bench") == ("module", "pkg.bench")
    assert benchmark_script("python3 -c 'import model'") is None
    assert benchmark_script("bash bench.py") is None


def test_check_counts_examples_that_are_always_a_check_error(tmp_path: Path):
    scaffold(tmp_path / "e", "examples")
    data = tmp_path / "e" / "data" / "examples.jsonl"
    rows = data.read_text().splitlines()
    rows[3] = json.dumps({"input": "number", "expected_output": 1.0})
    rows[7] = json.dumps({"input": "object", "expected_output": {"a": 1}})
    data.write_text("\n".join(rows) + "\n")
    report = check_report(_committed(tmp_path / "e"))
    found = report["examples"]["check_errors"]
    assert found == [{"check": 0, "type": "exact_match", "count": 2, "lines": [4, 8],
                      "reason": found[0]["reason"]}]
    assert "exact_match compares text" in found[0]["reason"]
    assert any("2 example(s) will always be a check_error" in w and "lines 4, 8" in w for w in report["warnings"])


def test_check_warns_about_json_text_held_in_strings_under_json_equality(tmp_path: Path):
    scaffold(tmp_path / "e", "examples")
    contract = tmp_path / "e" / "ratchet.toml"
    contract.write_text(contract.read_text().replace('type = "exact_match"     #', 'type = "json_equality"   #'))
    data = tmp_path / "e" / "data" / "examples.jsonl"
    data.write_text(data.read_text() + json.dumps({"input": "list", "expected_output": "[1, 2]"}) + "\n")
    report = check_report(_committed(tmp_path / "e"))
    assert report["examples"]["check_errors"] == []
    assert any("JSON strings holding JSON text (lines 201)" in w for w in report["warnings"]), report["warnings"]


def test_a_malformed_examples_file_is_exit_2_with_every_bad_line(tmp_path: Path):
    scaffold(tmp_path / "e", "examples")
    data = tmp_path / "e" / "data" / "examples.jsonl"
    bad = ['{"input": "big", "expected_output": 9007199254740993}', '{"input": "inf", "expected_output": 1e400}',
           '{"input": "deep", "expected_output": ' + "[" * 50_000 + "]" * 50_000 + "}"]
    bad += [json.dumps({"input": f"dup{i}", "expected_output": "X", "id": "same"}) for i in range(40)]
    data.write_text(data.read_text() + "\n".join(bad) + "\n")
    code, out, stderr = ratchet("check", str(_committed(tmp_path / "e")))
    assert code == 2 and "Traceback" not in stderr and "RecursionError" not in stderr
    assert out["error"]["code"] == "examples.malformed"
    message = out["error"]["message"]
    assert str(data) in message and "42 lines are malformed" in message
    for line in (201, 202, 203, 205, 243):
        assert f"line {line}:" in message or f" {line}," in message or message.endswith(f" {line}"), line


def _examples_project(root: Path, split: str, units: str = "[10, 20, 40]") -> Path:
    scaffold(root, "examples")
    contract = root / "ratchet.toml"
    text = contract.read_text().replace("split = [0.6, 0.2, 0.2]", f"split = {split}", 1)
    contract.write_text(text.replace("units = [10, 20, 40]", f"units = {units}", 1))
    return _committed(root)


def test_check_on_examples_uses_the_looks_clamped_to_val_and_the_examples_reserve(tmp_path: Path):
    report = check_report(_examples_project(tmp_path / "e", "[0.97, 0.015, 0.015]"))
    e = report["examples"]
    val, test, dev = e["val"], e["test"], e["dev"]
    assert 0 < val < 7 and report["gate"]["looks"] == e["looks"] == [val]
    assert all(row["min_p_last"] == 0.5 ** val for row in report["gate"]["levels"])
    assert not any(row["reachable"] for row in report["gate"]["levels"])
    # The examples reserve: baseline and champion on test, the champion on dev and val; no confirmation;
    # each attempt of the scaffold's agent (it reads history) also measures its candidate on dev.
    assert report["agent"]["kind"] != "files"
    worst = report["budget"]["worst_case_units"]
    per_trial = 3 * val + dev
    holdout = 2 * test + dev + val
    assert worst == {"per_trial": per_trial, "holdout": holdout, "run": per_trial * 20 + holdout}
    warning = next(w for w in report["warnings"] if w.startswith("no trial can accept a candidate"))
    assert f"with {val} val examples at the last look" in warning
    assert "Fix: a last look of at least 7 val examples" in warning  # 0.5**7 <= trial 1's level 0.0139
    assert f"clamped to the val split's {val} example(s), so add examples or raise the val fraction" in warning
    assert "end gate.units at" not in warning  # gate.units already ends at 40


def test_check_says_futility_only_for_a_look_that_cannot_stop_for_efficacy(bench_repo: Path):
    text = (bench_repo / "ratchet.toml").read_text()
    # Without confirmation the trial keeps the attempt's whole level (with it, the trial gets its square root).
    (bench_repo / "ratchet.toml").write_text(text + "[gate]\nunits = [8, 16, 32]\nconfirm = false\n"
                                             "[budget]\nmax_attempts = 10\n")
    report = check_report(bench_repo)
    levels = report["gate"]["levels"]
    assert levels[0]["stops"] == ["efficacy", "efficacy", "efficacy"]
    assert levels[1]["stops"] == ["futility only", "efficacy", "efficacy"]  # 0.5**8 > trial 2's first threshold
    assert any("the first look (8 units) is futility only" in w for w in report["warnings"])
    out = Console(file=io.StringIO(), width=250)
    render_check(out, report)
    assert "8: futility only, 16: efficacy, 32: efficacy" in out.file.getvalue()


def test_check_warns_with_the_fix_when_no_trial_can_reach_its_level(bench_repo: Path):
    text = (bench_repo / "ratchet.toml").read_text()
    (bench_repo / "ratchet.toml").write_text(text + "[gate]\nunits = [4]\nconfirm = false\n")
    warnings = check_report(bench_repo)["warnings"]
    warning = next(w for w in warnings if w.startswith("no trial can accept"))
    assert "with 4 units at the last look (looks [4]) the exact test's smallest p-value is 0.0625" in warning
    # 0.5**7 reaches trial 1's level 0.05 / H_20 = 0.0139; 0.5**11 reaches trial 20's, 0.000695.
    assert "Fix: a last look of at least 7 units (11 let every trial up to budget.max_attempts = 20 accept): " \
           "end gate.units at 7 or more" in warning
    assert 'gate.multiplicity = "trial"' in warning


def test_check_says_what_betting_would_cost_when_a_floor_is_declared(bench_repo: Path):
    text = (bench_repo / "ratchet.toml").read_text()
    assert check_report(bench_repo)["gate"]["betting_cost"] is None  # no floor declared: nothing to say
    (bench_repo / "ratchet.toml").write_text(text + "[gate]\nunits = [10, 20, 40]\nmax_unit_loss = 0.1\n")
    report = check_report(bench_repo)
    cost = report["gate"]["betting_cost"]
    assert cost["floor"] == -0.1 and cost["units"] == 40 and cost["level"] == report["gate"]["levels"][0]["level"]
    assert 0.0 < cost["smallest_gain"] < 0.1  # a steady gain of a tenth of the floor or less is accepted at 40 units
    assert 'gate.test = "betting" (the floor test, floor -0.1 from gate.max_unit_loss)' in cost["text"]
    assert "at the last look (40 units) only a steady gain of at least" in cost["text"]
    out = Console(file=io.StringIO(), width=250)
    render_check(out, report)
    assert cost["text"] in " ".join(out.file.getvalue().split())
    code, envelope, _ = ratchet("check", str(bench_repo))
    assert code == 0 and envelope["result"]["gate"]["betting_cost"]["text"] == cost["text"]
    (bench_repo / "ratchet.toml").write_text(text + '[gate]\ntest = "betting"\nmax_unit_loss = 0.1\n')
    assert check_report(bench_repo)["gate"]["betting_cost"] is None  # already betting
