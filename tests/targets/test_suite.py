"""A benchmark's suite in one job (targets.suite): the composed command run by a real /bin/sh, its
output cut back per command, and a member's failure read as a failed measurement."""

from __future__ import annotations

import subprocess

from ratchet.targets.shell import read_suite
from ratchet.targets.suite import SuiteMember, split_suite, suite_command

MEMBERS = (SuiteMember("a", "echo '{\"m\": '$A_SEED'}'", "m", "A_SEED", 5.0),
           SuiteMember("b", "echo '{\"m\": 2}'; exit 3", "m", "RATCHET_SEED", 5.0))


def _run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                          env={"RATCHET_SEED": "7", "PATH": "/usr/bin:/bin"}, check=False)


def test_each_member_gets_the_seed_in_its_variable_and_its_own_piece_of_stdout() -> None:
    done = _run(suite_command("echo '{\"score\": 1}'", "RATCHET_SEED", MEMBERS))
    assert done.returncode == 0, "the job exits with the primary's status"
    pieces, status = split_suite(done.stdout, 2)
    assert pieces[0].strip() == '{"score": 1}' and pieces[1].strip() == '{"m": 7}' and status == [0, 0, 3]
    guards, failure = read_suite((pieces, status), MEMBERS, {})
    assert guards is None and failure is not None and "'b'" in failure.reason and "exited 3" in failure.reason
    guards, failure = read_suite((pieces, status), MEMBERS[:1], {})
    assert guards == {"a": 7.0} and failure is None


def test_a_killed_job_has_no_status_line_and_no_member_passes() -> None:
    pieces, status = split_suite('{"score": 1}\n@@ratchet-suite-next@@\n{"m": 3}\n', 1)
    assert status == [None, None]
    guards, failure = read_suite((pieces, status), MEMBERS[:1], {})
    assert guards is None and failure is not None and "did not finish" in failure.reason


def test_without_members_the_command_is_unchanged() -> None:
    assert suite_command("python3 bench.py", "RATCHET_SEED", ()) == "python3 bench.py"
