"""Where a command's program lives, on real files: a venv's console script, a pipx-style symlink, an
nvm-style node package behind `#!/usr/bin/env node`, a pyenv shim, a script in the home directory,
and what the sandbox then shows (a real bwrap run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.compute.programs import install_prefix, program_reach
from ratchet.compute.sandbox import probe_bwrap, wrap_argv


def outside_usr(prefixes: tuple[str, ...]) -> list[str]:
    """The prefixes besides /usr (where `#!/bin/sh` resolves to)."""
    return [p for p in prefixes if p != "/usr"]


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv (no pip) outside /usr with a console script `venvtool` run by its own python."""
    root = tmp_path_factory.mktemp("programs") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    script(root / "bin" / "venvtool", f"#!{root}/bin/python\nimport sys\nprint('venvtool 1.0', sys.prefix)\n")
    return root


def test_a_venv_console_script_is_found_on_path_with_its_venv_and_its_interpreter(venv: Path):
    reach = program_reach("venvtool", f"/nonexistent:{venv}/bin:/usr/bin")
    assert reach.problem is None
    assert reach.found == str(venv / "bin" / "venvtool") == reach.exec_path
    assert reach.interpreters == (f"{venv}/bin/python",)
    assert reach.prefixes[0] == str(venv)
    python_home = install_prefix(os.path.realpath(venv / "bin" / "python"))
    assert python_home in reach.prefixes  # the venv's base python, wherever it is installed


def test_a_symlink_outside_every_prefix_runs_by_its_resolved_path(venv: Path, tmp_path: Path):
    links = tmp_path / "dot-local" / "bin"  # like pipx's ~/.local/bin/aider -> .../venvs/aider/bin/aider
    links.mkdir(parents=True)
    (links / "tool").symlink_to(venv / "bin" / "venvtool")
    reach = program_reach("tool", str(links))
    assert reach.found == str(links / "tool") and reach.resolved == str(venv / "bin" / "venvtool")
    assert reach.exec_path == reach.resolved, "its own bin/.. would expose the whole of ~/.local"
    assert str(tmp_path / "dot-local") not in reach.prefixes and str(venv) in reach.prefixes


def test_an_env_shebang_names_an_interpreter_found_on_path(tmp_path: Path):
    version = tmp_path / "nvm" / "versions" / "node" / "v20.1.0"
    script(version / "bin" / "node", "#!/bin/sh\necho node\n")
    cli = script(version / "lib" / "node_modules" / "pkg" / "cli.js", "#!/usr/bin/env node\nconsole.log(1)\n")
    (version / "bin" / "agentcli").symlink_to(os.path.relpath(cli, version / "bin"))
    reach = program_reach("agentcli", f"{version}/bin:/usr/bin")
    assert reach.resolved == str(cli)
    assert reach.interpreters == (str(version / "bin" / "node"), "/bin/sh")  # node here is a script itself
    assert outside_usr(reach.prefixes) == [str(version)] and reach.exec_path == reach.found


def test_a_pyenv_shim_is_replaced_by_the_program_of_the_version_it_selects(tmp_path: Path):
    root = tmp_path / "pyenv"
    script(root / "shims" / "tool", "#!/bin/sh\nexec pyenv exec tool\n")
    real = script(root / "versions" / "3.12.1" / "bin" / "tool", "#!/bin/sh\necho real\n")
    (root / "version").write_text("3.12.1\n")
    reach = program_reach("tool", f"{root}/shims:/usr/bin")
    assert reach.found == str(real) and outside_usr(reach.prefixes) == [str(root / "versions" / "3.12.1")]
    (root / "version").write_text("system\n")
    assert program_reach("tool", f"{root}/shims").problem is not None, "an unresolvable shim is skipped"


def test_neither_the_home_directory_nor_its_parents_are_ever_bound(tmp_path: Path, monkeypatch):
    home = tmp_path / "home" / "u"
    monkeypatch.setenv("HOME", str(home))
    tool = script(home / "bin" / "mytool", "#!/bin/sh\necho hi\n")
    reach = program_reach("mytool", str(home / "bin"))
    assert outside_usr(reach.prefixes) == [str(tool)], "home/bin/.. is the home: the file alone is bound"


def test_a_missing_program_says_where_it_was_looked_for():
    reach = program_reach("no-such-program-anywhere", "/usr/bin:/bin")
    assert reach.found is None and "not found on the PATH" in (reach.problem or "")
    assert reach.problem and "/usr/bin:/bin" in reach.problem


@pytest.mark.skipif(not probe_bwrap().available, reason="needs a working bwrap")
def test_the_sandbox_runs_a_venv_program_only_once_its_prefixes_are_bound(venv: Path, tmp_path: Path):
    work, scratch = tmp_path / "w", tmp_path / "s"
    work.mkdir()
    scratch.mkdir()
    reach = program_reach("venvtool", f"{venv}/bin:/usr/bin")
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin"}

    def run(read_only: tuple[str, ...]) -> subprocess.CompletedProcess[bytes]:
        argv = wrap_argv([reach.exec_path], workdir=work, scratch=scratch, network=False, env=env,
                         read_only=read_only)
        return subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)

    hidden = run(())
    assert hidden.returncode != 0 and b"venvtool" in hidden.stderr
    seen = run(reach.prefixes)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.decode().strip() == f"venvtool 1.0 {venv}"


def test_a_pip_user_install_binds_the_user_base_and_names_it(tmp_path: Path, monkeypatch):
    home = tmp_path / "home" / "u"
    monkeypatch.setenv("HOME", str(home))
    script(home / ".local" / "bin" / "usertool", "#!/bin/sh\necho hi\n")
    (home / ".local" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    reach = program_reach("usertool", str(home / ".local" / "bin"))
    assert outside_usr(reach.prefixes) == [str(home / ".local")] and reach.user_base == str(home / ".local")
    assert program_reach("sh", "/usr/bin:/bin").user_base is None
