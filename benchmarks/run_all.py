"""Run every benchmark, one after another (so none skews another's timings), and write
benchmarks/results/run_all.md: what ran, how long each took, the total. `make bench` calls this.

    python benchmarks/run_all.py [--quick] [--only NAME ...]

--quick: a smoke test of every script (fewer simulations, events, jobs; digits with 2 attempts);
its results go to results/*-quick.md (git-ignored) and leave the full results alone. A full run
takes about 28 minutes on 2 cores: 2.5-4 of them the digits campaign (its max_wall is 2 minutes),
about 5 the kernel overhead (3 x 1,001 jobs each way), about 2 the guard calibration, about 3 the
skewed nulls, about 3 the Slurm overhead (with a cluster up, `make slurm-up`; skipped otherwise),
about 3 the adaptive agents, about 3 the overlapping attempts, about 14 the command agent's
workers on Slurm (4 runs of a 3-minute wall budget and their holdouts; skipped without a cluster)
(more when other processes load the CPUs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import HERE, PYTHON, save, table  # noqa: E402

SCRIPTS = {
    "aa_campaigns": "A/A campaigns: the gate against the field's rules (§1)",
    "power_cost": "power and job-units per trial, fixed-n against sequential looks (§2)",
    "floor_test": "the floor test (betting, rules 2) against the range bets: units needed, type-I error",
    "mixed_campaign": "a mixed campaign: FDR and the final champion's true gain (§3)",
    "guard_calibration": "the harmful-tail guard: Gaussian false alarms per look, power at 1 SD, lopsided nulls",
    "skewed_nulls": "skewed mean-zero nulls: the default test's false promotions, robust candidates",
    "adaptive_examples": "adaptive agents against the examples gate: false promotions and power, before and after",
    "concurrent_levels": "levels when attempts overlap: false promotions at 1, 4 and 16 workers",
    "executor_overhead": "LocalExecutor against xargs -P 2, with and without bwrap (§4a)",
    "slurm_overhead": "SlurmExecutor on the one-node cluster against LocalExecutor, 40 jobs of 0.2 s",
    "ledger_costs": "ledger append, replay and `ratchet status` on 100,000 events (§4b-d)",
    "kernel_overhead": "`ratchet run` of ~1,000 50 ms jobs against xargs -P 2 + bwrap (§4e)",
    "digits_example": "the bundled digits campaign, run once (§5)",
    "verify_costs": "`ratchet verify` on a 100,000-event run (docs/verify.md)",
    "workers": "the search agent on digits at agent.workers = 1, 2, 4 (docs/workers.md)",
    "workers_command": "a scripted command agent on Slurm at agent.workers = 1, 2, 4, 8: time to a true gain",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke mode: every script, small")
    parser.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), help="run only these scripts")
    args = parser.parse_args()
    names = args.only or list(SCRIPTS)
    rows, failed = [], []
    start = time.perf_counter()
    for name in names:
        print(f"== {name}: {SCRIPTS[name]}", flush=True)
        began = time.perf_counter()
        code = subprocess.run(
            [str(PYTHON), str(HERE / f"{name}.py"), *(["--quick"] if args.quick else [])], check=False
        ).returncode
        took = time.perf_counter() - began
        result = f"results/{name}{'-quick' if args.quick else ''}.md"
        rows.append(
            [name, SCRIPTS[name], f"{took:.0f}", "ok" if code == 0 else f"FAILED (exit {code})", result]
        )
        if code != 0:
            failed.append(name)
    total = time.perf_counter() - start
    body = (
        f"`benchmarks/run_all.py{' --quick' if args.quick else ''}`: {len(names)} scripts, "
        f"**{total / 60:.1f} minutes** in all.\n\n"
        + table(["script", "what", "seconds", "status", "result"], rows, "lllll")
    )
    save("run_all" + ("-quick" if args.quick else ""), "Benchmarks: the whole run", body)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
