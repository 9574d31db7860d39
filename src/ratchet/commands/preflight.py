"""The preflight: the baseline measured once before any budget is spent (`ratchet run`,
`ratchet compare`, `ratchet check --preflight`), and what its failure says.

When the baseline measures nothing in the sandbox, it is measured once more without it. If it
measures there, the error says so (`preflight.sandbox_only`) and names the likely cause: PATH
entries the sandbox does not show, absolute paths in the job's stderr the sandbox does not show
(its private /tmp, the operator's home), or the network it cuts.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from dataclasses import replace

from ratchet.compute.base import SandboxSpec
from ratchet.compute.local import LocalExecutor
from ratchet.compute.outcome import stderr_excerpt
from ratchet.compute.sandbox import visible_paths
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import MeasurementError
from ratchet.core.jobenv import outside, path_entries
from ratchet.core.jobfiles import JobFiles
from ratchet.core.plan import NO_ATTEMPT
from ratchet.ledger.rundir import RATCHET_DIR
from ratchet.loop.kernel import Kernel
from ratchet.loop.measure import Runner
from ratchet.targets.base import UnitResult
from ratchet.targets.benchmark import BenchmarkTarget, baseline_error
from ratchet.workspace.git import Git

_PATH_IN_TEXT = re.compile(r"(?<![\w.])(/(?:[\w.+-]+/)*[\w.+-]+)")
_NETWORK_WORDS = ("name resolution", "network is unreachable", "getaddrinfo", "could not resolve host",
                  "connection refused", "no route to host", "name or service not known")


def measure_baseline(loaded: LoadedContract, git: Git, tree: str, sandbox: SandboxSpec) -> tuple[UnitResult, str]:
    """Measure `tree` once (the target's preflight job) under `sandbox`, unrecorded, in a scratch
    directory under `.ratchet/preflight/` removed afterwards (`ratchet check --preflight`, and the
    diagnosis of a recorded preflight that failed). Returns (its result, the job's stderr tail)."""
    work = loaded.root / RATCHET_DIR / "preflight" / secrets.token_hex(4)
    target = BenchmarkTarget(loaded.contract, sandbox, salt="preflight")
    executor = LocalExecutor(work / "jobs", 1)
    runner = Runner(git=git, executor=executor, target=target, work_dir=work / "work", record=lambda payload: None)
    (job,) = target.preflight_jobs(tree)
    try:
        result = runner.measure_jobs([job], attempt=NO_ATTEMPT, stage="preflight")[job.job_id]
        return result, stderr_excerpt(JobFiles.of(work / "jobs", job.job_id))
    finally:
        executor.close()
        shutil.rmtree(work, ignore_errors=True)


def sandbox_diagnosis(kernel: Kernel, err: MeasurementError) -> MeasurementError:
    """For a recorded preflight that failed under the sandbox (`preflight.no_metric`,
    `preflight.missing_module`): measure the
    baseline once more without it (unrecorded); when it measures there, `preflight.sandbox_only`
    naming the likely causes; otherwise `err` unchanged."""
    if err.code not in ("preflight.no_metric", "preflight.missing_module") or kernel.sandbox.mode != "bwrap":
        return err
    loaded, tree = kernel.loaded, kernel.state().baseline.tree or ""
    (job,) = BenchmarkTarget(loaded.contract, kernel.sandbox, salt="preflight").preflight_jobs(tree)
    tail = stderr_excerpt(JobFiles.of(kernel.run.jobs, job.job_id))
    recorded = kernel.state().finished_jobs.get(job.job_id)
    state, reason = (recorded.state, recorded.reason) if recorded is not None else ("None", "None")
    failed = UnitResult(job.job_id, "champion", 0, None, True, state, reason)
    return preflight_error(loaded, kernel.git, tree, kernel.sandbox, failed, tail)


def likely_causes(stderr: str, sandbox: SandboxSpec, home: str | None = None) -> list[str]:
    """What the sandbox hides that a job failing only inside it probably needed, as sentences."""
    causes = []
    seen = visible_paths(sandbox.read_only)
    hidden_path = outside(path_entries(sandbox.path or ""), seen)
    if hidden_path:
        causes.append(f"PATH entries the sandbox does not show: {', '.join(hidden_path)} (add them, or the "
                      "installs they belong to, to sandbox.read_only)")
    mentioned = list(dict.fromkeys(_PATH_IN_TEXT.findall(stderr)))
    in_tmp = [p for p in mentioned if p == "/tmp" or p.startswith("/tmp/")]
    if in_tmp:
        causes.append(f"files under /tmp ({', '.join(in_tmp[:3])}): the sandbox's /tmp is private and empty")
    home = home or os.path.expanduser("~")
    others = [p for p in outside(mentioned, [*seen, "/tmp", "/proc", "/dev"]) if os.path.exists(p)]
    if others:
        where = " (under your home, which the sandbox never shows)" if any(
            p.startswith(home.rstrip("/") + "/") for p in others) else ""
        causes.append(f"paths the job names that the sandbox does not show: {', '.join(others[:5])}{where} "
                      "(add them to sandbox.read_only)")
    if not sandbox.network and any(word in stderr.lower() for word in _NETWORK_WORDS):
        causes.append("the network: the sandbox has none (sandbox.network = false)")
    return causes or ["something outside the sandbox's read-only system directories, the checkout and the "
                      "scratch directory (see `ratchet check`: the PATH entries and paths the sandbox does not show)"]


def preflight_error(loaded: LoadedContract, git: Git, tree: str, sandbox: SandboxSpec, m: UnitResult,
                    tail: str) -> MeasurementError:
    """The error for a baseline that measured nothing (`m`, with its stderr `tail`): under the
    sandbox, the baseline is measured once more without it, and when it measures there the error
    is `preflight.sandbox_only` naming the likely causes; otherwise targets.benchmark.baseline_error
    (`preflight.missing_module` or `preflight.no_metric`)."""
    c = loaded.contract
    quoted = f"\n--- stderr tail ---\n{tail}" if tail.strip() else ""
    if sandbox.mode == "bwrap":
        bare, _ = measure_baseline(loaded, git, tree, replace(sandbox, mode="none"))
        if not bare.failed:
            causes = likely_causes(tail, sandbox)
            return MeasurementError(
                "preflight.sandbox_only",
                f"the baseline measures outside the sandbox ({c.target.metric} = {bare.value!r}) but not inside "
                f"it: `{c.target.command}` gave {m.state}: {m.reason}. Likely cause: " + "; ".join(causes) + quoted,
                hint="let the sandbox show what the job needs (sandbox.read_only, sandbox.network), or run without "
                     'it (sandbox.mode = "none")',
            )
    return baseline_error(c, sandbox, m, tail)
