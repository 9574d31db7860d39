"""The scheduler's commands, run and counted: one `sbatch` / `scontrol` / `scancel` call at a time
with a timeout, its failure a SchedulerError naming the command; and the run's token (the job name
of every array a run submits).

Effects: runs Slurm's client commands.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import time
from collections import Counter
from pathlib import Path

from ratchet.core.errors import RatchetError

SCHEDULER_CALL_TIMEOUT_S = 60.0
"""Seconds one sbatch / scontrol / scancel call may take before it counts as failed."""


NODES_REREAD_S = 60.0
"""Seconds the cluster's node names are kept before `Scheduler.node_names` reads them again."""


class SchedulerError(RatchetError):
    """A Slurm command failed (code `slurm.<command>`), with the command's stderr."""


class Scheduler:
    """Runs scheduler commands and counts them (`calls`: command name -> calls); keeps what it
    read of the cluster (`config`, `node_names`)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._config: str | None = None
        self._nodes: tuple[float, frozenset[str]] | None = None

    def config(self) -> str:
        """`scontrol show config`, read once and kept ("" when it cannot be read)."""
        if self._config is None:
            try:
                self._config = self.call("config", ["scontrol", "show", "config"])
            except SchedulerError:
                self._config = ""
        return self._config

    def node_names(self) -> frozenset[str] | None:
        """The cluster's node names (`scontrol -o show node`), read again once NODES_REREAD_S old;
        None when they cannot be read."""
        now = time.monotonic()
        if self._nodes is None or now - self._nodes[0] > NODES_REREAD_S:
            try:
                text = self.call("nodes", ["scontrol", "-o", "show", "node"])
            except SchedulerError:
                return None
            self._nodes = (now, frozenset(re.findall(r"(?:^|\s)NodeName=(\S+)", text)))
        return self._nodes[1]

    def call(self, name: str, argv: list[str]) -> str:
        """Run one scheduler command (counted under `name`); its stdout. Raises SchedulerError
        `slurm.<name>` when it did not run, timed out (SCHEDULER_CALL_TIMEOUT_S) or exited non-zero."""
        proc = self.attempt(name, argv)
        if proc.returncode != 0:
            raise SchedulerError(f"slurm.{name}", f"{shlex.join(argv[:4])} failed: {proc.stderr.strip()}",
                                 hint="check `sinfo` and the [compute.slurm] settings")
        return proc.stdout

    def attempt(self, name: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
        """Run one scheduler command (counted under `name`) whatever its exit code. Raises
        SchedulerError `slurm.<name>` only when it did not run or timed out."""
        self.calls[name] += 1
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=SCHEDULER_CALL_TIMEOUT_S,
                                  check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SchedulerError(f"slurm.{name}", f"{argv[0]} did not run: {exc}",
                                 hint="is Slurm installed and its controller reachable?") from exc


def run_token(jobs_dir: Path) -> str:
    """The job name of every array submitted for `jobs_dir` (one run's): `ratchet-` and 12 hex
    digits of the SHA-256 of its absolute path."""
    digest = hashlib.sha256(str(Path(jobs_dir).resolve()).encode()).hexdigest()
    return f"ratchet-{digest[:12]}"
