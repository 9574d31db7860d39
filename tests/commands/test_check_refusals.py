"""`ratchet check` refuses what `ratchet run` would refuse, with the same error (issue 16, item 6),
`--preflight` measures the baseline once; the uncommitted-changes warning names only inputs read
from HEAD, whole (item 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import ratchet, set_contract
from repo_fixture import CONTRACT

from ratchet.workspace.git import Git


def _both(root: Path) -> tuple[tuple[int, dict], tuple[int, dict]]:
    code_c, out_c, _ = ratchet("check", str(root))
    code_r, out_r, _ = ratchet("run", str(root))
    return (code_c, out_c["error"]), (code_r, out_r["error"])


def test_a_folder_that_is_not_a_git_repository_is_refused_by_check_as_by_run(tmp_path: Path):
    (tmp_path / "ratchet.toml").write_text(CONTRACT)
    check, run = _both(tmp_path)
    assert check == run and check[0] == 2 and check[1]["code"] == "git.not_a_repo"


def test_a_project_in_a_subfolder_of_a_repository_is_refused_by_check_as_by_run(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo", files={"sub/ratchet.toml": CONTRACT, "sub/bench.py": "", "sub/params.toml": ""})
    check, run = _both(root / "sub")
    assert check == run and check[0] == 2 and check[1]["code"] == "git.not_a_repo"
    assert "top of a git repository" in check[1]["message"]


def test_a_compute_setting_this_machine_cannot_run_is_refused_by_check_as_by_run(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, append="\n[compute]\ngpus_per_job = 2\ngpus = [0]\n")
    check, run = _both(root)
    assert check == run and check[0] == 2 and check[1]["code"] == "compute.gpus_too_few"


def test_gpu_jobs_over_max_concurrent_gpus_run_one_at_a_time_in_check_and_run(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, append="\n[compute]\nmax_parallel = 4\ngpus_per_job = 3\nmax_concurrent_gpus = 2\n"
                              "gpus = [0, 1, 2]\n[gate]\nunits = [4]\nholdout_units = 4\n[budget]\nmax_attempts = 1\n")
    code, out, err = ratchet("check", str(root))
    assert code == 0, err
    assert out["result"]["compute"]["jobs_at_once"] == 1
    assert any("one at a time" in w for w in out["result"]["warnings"])
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    code, out, err = ratchet("status", "--dir", str(root))
    assert code == 0, err


def test_a_run_refused_before_it_starts_leaves_no_run_directory(make_repo, tmp_path: Path, monkeypatch):
    from ratchet.commands.project import check_project
    from ratchet.core.errors import SandboxError
    from ratchet.loop import life

    root = make_repo(tmp_path / "repo")
    loaded, _ = check_project(root)

    def refused(*args: object, **kwargs: object) -> None:
        raise SandboxError("sandbox.unavailable", "the nodes have no bubblewrap")

    monkeypatch.setattr(life, "open_kernel", refused)
    with pytest.raises(SandboxError):
        life.new_kernel(loaded)
    runs = root / ".ratchet" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


@pytest.mark.slow
def test_check_preflight_measures_the_baseline_once_and_refuses_one_without_a_metric(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    code, out, err = ratchet("check", str(root), "--preflight")
    assert code == 0, err
    assert out["result"]["preflight"]["state"] == "ok" and out["result"]["preflight"]["value"] is not None
    assert not (root / ".ratchet" / "runs").exists()  # a check opens no run
    (root / "bench.py").write_text("print('no metric here')\n")
    from repo_fixture import git

    git(root, "commit", "-qam", "broken bench")
    code, out, _ = ratchet("check", str(root), "--preflight")
    assert code == 2 and out["error"]["code"] == "preflight.no_metric"
    code, out, _ = ratchet("check", str(root))  # without --preflight nothing runs
    assert code == 0 and "preflight" not in out["result"]


def test_changed_paths_keep_their_first_letter(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    (root / "ratchet.toml").write_text(CONTRACT + "\n# edited\n")
    (root / "new file.txt").write_text("x")
    assert sorted(Git(root).changed_paths()) == ["new file.txt", "ratchet.toml"]


def test_the_uncommitted_warning_names_only_inputs_read_from_head(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, replace={'kind = "search"': 'kind = "files"\n\n[agent.files]\npath = "candidates/"'})
    (root / "ratchet.toml").write_text((root / "ratchet.toml").read_text() + "\n# edited\n")
    (root / "candidates" / "1").mkdir(parents=True)
    (root / "candidates" / "1" / "params.toml").write_text("x = 1.0\n")
    (root / "bench.py").write_text((root / "bench.py").read_text() + "\n# edited\n")
    code, out, err = ratchet("check", str(root))
    assert code == 0, err
    (warning,) = [w for w in out["result"]["warnings"] if "uncommitted" in w]
    assert "differ from it: bench.py (" in warning
    assert "working tree: ratchet.toml, candidates/" in warning
    assert out["result"]["inputs"]["working_tree"] == ["ratchet.toml", "candidates/"]
    (root / "bench.py").write_text((root / "bench.py").read_text().replace("\n# edited\n", ""))
    from repo_fixture import git

    git(root, "checkout", "--", "bench.py")
    code, out, _ = ratchet("check", str(root))
    assert not [w for w in out["result"]["warnings"] if "uncommitted" in w]  # the contract and candidates are live


FILES_AGENT = '[agent]\nkind = "files"\n\n[agent.files]\npath = "candidates"\n'
SEARCH_AGENT = CONTRACT[CONTRACT.index("[agent]"):]


@pytest.mark.parametrize(("agent", "key", "value"), [
    ("search", "max_usd", "1.5"), ("search", "max_input_tokens", "1000"), ("search", "max_model_calls", "3"),
    ("files", "max_usd", "1.5"), ("files", "max_input_tokens", "1000"), ("files", "max_model_calls", "3"),
])
def test_a_model_budget_of_an_agent_without_a_model_is_refused_by_check_as_by_run(make_repo, tmp_path: Path,
                                                                                   agent: str, key: str, value: str):
    root = make_repo(tmp_path / "repo")
    set_contract(root, replace={SEARCH_AGENT: FILES_AGENT} if agent == "files" else {},
                 append=f"\n[budget]\n{key} = {value}\n")
    check, run = _both(root)
    assert check == run and check[0] == 2 and check[1]["code"] == "contract.unenforceable_budget"
    assert f"budget.{key} = {value}" in check[1]["message"] and f"agent.kind = '{agent}'" in check[1]["message"]
    assert not (root / ".ratchet" / "runs").exists()  # refused before any run opened


COMMAND_AGENT = '[agent]\nkind = "command"\n\n[agent.command]\ncommand = "{cli} {{prompt}}"\n'


@pytest.mark.parametrize(("cli", "budget", "refused"), [
    ("python3 agent/bot.py", "max_model_calls = 5", "max_model_calls"),
    ("python3 agent/bot.py", "max_usd = 2.0", "max_usd"),
    ("python3 agent/bot.py", "max_input_tokens = 100000\nmax_output_tokens = 1000", None),
    ("claude -p", "max_usd = 2.0", None),
])
def test_a_command_agent_is_refused_the_budgets_its_cli_cannot_report(make_repo, tmp_path: Path, cli: str,
                                                                      budget: str, refused: str | None):
    root = make_repo(tmp_path / "repo")
    set_contract(root, replace={SEARCH_AGENT: COMMAND_AGENT.format(cli=cli)}, append=f"\n[budget]\n{budget}\n")
    bin_dir = tmp_path / "bin"  # a `claude` on the PATH: check refuses a CLI it cannot find
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    code, out, err = ratchet("check", str(root), env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    if refused is None:
        assert code == 0, (out, err)
        return
    assert code == 2 and out["error"]["code"] == "contract.unenforceable_budget", out
    assert f"budget.{refused} =" in out["error"]["message"]


def test_a_price_lets_a_command_agent_hold_a_dollar_budget(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    agent = COMMAND_AGENT.format(cli="python3 agent/bot.py") + "\n[agent.command.price]\ninput_usd_per_mtok = 3.0\n"
    set_contract(root, replace={SEARCH_AGENT: agent}, append="\n[budget]\nmax_usd = 2.0\n")
    code, out, err = ratchet("check", str(root))
    assert code == 0, (out, err)
