"""Per-job overhead of the Slurm executor on the one-node test cluster, against the local executor.

Runs the same 40 jobs (`sleep 0.2`) through LocalExecutor and through SlurmExecutor (the
[compute.slurm] defaults: polls from 0.5 s growing to 15 s, capped at half the cluster's MinJobAge)
with max_parallel 8 and 2, median of REPEATS runs, the runners alternating (local, slurm,
plain, local, ...) so a change in the machine's load hits both; every run in a fresh process. Also the floor
the cluster itself sets: the same jobs as one plain `sbatch --array=0-39%K` (no wrapper, no
polling; its end seen within 50 ms from files the tasks touch). Prints a markdown table of wall
times, the per-job overhead ((wall on Slurm - wall locally) / jobs), Ratchet's share of it ((wall
on Slurm - the plain array) / jobs) and the scheduler calls a Slurm run made. Target: <= 0.15 s
per job at max_parallel 8. Needs a reachable cluster (`make slurm-up`); without one it writes why
and exits 0.

    python benchmarks/slurm_overhead.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, save, table  # noqa: E402

from ratchet.compute.base import JobSpec, SandboxSpec  # noqa: E402
from ratchet.compute.env import job_env  # noqa: E402

JOBS = 40
DURATION_S = 0.2
PARALLEL = (8, 2)
QUICK_JOBS = 10
TARGET_S_PER_JOB = 0.15
"""At max_parallel 8."""


def cluster_problem() -> str | None:
    """Why no Slurm cluster can be used here, or None."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm client commands not found (run `make slurm-up`)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo did not answer: {exc}"
    if proc.returncode != 0 or not any(s.startswith(("idle", "mix", "alloc")) for s in proc.stdout.split()):
        return f"no Slurm node is up: {proc.stderr.strip() or proc.stdout.strip()}"
    return None


def plain_array(root: Path, parallel: int, jobs: int) -> float:
    """Wall seconds of the same jobs as one plain sbatch array (the cluster's own floor), until every
    task has touched its file."""
    start = time.perf_counter()
    subprocess.run(["sbatch", "--parsable", f"--array=0-{jobs - 1}%{parallel}", "--time=1", "--export=NIL",
                    "--job-name=ratchet-bench-floor", "--output=/dev/null", f"--chdir={root}", "--wrap",
                    f"sleep {DURATION_S}; touch {root}/done-$SLURM_ARRAY_TASK_ID"], check=True, capture_output=True)
    while len(list(root.glob("done-*"))) < jobs:
        time.sleep(0.05)
    return time.perf_counter() - start


def child(runner: str, parallel: int, jobs: int) -> dict[str, object]:
    """One run in this (fresh) process: wall seconds and, on Slurm, the scheduler calls by command."""
    from ratchet.compute.local import LocalExecutor
    from ratchet.compute.slurm import SlurmExecutor

    root = Path(tempfile.mkdtemp(prefix="ratchet-bench-slurm-"))
    try:
        if runner == "plain":
            return {"wall": plain_array(root, parallel, jobs), "calls": {}}
        work = root / "work"
        work.mkdir()
        specs = [JobSpec(f"j{i}", ("/bin/sh", "-c", f"sleep {DURATION_S}"), work,
                         job_env("RATCHET_SEED", i, f"j{i}", "candidate", f"u{i}"), 60.0,
                         sandbox=SandboxSpec(mode="none"))
                 for i in range(jobs)]
        jobs_dir = root / "jobs"
        executor = LocalExecutor(jobs_dir, parallel) if runner == "local" else SlurmExecutor(jobs_dir, parallel)
        start = time.perf_counter()
        results = executor.run(specs)
        wall = time.perf_counter() - start
        executor.close()
        bad = [r.reason for r in results if r.state != "ok"]
        if bad:
            raise SystemExit(f"jobs failed on {runner}: {bad[:3]}")
        calls = dict(executor.calls) if isinstance(executor, SlurmExecutor) else {}
        return {"wall": wall, "calls": calls}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(runner: str, parallel: int, jobs: int) -> dict:
    out = subprocess.run([str(PYTHON), __file__, "--child", runner, str(parallel), str(jobs)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer jobs, one repeat")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runner, parallel, jobs = args.child
        print(json.dumps(child(runner, int(parallel), int(jobs))))
        return
    name = "slurm_overhead" + ("-quick" if args.quick else "")
    title = "Slurm executor overhead: SlurmExecutor against LocalExecutor"
    problem = cluster_problem()
    if problem is not None:
        save(name, title, f"Not measured: {problem}.\n")
        return
    repeats = 1 if args.quick else args.repeats
    jobs = QUICK_JOBS if args.quick else JOBS
    rows, checks = [], []
    for parallel in PARALLEL:
        runs: dict[str, list[dict]] = {"local": [], "slurm": [], "plain": []}
        for _ in range(repeats):
            for runner in runs:  # alternating, so a change of load hits both
                runs[runner].append(measure(runner, parallel, jobs))
        local = statistics.median(m["wall"] for m in runs["local"])
        slurm = statistics.median(m["wall"] for m in runs["slurm"])
        plain = statistics.median(m["wall"] for m in runs["plain"])
        per_job = (slurm - local) / jobs
        calls = runs["slurm"][len(runs["slurm"]) // 2]["calls"]
        rows.append([str(parallel), f"{local:.2f}", f"{slurm:.2f}",
                     " / ".join(f"{m['wall']:.2f}" for m in runs["slurm"]), f"{plain:.2f}", f"**{per_job:.3f}**",
                     f"{(slurm - plain) / jobs:.3f}", ", ".join(f"{k} {v}" for k, v in sorted(calls.items()))])
        if parallel == 8:
            checks.append([f"max_parallel {parallel}", f"{per_job:.3f}",
                           "met" if per_job <= TARGET_S_PER_JOB else "MISSED"])
    head = (
        f"{jobs} jobs of `sleep {DURATION_S:g}`, median of {repeats} runs per runner, runners alternating; every "
        "run in a fresh process. Slurm: the one-node test cluster (scripts/slurm-cluster.sh) on this machine, "
        "[compute.slurm] defaults. *Overhead per job*: (wall on Slurm - wall locally) / jobs. *Plain sbatch array*: "
        "the same jobs as one `sbatch --array` without Ratchet (no wrapper, no polling): the cluster's own floor; "
        "*Ratchet's share*: (wall on Slurm - plain array) / jobs.\n\n"
        f"## Target: <= {TARGET_S_PER_JOB} s per job at max_parallel 8\n\n"
        + table(["case", "s per job", "target"], checks)
        + "\n## Wall time\n\n"
        + table(["max_parallel", "local s", "slurm s", "slurm runs s", "plain sbatch array s", "overhead s per job",
                 "Ratchet's share s per job", "scheduler calls (a median run)"], rows, "rrrrrrrl")
    )
    save(name, title, head)


if __name__ == "__main__":
    main()
