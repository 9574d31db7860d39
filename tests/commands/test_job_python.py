"""A job's `python3` is the user's: the one the PATH Ratchet was started with finds (a venv under the
user's home, a venv inside the project), with its packages, inside the sandbox; `ratchet check` names
it; Ratchet's own venv stays out unless `sandbox.keep_ratchet_venv`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import events, ratchet, set_contract, user_venv
from repo_fixture import BENCH_PY, git

from ratchet.compute.sandbox import probe_bwrap

needs_bwrap = pytest.mark.skipif(not probe_bwrap().available, reason=probe_bwrap().reason)
in_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="Ratchet does not run from a virtualenv here")

BENCH_WITH_MODULE = "import onlyhere\n" + BENCH_PY.replace("noise = ", "noise = onlyhere.OFFSET + ")
"""The fixture's benchmark, importing a module that only the user's venv has."""

QUICK = '\n[gate]\nunits = [4]\nconfirm = false\n\n[budget]\nmax_attempts = 1\n\n[sandbox]\nmode = "bwrap"\n'


def _path(first: Path | None) -> str:
    return ":".join([*([str(first)] if first else []), "/usr/bin", "/bin"])


@needs_bwrap
def test_a_venv_on_the_users_path_runs_the_jobs_in_the_sandbox(make_repo, tmp_path: Path):
    venv = user_venv(tmp_path / "home" / ".venvs" / "work")
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH_WITH_MODULE})
    set_contract(root, append=QUICK)
    env = {"PATH": _path(venv / "bin")}

    code, out, err = ratchet("check", str(root), "--preflight", env=env)
    assert code == 0, (out, err)
    programs = out["result"]["environment"]["programs"]
    assert programs["python3"]["found"] == str(venv / "bin" / "python3")
    assert str(venv) in programs["python3"]["prefixes"] and str(venv) in programs["bound"]
    assert out["result"]["preflight"]["state"] == "ok"
    text = subprocess.run([sys.executable, "-m", "ratchet", "check", str(root)], capture_output=True, text=True,
                          env={**os.environ, **env}, check=False)
    assert f"python3 -> {venv / 'bin' / 'python3'}" in text.stdout, text.stdout
    assert f"bound read-only in the sandbox: {venv}" in text.stdout, text.stdout

    code, out, err = ratchet("run", str(root), env=env)
    assert code == 0, (out, err)
    finished = [e["data"] for e in events(root, out["result"]["run_id"]) if e["kind"] == "job.finished"]
    assert len(finished) >= 9 and all(d["state"] == "ok" for d in finished), finished

    (root / "params.toml").write_text("x = 1.0\n")
    git(root, "commit", "-qam", "x = 1")
    code, out, err = ratchet("compare", "HEAD~1", "HEAD", cwd=root, env=env)
    assert code == 0, (out, err)
    rows = out["result"]["units_table"]
    assert rows and all(not r["base_failed"] and not r["candidate_failed"] for r in rows), rows


@needs_bwrap
def test_without_the_users_venv_on_path_the_preflight_fails_on_the_import(make_repo, tmp_path: Path):
    user_venv(tmp_path / "home" / ".venvs" / "work")
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH_WITH_MODULE})
    set_contract(root, append=QUICK)
    code, out, _ = ratchet("check", str(root), "--preflight", env={"PATH": _path(None)})
    assert code == 2 and "ModuleNotFoundError" in out["error"]["message"], out


@needs_bwrap
def test_an_untracked_venv_inside_the_project_named_by_the_command_runs_from_the_project(make_repo,
                                                                                          tmp_path: Path):
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH_WITH_MODULE,
                                               ".gitignore": ".ratchet/\n.venv/\n"})
    venv = user_venv(root / ".venv")
    set_contract(root, replace={'command = "python3 bench.py"': 'command = ".venv/bin/python bench.py"'},
                 append=QUICK)
    assert ".venv" not in git(root, "ls-files")
    code, out, err = ratchet("check", str(root), "--preflight", env={"PATH": _path(None)})
    assert code == 0, (out, err)
    programs = out["result"]["environment"]["programs"]
    assert programs["project_file"] == str(venv / "bin" / "python")
    assert str(venv) in programs["bound"]
    assert out["result"]["preflight"]["state"] == "ok"


@in_venv
def test_check_names_ratchets_own_python_only_with_keep_ratchet_venv(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    venv_python = os.path.join(sys.prefix, "bin", "python3")
    env = {"PATH": f"{os.path.join(sys.prefix, 'bin')}:/usr/bin:/bin"}
    code, out, err = ratchet("check", str(root), env=env)
    assert code == 0, err
    assert out["result"]["environment"]["programs"]["python3"]["found"] != venv_python
    set_contract(root, append="\n[sandbox]\nkeep_ratchet_venv = true\n")
    code, out, err = ratchet("check", str(root), env=env)
    assert code == 0, err
    assert out["result"]["environment"]["programs"]["python3"]["found"] == venv_python


@needs_bwrap
def test_a_pyenv_shim_on_path_runs_the_version_it_selects_in_the_sandbox(make_repo, tmp_path: Path):
    pyenv = tmp_path / "home" / ".pyenv"
    venv = user_venv(pyenv / "versions" / "work")
    (pyenv / "version").write_text("work\n")
    (pyenv / "shims").mkdir()
    shim = pyenv / "shims" / "python3"
    shim.write_text("#!/bin/sh\necho 'the shim ran: its manager is not in the job' >&2\nexit 9\n")
    shim.chmod(0o755)
    root = make_repo(tmp_path / "repo", files={"bench.py": BENCH_WITH_MODULE})
    set_contract(root, append=QUICK)
    code, out, err = ratchet("check", str(root), "--preflight", env={"PATH": _path(pyenv / "shims"),
                                                                     "PYENV_VERSION": ""})
    assert code == 0, (out, err)
    e = out["result"]["environment"]
    assert e["path"][0] == str(venv / "bin") and e["programs"]["python3"]["found"] == str(venv / "bin" / "python3")
    assert out["result"]["preflight"]["state"] == "ok"
