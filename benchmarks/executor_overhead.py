"""Per-job overhead of the local executor, without and with the sandbox, against `xargs -P`.

Runs the same shell command (`sleep D`) N times with 2 jobs at a time: through `xargs -P 2`, through
LocalExecutor (sandbox none) and through LocalExecutor (bwrap, when it works). Prints a markdown table
of wall times (median of REPEATS), the ratio to xargs, and the overhead per job in milliseconds
((executor - xargs) * parallel / jobs: the time each slot loses per job).

    python benchmarks/executor_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ratchet.compute.base import JobSpec, SandboxSpec  # noqa: E402
from ratchet.compute.local import LocalExecutor, job_env  # noqa: E402
from ratchet.compute.sandbox import probe_bwrap  # noqa: E402

PARALLEL = 2
CASES = [(0.05, 40), (1.0, 8)]
"""(job duration in seconds, number of jobs)."""


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    modes = ["none"] + (["bwrap"] if probe_bwrap().available else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as tmp:
        for duration, jobs in CASES:
            base = statistics.median(time_xargs(duration, jobs) for _ in range(args.repeats))
            rows.append((duration, jobs, "xargs -P 2", base, 1.0, 0.0))
            for mode in modes:
                wall = statistics.median(
                    time_executor(duration, jobs, mode, Path(tmp)) for _ in range(args.repeats)
                )
                rows.append(
                    (
                        duration,
                        jobs,
                        f"LocalExecutor ({mode})",
                        wall,
                        wall / base,
                        (wall - base) * PARALLEL / jobs * 1000,
                    )
                )
    print(
        f"Executor overhead: {PARALLEL} jobs at a time, median of {args.repeats} runs"
        + ("" if "bwrap" in modes else f" (bwrap unavailable: {probe_bwrap().reason})")
        + "\n"
    )
    print("| job | jobs | runner | wall s | ratio to xargs | overhead per job ms |")
    print("|---|---:|---|---:|---:|---:|")
    for duration, jobs, runner, wall, ratio, overhead in rows:
        print(f"| sleep {duration:g} s | {jobs} | {runner} | {wall:.3f} | {ratio:.2f} | {overhead:.1f} |")


if __name__ == "__main__":
    main()
