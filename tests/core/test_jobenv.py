"""The one rule for a job's environment (core/jobenv.py) and the contract keys that feed it."""

from __future__ import annotations

import pytest
from repo_fixture import CONTRACT

from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import ContractError
from ratchet.core.jobenv import SYSTEM_PATH, is_reserved_env, job_path, outside


def test_the_job_path_is_the_launch_path_without_ratchets_venv_nor_relative_entries():
    launch = "/venv/bin:/home/u/.pyenv/shims:.:bin::/usr/bin:/venv/bin/:/usr/bin"
    assert job_path(launch, "/venv/bin") == "/home/u/.pyenv/shims:/usr/bin"
    assert job_path(launch, "/venv/bin", keep_ratchet_bin=True) == "/venv/bin:/home/u/.pyenv/shims:/usr/bin"
    assert job_path(launch, None) == "/venv/bin:/home/u/.pyenv/shims:/usr/bin:/venv/bin/"
    assert job_path("/venv/bin:.", "/venv/bin") == ":".join(SYSTEM_PATH)


def test_reserved_names_are_the_ones_ratchet_sets_and_loader_or_interpreter_switches():
    for name in ("PATH", "HOME", "TMPDIR", "LANG", "RATCHET_JOB_ID", "RATCHET_VARIANT", "RATCHET_UNIT",
                 "CUDA_VISIBLE_DEVICES", "LD_PRELOAD", "PYTHONPATH"):  # CUDA_VISIBLE_DEVICES: a GPU job's devices
        assert is_reserved_env(name), name
    assert not is_reserved_env("HF_HOME")


def test_outside_lists_paths_no_visible_directory_covers():
    assert outside(["/usr/bin", "/home/u/bin", "/usr2/bin", "/opt/x"], ["/usr", "/opt/x"]) == ["/home/u/bin",
                                                                                              "/usr2/bin"]


def _with_sandbox(text: str):
    return parse_contract(CONTRACT + "\n[sandbox]\n" + text)


def test_sandbox_pass_env_and_read_only_validate():
    s = _with_sandbox('pass_env = ["HF_HOME", "MY_TOKEN"]\nread_only = ["/opt/conda"]\n').sandbox
    assert s.pass_env == ["HF_HOME", "MY_TOKEN"] and s.read_only == ["/opt/conda"] and not s.keep_ratchet_venv


@pytest.mark.parametrize("text, words", [
    ('pass_env = ["PATH"]', "reserved"),
    ('pass_env = ["LD_PRELOAD"]', "reserved"),
    ('pass_env = ["PYTHONPATH"]', "reserved"),
    ('pass_env = ["RATCHET_UNIT"]', "reserved"),
    ('pass_env = ["MY-VAR"]', "not an environment variable name"),
    ('pass_env = ["A", "A"]', "twice"),
    ('read_only = ["opt/conda"]', "absolute"),
    ('read_only = ["/"]', "absolute path other than /"),
    ('read_only = ["/opt/../etc"]', "'..'"),
])
def test_bad_sandbox_environment_settings_are_contract_errors_naming_the_key(text: str, words: str):
    with pytest.raises(ContractError) as caught:
        _with_sandbox(text + "\n")
    assert "sandbox." in caught.value.message and words in caught.value.message, caught.value.message
