"""The programs a job runs: the command's program word, `python3` and its prefixes found on the job's
PATH, and a first word relative to the project run from the project when a checkout lacks it."""

from __future__ import annotations

from pathlib import Path

from helpers import user_venv

from ratchet.compute.env import default_path, job_python
from ratchet.compute.job_programs import checkout_command, first_word, job_programs


def test_the_program_word_skips_assignments_and_the_shells_own_words():
    assert first_word("python3 bench.py") == "python3"
    assert first_word("OMP_NUM_THREADS=1 .venv/bin/python bench.py") == ".venv/bin/python"
    assert first_word("cd sub && make") is None
    assert first_word("'unterminated") is None


def test_python3_is_found_on_the_jobs_path_with_its_venv_as_prefix(tmp_path: Path):
    venv = user_venv(tmp_path / "home" / "env")
    reach = job_programs("python3 bench.py", f"{venv}/bin:/usr/bin:/bin").python
    assert reach.found == str(venv / "bin" / "python3") and reach.prefixes[0] == str(venv)
    assert job_programs(None, "/usr/bin:/bin").python.found != reach.found
    assert job_python() == job_programs(None, default_path()).python


def test_a_project_file_is_run_by_its_absolute_path_only_when_the_checkout_lacks_it(tmp_path: Path):
    root = tmp_path / "project"
    venv = user_venv(root / ".venv")
    programs = job_programs(".venv/bin/python bench.py --fast", "/usr/bin:/bin", root)
    assert programs.project_file == str(venv / "bin" / "python") and str(venv) in programs.binds()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    command = ".venv/bin/python bench.py --fast"
    assert checkout_command(command, checkout, programs.project_file) == f"{venv}/bin/python bench.py --fast"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").write_text("")
    assert checkout_command(command, checkout, programs.project_file) == command
    assert checkout_command("python3 other.py", tmp_path, programs.project_file) == "python3 other.py"
    assert job_programs(command, "/usr/bin:/bin", tmp_path / "elsewhere").project_file is None
