"""Every path a contract names is checked before anything runs: a typo or a path out of place is an
error of `ratchet check` (and `--preflight`) and of `ratchet run`, which then starts no campaign, naming
the key, the path and a "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ratchet, set_contract
from repo_fixture import EXAMPLES_CONTRACT, git, make_examples_repo

from ratchet.commands.project import check_project
from ratchet.core.errors import ContractError


def _refused(root: Path, code: str, *args: str) -> dict:
    """Run `ratchet ARGS ROOT`, assert exit 2 with `code`, and return the error."""
    status, out, err = ratchet(*args, str(root))
    assert status == 2 and out["error"]["code"] == code, (out, err)
    return out["error"]


def test_a_typo_in_the_search_params_file_is_refused_by_check_and_run_with_a_did_you_mean(make_repo,
                                                                                          tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, replace={'file = "params.toml"': 'file = "parms.toml"'})
    for args in (("check",), ("check", "--preflight"), ("run",)):
        error = _refused(root, "contract.path_missing", *args)
        assert "agent.search.file" in error["message"] and "'parms.toml'" in error["message"], error
        assert error["hint"] == "did you mean 'params.toml'?", error
    assert not (root / ".ratchet" / "runs").exists() or not any((root / ".ratchet" / "runs").iterdir())


def test_a_search_params_file_outside_scope_allowed_is_refused_before_any_attempt(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo", files={"other.toml": "x = 0.0\n"})
    set_contract(root, replace={'file = "params.toml"': 'file = "other.toml"'})
    for args in (("check",), ("run",)):
        error = _refused(root, "contract.path_scope", *args)
        assert "agent.search.file" in error["message"] and "scope_violation" in error["message"], error
        assert "outside scope.allowed" in error["message"] and "scope.allowed" in error["hint"], error
    set_contract(root, replace={'protected = ["bench.py"]': 'protected = ["bench.py", "other.toml"]'})
    assert "protected by scope.protected" in _refused(root, "contract.path_scope", "check")["message"]


def test_an_uncommitted_params_file_is_refused_with_a_hint_to_commit_it(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    (root / "tuned.toml").write_text("x = 0.0\n")
    set_contract(root, replace={'file = "params.toml"': 'file = "tuned.toml"',
                                'allowed = ["params.toml"]': 'allowed = ["params.toml", "tuned.toml"]'})
    git(root, "rm", "-q", "--cached", "tuned.toml")
    git(root, "commit", "-qm", "untrack")
    error = _refused(root, "contract.path_missing", "check")
    assert "tracked in HEAD" in error["message"] and "git add tuned.toml" in error["hint"], error


CUSTOM = '[[target.checks]]\ntype = "custom"\nscript = "{script}"\n'


def _examples_with_check(root: Path, script: str, allowed: str = '["solution.py"]') -> Path:
    contract = EXAMPLES_CONTRACT.replace('[[target.checks]]\ntype = "exact_match"\n', CUSTOM.format(script=script))
    contract = contract.replace('allowed = ["solution.py"]', f"allowed = {allowed}")
    make_examples_repo(root, contract=contract)
    (root / "checks").mkdir()
    (root / "checks" / "grade.py").write_text("import json, sys\nd = json.load(sys.stdin)\n"
                                              "sys.exit(0 if d['actual_output'] == d['expected_output'] else 1)\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "check script")
    return root


def test_a_typo_in_a_custom_check_script_is_refused_before_every_example_becomes_a_check_error(tmp_path: Path):
    root = _examples_with_check(tmp_path / "repo", "checks/grde.py")
    for args in (("check",), ("check", "--preflight"), ("run",)):
        error = _refused(root, "contract.path_missing", *args)
        assert "target.checks[0].script" in error["message"] and "'checks/grde.py'" in error["message"], error
        assert error["hint"] == "did you mean 'checks/grade.py'?", error
    set_contract(root, replace={"checks/grde.py": "checks/grade.py"})
    status, out, err = ratchet("check", str(root))
    assert status == 0, (out, err)


def test_a_custom_check_script_a_candidate_may_change_is_refused_until_out_of_scope_allowed(tmp_path: Path):
    root = _examples_with_check(tmp_path / "repo", "checks/grade.py", allowed='["solution.py", "checks/"]')
    for args in (("check",), ("run",)):
        error = _refused(root, "contract.path_scope", *args)
        assert "target.checks[0].script" in error["message"] and "scope.allowed" in error["hint"], error
    set_contract(root, replace={'allowed = ["solution.py", "checks/"]':
                                'allowed = ["solution.py"]\nprotected = ["checks/"]'})
    status, out, err = ratchet("check", str(root))
    assert status == 0, (out, err)


def test_a_missing_command_agent_brief_is_refused_by_check(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo", files={"BRIEF.md": "Make x better.\n"})
    set_contract(root, replace={'kind = "search"': 'kind = "command"\n[agent.command]\ncommand = "true {prompt}"\n'
                                                   'brief = "BREIF.md"'})
    error = _refused(root, "contract.path_missing", "check")
    assert "agent.command.brief" in error["message"] and error["hint"] == "did you mean 'BRIEF.md'?", error


def test_compare_runs_no_agent_so_its_paths_are_not_checked(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, replace={'file = "params.toml"': 'file = "parms.toml"'})
    check_project(root, for_compare=True)
    with pytest.raises(ContractError) as err:
        check_project(root)
    assert err.value.code == "contract.path_missing"
