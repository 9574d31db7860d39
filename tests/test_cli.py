"""The CLI shell: init, check, the --json envelope, exit codes, and no traceback for bad input."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from pathlib import Path

import tomli_w
from helpers import ratchet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ratchet.cli import app

runner = CliRunner()


def _check(directory: Path) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", str(directory), "--json"])
    assert "Traceback" not in result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return result.exit_code, json.loads(lines[0])


def _commit(root: Path) -> None:
    """Make `root` a git repository holding one commit (what `ratchet check` and `run` require)."""
    from repo_fixture import git

    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")


def test_init_writes_every_key_and_a_working_contract(tmp_path: Path):
    code, out, _ = ratchet("init", str(tmp_path / "p"))
    assert code == 0 and out["ok"] is True and out["error"] is None
    text = (tmp_path / "p" / "ratchet.toml").read_text()
    for key in ("name", "seed", "kind", "command", "metric", "direction", "seed_env", "timeout_s", "cache",
                "allowed", "protected", "hidden", "sampler", "alpha", "multiplicity", "min_effect",
                "min_effect_rel", "units", "confirm", "holdout_units", "patience", "max_attempts",
                "max_evaluations", "max_cpu_hours", "max_gpu_hours", "max_wall", "max_val_trials", "backend",
                "max_parallel", "gpus_per_job", "mode", "network", "read_only", "pass_env", "keep_ratchet_venv"):
        assert f"\n{key} = " in text, key
    _commit(tmp_path / "p")
    code, envelope = _check(tmp_path / "p")
    assert code == 0 and envelope["ok"] and envelope["result"]["unsupported"] == []


def test_init_examples_kind_checks_clean(tmp_path: Path):
    code, _, _ = ratchet("init", str(tmp_path / "e"), "--kind", "examples")
    assert code == 0
    _commit(tmp_path / "e")
    code, envelope = _check(tmp_path / "e")
    assert code == 0 and envelope["result"]["examples"]["total"] == 200


def test_init_never_overwrites(tmp_path: Path):
    (tmp_path / "ratchet.toml").write_text("# mine\n")
    code, out, _ = ratchet("init", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "init.exists"
    assert (tmp_path / "ratchet.toml").read_text() == "# mine\n"


def test_bad_contract_is_exit_2_with_key_path(tmp_path: Path):
    ratchet("init", str(tmp_path))
    path = tmp_path / "ratchet.toml"
    path.write_text(path.read_text().replace("alpha = 0.05", "alpah = 0.05"))
    code, envelope = _check(tmp_path)
    assert code == 2 and envelope["ok"] is False
    assert envelope["error"]["code"] == "contract.unknown_key" and "gate.alpah" in envelope["error"]["message"]


def test_human_error_has_no_traceback(tmp_path: Path):
    result = runner.invoke(app, ["check", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "contract.missing" in result.output


def test_every_command_of_the_design_is_built(tmp_path: Path):
    for command in ("init", "check", "run", "status", "compare", "report", "verify", "calibrate", "watch", "abandon",
                    "runs"):
        proc = subprocess.run([sys.executable, "-m", "ratchet", command, "--help"], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0 and "not built" not in proc.stdout, (command, proc.stdout)
    code, out, _ = ratchet("watch", "--dir", str(tmp_path))  # no run yet: said, not crashed
    assert code == 2 and out["error"]["code"] == "run.not_found"


def test_verify_without_runs_cannot_read_a_run(tmp_path: Path):
    code, out, _ = ratchet("verify", "--dir", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "run.not_found"


def test_status_without_runs(tmp_path: Path):
    code, out, _ = ratchet("status", "--dir", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "run.not_found"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=string.printable + "éλ\u2028", max_size=400))
def test_arbitrary_text_never_tracebacks(tmp_path_factory, text: str):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "ratchet.toml").write_text(text)
    code, envelope = _check(d)
    assert code in (0, 2), envelope
    assert envelope["ok"] is (code == 0)


toml_scalars = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True),
                         st.text(max_size=12))
toml_values = st.recursive(toml_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
sections = st.sampled_from(["campaign", "target", "scope", "agent", "gate", "budget", "compute", "sandbox", "x"])
keys = st.sampled_from(["name", "seed", "kind", "command", "metric", "allowed", "alpha", "units", "mode",
                        "search", "space", "file", "max_wall", "split", "checks", "type", "zzz"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(sections, st.dictionaries(keys, toml_values, max_size=5), max_size=8))
def test_arbitrary_toml_documents_never_traceback(tmp_path_factory, doc):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "ratchet.toml").write_text(tomli_w.dumps(doc))
    code, envelope = _check(d)
    assert code in (0, 2), envelope


def test_a_wrong_command_line_says_error_usage_and_which_help_to_read():
    cases = [(["status", "--bogus"], "No such option: --bogus", "ratchet status --help"),
             (["run", "--resume"], "Option '--resume' requires an argument", "ratchet run --help"),
             (["bogus"], "No such command 'bogus'", "ratchet --help"),
             (["report", "--html", "--attempt", "2"], "--attempt shows one attempt: give one", "ratchet report --help")]
    for args, message, help_command in cases:
        proc = subprocess.run([sys.executable, "-m", "ratchet", *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error (usage): ") and message in proc.stderr, proc.stderr
        assert f"hint: see `{help_command}`" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "╭" not in proc.stderr
