"""Several attempts at once with a command agent on the Slurm cluster: agent.workers = 1, 2, 4, 8.

A scripted command agent (no model) "thinks" THINK_S seconds per leg, then raises one of PARAMS
parameters of params.toml by one and exits (submitting on exit): the parameter is picked from the
attempt number in its prompt, so workers started together edit different lines (each parameter's
line is fenced by comment lines, so two such edits re-base cleanly). The benchmark's jobs take
JOB_S seconds and score sum(params) + Gauss(0, NOISE_SD) noise: every step is a true gain of 1.0.
Every run has the same wall budget (`budget.max_wall`), `compute.backend = "slurm"`,
`compute.max_parallel = 8`, gate units [6, 12] at `gate.multiplicity = "trial"` (a
sign-flip look needs 6 units to reach its increment, 0.025; the campaign's shrinking shares would
stop later attempts from accepting at all), confirmation off, cache off, `sandbox.mode = "none"`;
only `agent.workers` changes.

Read from the ledger: job-units, promotions, stale verdicts, re-base attempts; the true gain (the
final champion's sum(params), by the formula, no noise); the seconds from the run's start to the
first `champion.promoted` and to the first at which the true gain reached the final true gain of the
first N in the list (N = 1: the "time to N=1's gain"); the idle executor share (as
benchmarks/workers.py). Target: at N = 4 that time <= TARGET_RATIO x N = 1's.

    python benchmarks/workers_command.py [--workers 1 2 4 8] [--wall 3m] [--quick]

Needs a reachable Slurm cluster (`make slurm-up`); without one it writes why and exits 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, save, table  # noqa: E402
from slurm_overhead import cluster_problem  # noqa: E402
from workers import git, idle_share  # noqa: E402

RATCHET = PYTHON.parent / "ratchet"
PARAMS = 12
"""Parameters p0..p11 in params.toml; attempt a raises p[(a - 1) % PARAMS]."""
THINK_S = 5.0
"""Seconds the scripted agent sleeps per leg before it edits."""
JOB_S = 1.0
"""Seconds each benchmark job sleeps before it scores."""
NOISE_SD = 0.1
"""Standard deviation of each job's score noise; a step's true gain is 1.0."""
MAX_PARALLEL = 8
TARGET_RATIO = 0.35
"""At N = 4: time to N=1's final true gain / N = 1's."""

BENCH = f"""\
import json, os, random, time, tomllib
with open("params.toml", "rb") as f:
    params = tomllib.load(f)
time.sleep({JOB_S})
seed = int(os.environ.get("RATCHET_SEED", "0"))
noise = random.Random(f"{{seed}}-{{sorted(params.items())}}").gauss(0.0, {NOISE_SD})
print(json.dumps({{"score": sum(params.values()) + noise}}))
"""

BOT = f"""\
\"\"\"A scripted command agent: thinks {THINK_S:g} s, raises p[(attempt - 1) % {PARAMS}] by one, exits.\"\"\"
import re, sys, time
prompt = open(sys.argv[1]).read()
found = re.match(r"# Ratchet, attempt (\\d+)", prompt)
if found is None:  # a reminder or a verdict: this bot makes one change per session
    sys.exit(0)
time.sleep({THINK_S})
name = f"p{{(int(found.group(1)) - 1) % {PARAMS}}}"
text = open("params.toml").read()
value = int(re.search(rf"^{{name}} = (\\d+)$", text, re.M).group(1))
open("params.toml", "w").write(re.sub(rf"^{{name}} = \\d+$", f"{{name}} = {{value + 1}}", text, flags=re.M))
print(f"bot: {{name}} {{value}} -> {{value + 1}}")
"""

CONTRACT = """\
[campaign]
name = "workers-command-bench"
seed = 0

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
direction = "max"
seed_env = "RATCHET_SEED"
timeout_s = 60
cache = false

[scope]
allowed = ["params.toml"]
protected = ["bench.py", "agent/"]
hidden = []

[agent]
kind = "command"
workers = {workers}
[agent.command]
command = "python3 agent/bot.py {{prompt}}"
timeout_s = 120
max_submits = 1

[gate]
alpha = 0.05
multiplicity = "trial"
units = [6, 12]
confirm = false
holdout_units = 6

[budget]
max_attempts = 1000
max_wall = "{wall}"

[compute]
backend = "slurm"
max_parallel = {max_parallel}
[compute.slurm]
poll_min_s = 0.2
poll_max_s = 2.0

[sandbox]
mode = "none"
"""


def params_text(values: dict[str, int]) -> str:
    """params.toml: one `pI = V` line per parameter, each between comment lines (a three-way merge of
    edits to two different parameters is clean only when their lines are not adjacent)."""
    return "".join(f"# p{i}\n{name} = {values[name]}\n# end p{i}\n" for i, name in enumerate(values))


def make_project(root: Path, workers: int, wall: str) -> None:
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "bot.py").write_text(BOT)
    (root / "bench.py").write_text(BENCH)
    (root / "params.toml").write_text(params_text({f"p{i}": 0 for i in range(PARAMS)}))
    (root / "ratchet.toml").write_text(CONTRACT.format(workers=workers, wall=wall, max_parallel=MAX_PARALLEL))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workers command benchmark: baseline")


def true_gain(root: Path, commit: str) -> float:
    """sum(params) of params.toml at `commit` (the baseline's is 0): the gain without noise."""
    text = subprocess.run(["git", "show", f"{commit}:params.toml"], cwd=root, capture_output=True, text=True,
                          check=True).stdout
    return float(sum(tomllib.loads(text).values()))


def gain_times(root: Path, events: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(seconds since run.started, true gain) at each champion.promoted, in ledger order."""
    t0 = dt.datetime.fromisoformat(next(e["ts"] for e in events if e["kind"] == "run.started"))
    return [((dt.datetime.fromisoformat(e["ts"]) - t0).total_seconds(), true_gain(root, e["data"]["commit"]))
            for e in events if e["kind"] == "champion.promoted"]


def scancel_run(root: Path) -> None:
    """Cancel any job the project's runs left on the cluster (a failed run must leave none): by the job
    name each run's `run.started` recorded (`job_token`), never another run's jobs."""
    for path in (root / ".ratchet" / "runs").glob("*/events.jsonl"):
        first = json.loads(path.read_text().splitlines()[0])
        token = first["data"].get("job_token") if first["kind"] == "run.started" else None
        if token:
            subprocess.run(["scancel", f"--name={token}"], capture_output=True, check=False)


def one_run(workers: int, wall: str) -> dict[str, Any]:
    """One campaign at `workers` workers: its figures."""
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-wcmd-") as tmp:
        root = Path(tmp) / "p"
        make_project(root, workers, wall)
        start = time.perf_counter()
        proc = subprocess.run([str(RATCHET), "run", str(root), "--json"], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        try:
            envelope = json.loads(proc.stdout)
        except json.JSONDecodeError:
            envelope = {"ok": False, "error": proc.stdout[-2000:]}
        if not envelope.get("ok"):
            scancel_run(root)
            raise SystemExit(f"ratchet run failed: {envelope.get('error')}\n{proc.stderr[-2000:]}")
        r = envelope["result"]
        path = root / ".ratchet" / "runs" / r["run_id"] / "events.jsonl"
        events = [json.loads(line) for line in path.read_text().splitlines()]
        gains = gain_times(root, events)
    units = sum(e["data"].get("units_charged") or 0 for e in events if e["kind"] == "job.finished")
    started = [e["data"] for e in events if e["kind"] == "attempt.started"]
    judged = [e["data"] for e in events if e["kind"] == "trial.judged" and e["data"].get("stage") == "trial"]
    return {"workers": workers, "wall": elapsed, "attempts": len(started), "units": units,
            "promotions": r["promotions"], "stale": sum(1 for j in judged if j.get("reason") == "stale"),
            "rebases": sum(1 for s in started if s.get("rebases") is not None), "gains": gains,
            "gain": gains[-1][1] if gains else 0.0, "first": gains[0][0] if gains else None,
            "idle": idle_share(events, MAX_PARALLEL), "stop": r["stop_reason"], "budget": r.get("budget")}


def time_to(gains: list[tuple[float, float]], gain: float) -> float | None:
    """Seconds from the run's start to the first promotion whose true gain is at least `gain`."""
    return next((t for t, g in gains if g >= gain), None)


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--wall", default="3m", help="budget.max_wall of every run (the holdout runs after it)")
    parser.add_argument("--quick", action="store_true", help="workers 1 and 2, max_wall 60s (a smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.workers, args.wall = [1, 2], "60s"
    name = "workers_command" + ("-quick" if args.quick else "")
    title = "Workers: a scripted command agent on Slurm at agent.workers = " + ", ".join(map(str, args.workers))
    problem = cluster_problem()
    if problem is not None:
        save(name, title, f"Not measured: {problem}.\n")
        return
    runs = [one_run(n, args.wall) for n in args.workers]
    reference = runs[0]["gain"]
    base_time = time_to(runs[0]["gains"], reference)
    rows = []
    for m in runs:
        reached = time_to(m["gains"], reference) if reference > 0 else None
        ratio = None if reached is None or not base_time else reached / base_time
        rows.append([str(m["workers"]), f"{m['wall']:.0f}", str(m["attempts"]), str(m["units"]),
                     str(m["promotions"]), str(m["stale"]), str(m["rebases"]), f"{m['gain']:.0f}",
                     fmt(m["first"]), fmt(reached) + ("" if ratio is None else f" ({ratio:.2f}x)"),
                     fmt(None if m["idle"] is None else 100 * m["idle"]) + ("" if m["idle"] is None else "%"),
                     m["stop"] + (f" ({m['budget']})" if m["budget"] else "")])
    at4 = next((r for r, m in zip(rows, runs, strict=True) if m["workers"] == 4), None)
    target = (f"Target: at N = 4 the time to N={args.workers[0]}'s final true gain <= {TARGET_RATIO}x "
              f"N={args.workers[0]}'s" + ("" if at4 is None else f"; measured: {at4[9]}") + ".\n\n")
    body = (f"A scripted command agent (thinks {THINK_S:g} s per leg, then raises one of {PARAMS} parameters by "
            f"one: a true gain of 1.0 per step) on a fresh project per run; jobs sleep {JOB_S:g} s and score "
            f"sum(params) + N(0, {NOISE_SD}); `budget.max_wall = \"{args.wall}\"` (the holdout runs after it), "
            f"`compute.backend = \"slurm\"`, `max_parallel = {MAX_PARALLEL}`, gate units [6, 12] at "
            "`gate.multiplicity = \"trial\"`, confirmation off, cache off, sandbox none; only `agent.workers` "
            "changes. Wall: the `ratchet run` process. "
            "Job-units: every job charged (preflight and holdout included). Stale: attempts ended `stale` "
            "(their change conflicted with a promotion). Re-bases: attempts re-measuring an accepted "
            "candidate that lost the compare-and-swap. True gain: the final champion's sum(params). First "
            "promotion and time to the reference gain (the first N's final true gain; ratio to its time): "
            "seconds from `run.started` to `champion.promoted`. Idle executor share: 1 - job-seconds / "
            f"(seconds from the first attempt's start to the last verdict x {MAX_PARALLEL}).\n\n"
            + target
            + table(["workers", "wall (s)", "attempts", "job-units", "promotions", "stale", "re-bases",
                     "true gain", "first promotion (s)", f"time to gain {reference:.0f} (s)", "idle executor",
                     "stop"], rows))
    save(name, title, body)


if __name__ == "__main__":
    main()
