"""A command agent's leg program: how the CLI named by `agent.command.command` is found on the leg's
PATH (`agent_program`), the sandbox that shows it (`leg_sandbox`), and whether a leg that ended
failed to start (`did_not_start`, `start_problem`). The agent (`agent.py`) and `ratchet check`
(`probe.py`) both use them, so a check finds the program exactly as a leg does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ratchet.agents.command.limits import CHANNEL_DIR, START_GRACE_S, STDERR_TAIL_CHARS
from ratchet.compute.base import JobResult, SandboxSpec
from ratchet.compute.env import default_path
from ratchet.compute.job_programs import bound_paths
from ratchet.compute.programs import ProgramReach, program_reach


def agent_program(word: str) -> ProgramReach:
    """Where the agent's command word `word` is found on the PATH every leg runs with (less the
    channel, which holds only `ratchet-sys`: `compute.env.default_path()`), with the install prefixes its sandbox binds
    (`compute.programs.program_reach`). `ratchet check` calls this too, so it reports what a leg does."""
    return program_reach(word, default_path())


def leg_sandbox(reach: ProgramReach, network: bool, read_only: Sequence[str]) -> SandboxSpec:
    """The sandbox of every leg: bwrap, the network when `network`, and read-only the prefixes of
    the agent's program (`reach`) and `read_only` (`sandbox.read_only`); the rest of its root read-only
    too, /tmp included (`read_only_root`): only the workspace and the leg's scratch directory (HOME and
    TMPDIR, removed after the leg) are writable, so a write anywhere else fails in the CLI's hands."""
    return SandboxSpec(mode="bwrap", network=network, read_only=bound_paths([reach], read_only), read_only_root=True)


def did_not_start(result: JobResult, workspace: Path, began_ns: int) -> bool:
    """Whether a leg that sent no request is a CLI that did not start: bwrap could not run it
    (`bwrap: execvp ...`, `bwrap: ...` on stderr with exit code 1), or it failed (a non-zero exit
    code) within START_GRACE_S with no file of the workspace (outside `.git` and the channel)
    modified since `began_ns` (time.time_ns() before the leg). A quick exit code 0 is an agent that
    chose to stop: it is reminded, as any leg without a request."""
    if result.state != "failed":
        return False
    if result.exit_code == 1 and result.stderr_tail.lstrip().startswith("bwrap: "):
        return True
    if result.elapsed_s is None or result.elapsed_s >= START_GRACE_S:
        return False
    return not _changed_since(workspace, began_ns)


def _changed_since(workspace: Path, began_ns: int) -> bool:
    for root, dirs, files in os.walk(workspace):
        if root == str(workspace):
            dirs[:] = [d for d in dirs if d not in (".git", CHANNEL_DIR)]
        for name in [*files, *dirs]:
            try:
                if os.lstat(os.path.join(root, name)).st_mtime_ns >= began_ns:
                    return True
            except OSError:
                continue
    return False


def start_problem(result: JobResult, reach: ProgramReach) -> str:
    """The `start_failed` leg's problem: how the CLI ended, where its program was (not) found, and
    its stderr tail (STDERR_TAIL_CHARS)."""
    where = reach.problem or f"{reach.word} resolved to {reach.resolved or reach.exec_path}"
    return f"the agent's CLI did not start ({result.reason}; {where}): {stderr_tail(result)}"


def stderr_tail(result: JobResult) -> str:
    """The leg's stderr tail, stripped and cut to its last STDERR_TAIL_CHARS characters."""
    tail = result.stderr_tail.strip()
    return tail[-STDERR_TAIL_CHARS:] if tail else "(nothing on stderr)"

