"""What a job sees (issue 16, item 5): the PATH Ratchet was started with minus Ratchet's own
virtual environment, `sandbox.pass_env`, `sandbox.read_only`; what `ratchet check` says about it;
and a preflight that fails only inside the sandbox saying so."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import ratchet, set_contract

from ratchet.compute.base import JobSpec, SandboxSpec
from ratchet.compute.cache import cache_key
from ratchet.compute.env import default_path, job_env, sandbox_spec
from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import probe_bwrap
from ratchet.core.contract_load import parse_contract

needs_bwrap = pytest.mark.skipif(not probe_bwrap().available, reason=probe_bwrap().reason)
in_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="Ratchet does not run from a virtualenv here")
VENV_BIN = os.path.join(sys.prefix, "bin")


def _run(tmp_path: Path, command: str, sandbox: SandboxSpec) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = job_env("RATCHET_SEED", 1, "j", "candidate", "0", sandbox=sandbox)
    job = JobSpec(job_id="j", argv=("/bin/sh", "-c", command), workdir=work, env=env, timeout_s=60, sandbox=sandbox)
    result = LocalExecutor(tmp_path / "jobs", 1).run([job])[0]
    assert result.state == "ok", (result.reason, result.stderr_tail)
    return (tmp_path / "jobs" / "j" / "stdout").read_text()


@in_venv
def test_a_jobs_python3_is_not_ratchets_own_unless_asked(tmp_path: Path):
    section = parse_contract(_contract_with("")).sandbox
    found = _run(tmp_path, "command -v python3 || echo none", sandbox_spec(section, "none")).strip()
    assert not found.startswith(VENV_BIN + "/"), found
    kept = sandbox_spec(section.model_copy(update={"keep_ratchet_venv": True}), "none")
    assert _run(tmp_path, "command -v python3", kept).strip() == os.path.join(VENV_BIN, "python3")
    assert VENV_BIN not in default_path().split(":")


def test_pass_env_values_reach_the_job_and_enter_the_cache_key(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MY_DATA_DIR", "/data/one")
    monkeypatch.setenv("NOT_PASSED", "secret")
    section = parse_contract(_contract_with('pass_env = ["MY_DATA_DIR", "UNSET_VAR"]')).sandbox
    spec = sandbox_spec(section, "none")
    out = _run(tmp_path, 'echo "$MY_DATA_DIR|${NOT_PASSED:-}|${UNSET_VAR-unset}"', spec)
    assert out == "/data/one||unset\n"
    keys = []
    for value in ("/data/one", "/data/two"):
        env = job_env("RATCHET_SEED", 1, "j", "candidate", "0",
                      sandbox=replace(spec, passed_env=(("MY_DATA_DIR", value),)))
        keys.append(cache_key(tree="t", command="c", seed=1, seed_env="RATCHET_SEED", env_set_by_ratchet=env,
                              sandbox_mode="none", network=False, timeout_s=1, resources={}, metric="m",
                              kind="benchmark"))
    assert keys[0] != keys[1]


@needs_bwrap
def test_read_only_paths_are_visible_in_the_sandbox_and_nothing_else_of_the_host(tmp_path: Path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "data.txt").write_text("visible\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.txt").write_text("hidden\n")
    spec = SandboxSpec(mode="bwrap", read_only=(str(extra),), path="/usr/bin:/bin")
    out = _run(tmp_path, f"cat {extra}/data.txt; cat {other}/data.txt 2>/dev/null || echo missing; "
                         f"touch {extra}/x 2>/dev/null || echo read-only", spec)
    assert out == "visible\nmissing\nread-only\n"


def _contract_with(sandbox_lines: str) -> str:
    from repo_fixture import CONTRACT

    return CONTRACT + "\n[sandbox]\n" + sandbox_lines + "\n"


@needs_bwrap
def test_check_lists_path_entries_and_paths_the_sandbox_will_not_show(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    set_contract(root, append=f'\n[sandbox]\nmode = "bwrap"\nread_only = ["{tmp_path}/nowhere"]\n')
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    code, out, err = ratchet("check", str(root), env=env)
    assert code == 0, err
    e = out["result"]["environment"]
    assert e["path"] == [str(tools), "/usr/bin", "/bin"]
    assert e["hidden_in_sandbox"] == [str(tools)] and e["read_only_missing"] == [f"{tmp_path}/nowhere"]
    assert any(str(tools) in w for w in out["result"]["warnings"])
    set_contract(root, replace={f'read_only = ["{tmp_path}/nowhere"]': f'read_only = ["{tmp_path}/tools"]'})
    code, out, err = ratchet("check", str(root), env=env)
    assert code == 0 and out["result"]["environment"]["hidden_in_sandbox"] == [], err


@needs_bwrap
def test_a_preflight_that_fails_only_in_the_sandbox_says_so_and_names_the_cause(make_repo, tmp_path: Path):
    data = tmp_path / "shared-data"
    data.mkdir()
    (data / "x.txt").write_text("2.5\n")
    bench = ("import json\n"
             f"x = float(open({str(data / 'x.txt')!r}).read())\n"
             'print(json.dumps({"score": x}))\n')
    root = make_repo(tmp_path / "repo", files={"bench.py": bench})
    set_contract(root, append='\n[sandbox]\nmode = "bwrap"\n')
    code, out, _ = ratchet("check", str(root), "--preflight")
    assert code == 2 and out["error"]["code"] == "preflight.sandbox_only", out
    message = out["error"]["message"]
    assert "measures outside the sandbox (score = 2.5)" in message and str(data / "x.txt") in message
    assert "sandbox.read_only" in message
    set_contract(root, replace={'mode = "bwrap"': f'mode = "bwrap"\nread_only = ["{data}"]'})
    code, out, err = ratchet("check", str(root), "--preflight")
    assert code == 0 and out["result"]["preflight"]["state"] == "ok", err
    assert out["result"]["preflight"]["value"] == 2.5
