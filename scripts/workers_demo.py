"""A moving champion, shown live: a real `ratchet run` with `agent.workers = 3` of scripted command
agents on the Slurm cluster, timed so that one attempt ends `stale` and one accepted attempt loses
the compare-and-swap and is re-measured re-based (docs/workers.md, "A moving champion").

The three workers start attempts 1, 2 and 3 on the baseline together; the scripted agent (no model)
reads its attempt number from its prompt:

- attempt 1 thinks 2 s, sets `x = 1` in params.toml: accepted first, promoted;
- attempt 2 thinks 35 s (longer than attempt 1's trial, about 16 s on a loaded two-core machine),
  sets `x = 2` on the same line: when it submits, attempt 1 is the champion and the three-way
  re-base conflicts in params.toml: `rejected (stale)`, no job run (were its trial to start first,
  its accepted change would lose the compare-and-swap and its re-base attempt would end `stale`);
- attempt 3 thinks 5 s, sets `y = 1` in y.toml (another file in scope): its trial runs beside
  attempt 1's and is accepted after attempt 1 was promoted, so the compare-and-swap fails and its
  worker starts a re-base attempt (`rebases 3`), which is measured against the new champion and
  promoted;
- any later attempt thinks 20 s and exits with no change (so no worker uses up `budget.max_attempts
  = 6` before the re-base attempt starts).

Jobs take 1 s and score x + y (+ small noise); gate units [6, 12], confirmation off, cache off,
sandbox none, `compute.max_parallel = 6` (each worker's array at most 2 tasks at once). The script
prints `ratchet watch --once` while attempts are in flight, then what `ratchet run` printed (its
verdict lines), `ratchet status`, and whether the ledger shows the stale verdict and the re-base
measured. Exit 0 when both were seen, 1 when not; the run's jobs are cancelled if it fails.

    .venv/bin/python scripts/workers_demo.py [--keep DIR]

Needs a reachable Slurm cluster (`make slurm-up`). About a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RATCHET = Path(sys.executable).parent / "ratchet"
WATCH_TIMEOUT_S = 120.0
"""Seconds to wait for three attempts to be in flight before giving up on the mid-run frame."""
RUN_TIMEOUT_S = 600.0
"""Seconds the whole run may take before the demo stops it (SIGINT) and fails."""

BENCH = """\
import json, os, random, time, tomllib
def value(path, key):
    with open(path, "rb") as f:
        return float(tomllib.load(f)[key])
x, y = value("params.toml", "x"), value("y.toml", "y")
time.sleep(1.0)
seed = int(os.environ.get("RATCHET_SEED", "0"))
print(json.dumps({"score": x + y + random.Random(f"{seed}-{x}-{y}").gauss(0.0, 0.05)}))
"""

BOT = """\
\"\"\"Scripted command agent of the workers demo: its change and its thinking time by attempt number.\"\"\"
import re, sys, time
found = re.match(r"# Ratchet, attempt (\\d+)", open(sys.argv[1]).read())
if found is None:  # a reminder: one change per session
    sys.exit(0)
attempt = int(found.group(1))
PLAN = {1: (2, "params.toml", "x = 1"), 2: (35, "params.toml", "x = 2"), 3: (5, "y.toml", "y = 1")}
think, path, line = PLAN.get(attempt, (20, None, None))
time.sleep(think)
if path is None:
    print(f"bot: attempt {attempt}: nothing more to try")
    sys.exit(0)
open(path, "w").write(line + "\\n")
open("REPORT.md", "w").write(f"# {path}: {line}\\n\\nHypothesis: the score grows with it.\\n")
print(f"bot: attempt {attempt}: {path}: {line} (after {think} s)")
"""

CONTRACT = """\
[campaign]
name = "workers-demo"
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
allowed = ["params.toml", "y.toml"]
protected = ["bench.py", "agent/"]
hidden = []

[agent]
kind = "command"
workers = 3
[agent.command]
command = "python3 agent/bot.py {prompt}"
timeout_s = 60
max_submits = 1

[gate]
alpha = 0.05
multiplicity = "trial"
units = [6, 12]
confirm = false
holdout_units = 6

[budget]
max_attempts = 6
max_wall = "5m"

[compute]
backend = "slurm"
max_parallel = 6
[compute.slurm]
poll_min_s = 0.2
poll_max_s = 2.0

[sandbox]
mode = "none"
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Ratchet demo", "-c", "user.email=demo@localhost", *args], cwd=root,
                   check=True, stdout=subprocess.DEVNULL)


def make_project(root: Path) -> None:
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "bot.py").write_text(BOT)
    (root / "bench.py").write_text(BENCH)
    (root / "params.toml").write_text("x = 0\n")
    (root / "y.toml").write_text("y = 0\n")
    (root / "ratchet.toml").write_text(CONTRACT)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "workers demo: baseline")


def ledger(root: Path) -> list[dict[str, Any]]:
    """The events of the project's one run so far ([] before it is created)."""
    paths = list((root / ".ratchet" / "runs").glob("*/events.jsonl"))
    if not paths:
        return []
    return [json.loads(line) for line in paths[0].read_text().splitlines() if line.endswith("}")]


def in_flight(events: list[dict[str, Any]]) -> set[int]:
    started = {e["data"]["attempt"] for e in events if e["kind"] == "attempt.started"}
    ended = {e["data"]["attempt"] for e in events if e["kind"] in ("trial.judged", "attempt.gave_up")
             and e["data"].get("stage", "trial") == "trial"}
    return started - ended


def show(title: str, argv: list[str]) -> None:
    print(f"\n===== {title}: {' '.join(argv[1:])}", flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "COLUMNS": "150"})
    print(proc.stdout.rstrip() or proc.stderr.rstrip(), flush=True)


def scancel_run(root: Path) -> None:
    """Cancel any job the run left on the cluster, by the job name its `run.started` recorded."""
    events = ledger(root)
    token = events[0]["data"].get("job_token") if events else None
    if token:
        subprocess.run(["scancel", f"--name={token}"], capture_output=True, check=False)


def watch_mid_run(root: Path, proc: subprocess.Popen[bytes]) -> None:
    """Print one `ratchet watch` frame once attempts 1-3 are started and at least 2 submitted."""
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        events = ledger(root)
        submitted = {e["data"]["attempt"] for e in events if e["kind"] == "attempt.submitted"}
        if {1, 2, 3} <= in_flight(events) and len(submitted) >= 2:
            show("mid-run, attempts 1, 2, 3 in flight", [str(RATCHET), "watch", "--once", "--dir", str(root)])
            return
        time.sleep(0.3)
    print("\n(no moment with attempts 1, 2 and 3 in flight and two submitted was seen)", flush=True)


def findings(root: Path) -> tuple[list[int], list[tuple[int, int]]]:
    """(attempts ended stale, (re-base attempt, the attempt it re-measures) pairs measured in a trial)."""
    events = ledger(root)
    stale = [e["data"]["attempt"] for e in events if e["kind"] == "trial.judged"
             and e["data"]["stage"] == "trial" and e["data"]["reason"] == "stale"]
    planned = {e["data"]["attempt"] for e in events if e["kind"] == "trial.planned" and e["data"]["stage"] == "trial"}
    rebased = [(e["data"]["attempt"], e["data"]["rebases"]) for e in events if e["kind"] == "attempt.started"
               and e["data"].get("rebases") is not None and e["data"]["attempt"] in planned]
    return stale, rebased


def demo(root: Path) -> int:
    make_project(root)
    log = root.parent / "run.out"
    print(f"project: {root}", flush=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(RATCHET), "run", str(root)], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "COLUMNS": "150"})
        try:
            watch_mid_run(root, proc)
            proc.wait(timeout=RUN_TIMEOUT_S)
        except BaseException:
            proc.send_signal(2)
            proc.wait(timeout=120)
            scancel_run(root)
            raise
    print("\n===== what `ratchet run` printed", flush=True)
    print(log.read_text().rstrip(), flush=True)
    show("final status", [str(RATCHET), "status", "--dir", str(root)])
    if proc.returncode != 0:
        scancel_run(root)
        print(f"\nratchet run exited {proc.returncode}")
        return 1
    stale, rebased = findings(root)
    print(f"\nstale attempts: {stale or 'none'}; re-base attempts measured (attempt, re-measures): "
          f"{rebased or 'none'}")
    return 0 if stale and rebased else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the project in this (new) directory and keep it")
    args = parser.parse_args()
    if shutil.which("sbatch") is None:
        raise SystemExit("no Slurm client commands (run `make slurm-up`)")
    if args.keep:
        args.keep.mkdir(parents=True)
        sys.exit(demo(args.keep / "project"))
    with tempfile.TemporaryDirectory(prefix="ratchet-workers-demo-") as tmp:
        sys.exit(demo(Path(tmp) / "project"))


if __name__ == "__main__":
    main()
