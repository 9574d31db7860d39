"""Per-job overhead of the local executor, without and with the sandbox, against `xargs -P`.

Runs the same shell command (`sleep D`) N times with 2 jobs at a time: through `xargs -P 2`, through
LocalExecutor (sandbox none) and through LocalExecutor (bwrap, when it works). Each measurement runs
in a fresh process, so its peak memory (ru_maxrss) is that runner's own. Prints a markdown table of
wall times (median of REPEATS), the ratio to xargs, the overhead per job in milliseconds
((executor - xargs) * parallel / jobs: the time each slot loses per job) and peak memory.
Target: ratio <= 1.15 for 1 s jobs.

    python benchmarks/executor_overhead.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
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
from ratchet.compute.local import LocalExecutor, job_env  # noqa: E402
from ratchet.compute.sandbox import probe_bwrap  # noqa: E402

PARALLEL = 2
CASES = [(0.05, 40), (1.0, 8)]
"""(job duration in seconds, number of jobs)."""
QUICK_CASES = [(0.05, 10), (1.0, 2)]
TARGET_RATIO_1S = 1.15


def time_xargs(duration: float, jobs: int) -> float:
    """Wall seconds of `xargs -P PARALLEL` running `sh -c "sleep duration"` `jobs` times."""
    items = "".join(f"{i}\n" for i in range(jobs)).encode()
    start = time.perf_counter()
    subprocess.run(
        ["xargs", "-P", str(PARALLEL), "-n", "1", "/bin/sh", "-c", f"sleep {duration}", "job"],
        input=items,
        check=True,
    )
    return time.perf_counter() - start


def time_executor(duration: float, jobs: int, mode: str, root: Path) -> float:
    """Wall seconds of LocalExecutor running the same jobs under sandbox `mode`."""
    work = root / "work"
    work.mkdir(exist_ok=True)
    jobs_dir = Path(tempfile.mkdtemp(dir=root, prefix="jobs-"))
    specs = [
        JobSpec(
            job_id=f"j{i}",
            argv=("/bin/sh", "-c", f"sleep {duration}"),
            workdir=work,
            env=job_env("RATCHET_SEED", i, f"j{i}", "candidate", f"u{i}"),
            timeout_s=60.0,
            sandbox=SandboxSpec(mode=mode),
        )
        for i in range(jobs)
    ]
    executor = LocalExecutor(jobs_dir, PARALLEL)
    start = time.perf_counter()
    results = executor.run(specs)
    elapsed = time.perf_counter() - start
    executor.close()
    bad = [r.reason for r in results if r.state != "ok"]
    if bad:
        raise SystemExit(f"jobs failed under {mode}: {bad[:3]}")
    return elapsed


def child(runner: str, duration: float, jobs: int) -> dict[str, float | None]:
    """One measurement in this (fresh) process: wall seconds and the peak RSS in MiB of the
    LocalExecutor's process (None for xargs: a forked child's ru_maxrss counts the parent's pages
    it shared before exec, so it would not measure xargs)."""
    if runner == "xargs":
        return {"wall": time_xargs(duration, jobs), "rss_mb": None}
    else:
        with tempfile.TemporaryDirectory(prefix="ratchet-bench-exec-") as tmp:
            wall = time_executor(duration, jobs, runner, Path(tmp))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall": wall, "rss_mb": rss / 1024}


def measure(runner: str, duration: float, jobs: int) -> dict[str, float | None]:
    out = subprocess.run(
        [str(PYTHON), __file__, "--child", runner, str(duration), str(jobs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer jobs, one repeat")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runner, duration, jobs = args.child
        print(json.dumps(child(runner, float(duration), int(jobs))))
        return
    repeats = 1 if args.quick else args.repeats
    status = probe_bwrap()
    modes = ["none"] + (["bwrap"] if status.available else [])
    rows, checks = [], []
    for duration, jobs in QUICK_CASES if args.quick else CASES:
        runs = {r: [measure(r, duration, jobs) for _ in range(repeats)] for r in ["xargs", *modes]}
        base = statistics.median(m["wall"] for m in runs["xargs"])
        for runner, ms in runs.items():
            wall = statistics.median(m["wall"] for m in ms)
            ratio = wall / base
            name = "xargs -P 2" if runner == "xargs" else f"LocalExecutor (sandbox {runner})"
            bold = runner != "xargs" and duration >= 1.0
            rows.append(
                [
                    f"sleep {duration:g} s",
                    str(jobs),
                    name,
                    f"{wall:.3f}",
                    f"**{ratio:.3f}**" if bold else f"{ratio:.3f}",
                    f"{(wall - base) * PARALLEL / jobs * 1000:.1f}",
                    "-" if runner == "xargs" else f"{max(m['rss_mb'] for m in ms):.0f}",
                ]
            )
            if runner != "xargs" and duration >= 1.0:
                checks.append([name, f"{ratio:.3f}", "met" if ratio <= TARGET_RATIO_1S else "MISSED"])
    head = (
        f"{PARALLEL} jobs at a time, median of {repeats} runs; every run in a fresh process. Sandbox: "
        + (
            f"bwrap available ({status.reason})."
            if status.available
            else f"bwrap unavailable ({status.reason})."
        )
        + " *Overhead per job*: (runner - xargs) x parallel / jobs, "
        "the time a slot loses per job. *Peak RSS*: "
        "the process running LocalExecutor (interpreter and Ratchet included, jobs excluded).\n\n"
        f"## Target: ratio to xargs <= {TARGET_RATIO_1S} for 1 s jobs\n\n"
        + table(["runner", "ratio", "target"], checks)
        + "\n## Wall time\n\n"
        + table(
            ["job", "jobs", "runner", "wall s", "ratio to xargs", "overhead per job ms", "peak RSS MiB"],
            rows,
            "lrlrrrr",
        )
    )
    save(
        "executor_overhead" + ("-quick" if args.quick else ""),
        "Executor overhead: LocalExecutor against xargs",
        head,
    )


if __name__ == "__main__":
    main()
