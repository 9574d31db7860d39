"""What `ratchet check` says about a command agent's CLI: where the first word of
`agent.command.command` is found (exactly as a leg finds it: `program.agent_program`), what its
sandbox binds, and with `--preflight`, what `<program> --version` prints in that sandbox.

Effects: reads the filesystem; `version_probe` runs the program once under bubblewrap in a
temporary directory.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ratchet.agents.command.program import agent_program, leg_sandbox
from ratchet.compute.env import default_path
from ratchet.compute.programs import ProgramReach
from ratchet.compute.sandbox import wrap_argv
from ratchet.core.contract import CommandAgentConfig
from ratchet.core.jobenv import JOB_LANG

VERSION_TIMEOUT_S = 30.0
"""Seconds `<program> --version` may take in the sandbox before it is killed."""

VERSION_TAIL_CHARS = 500
"""Characters of the probe's output kept in the report."""


def first_word(command: str) -> str:
    """The first word of a command template, split as a leg splits it ('' when it does not split)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    return words[0] if words else ""


def program_summary(cfg: CommandAgentConfig, read_only: Sequence[str]) -> dict[str, Any]:
    """{"program": the ProgramReach of the command's first word as JSON, "bound": the paths the
    leg's sandbox binds read-only for it (with `read_only`), "will_run": whether it was found and
    is executable (None: a path relative to the workspace, known only there), "warnings"}."""
    reach = agent_program(first_word(cfg.command))
    sandbox = leg_sandbox(reach, cfg.network, read_only)
    relative = reach.found is None and reach.problem is None
    warnings = []
    if reach.problem:
        warnings.append(f"the command agent's program will not run: {reach.problem} (install it, or name it "
                        "by its absolute path in agent.command.command)")
    return {"program": reach.to_json(), "bound": list(sandbox.read_only),
            "will_run": None if relative else reach.problem is None, "warnings": warnings}


def version_probe(cfg: CommandAgentConfig, read_only: Sequence[str],
                  timeout_s: float = VERSION_TIMEOUT_S) -> dict[str, Any]:
    """Run `<program> --version` once in the sandbox a leg gets (its program's prefixes and
    `read_only` bound, the agent's PATH, no variable of the operator's environment): {"argv",
    "exit_code" (None: it did not end in time or could not start), "output" (the tail of stdout,
    else stderr), "ok"}."""
    reach: ProgramReach = agent_program(first_word(cfg.command))
    argv = [reach.exec_path, "--version"]
    with tempfile.TemporaryDirectory(prefix="ratchet-agent-probe-") as tmp:
        work, scratch = Path(tmp) / "work", Path(tmp) / "scratch"
        work.mkdir()
        scratch.mkdir()
        env = {"PATH": default_path(), "LANG": JOB_LANG, "HOME": str(scratch), "TMPDIR": str(scratch)}
        if reach.user_base:
            env["PYTHONUSERBASE"] = reach.user_base
        sandbox = leg_sandbox(reach, cfg.network, read_only)
        wrapped = wrap_argv(argv, workdir=work, scratch=scratch, network=sandbox.network, env=env,
                            read_only=sandbox.read_only, read_only_root=sandbox.read_only_root)
        try:
            proc = subprocess.run(wrapped, env=env, capture_output=True, timeout=timeout_s, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {"argv": argv, "exit_code": None, "output": f"no end within {timeout_s:g} s", "ok": False}
        except OSError as exc:
            return {"argv": argv, "exit_code": None, "output": f"bwrap did not run: {exc}", "ok": False}
    text = (proc.stdout or proc.stderr).decode("utf-8", "replace").strip()
    return {"argv": argv, "exit_code": proc.returncode, "output": text[-VERSION_TAIL_CHARS:],
            "ok": proc.returncode == 0}
