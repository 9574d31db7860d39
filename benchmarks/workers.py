"""Several attempts at once: the search agent on the bundled digits example at agent.workers = 1, 2, 4.

Each run copies examples/digits to a temporary git repository, sets `agent.workers` and a fixed wall
budget (the same for every N, and the same `compute.max_parallel`), runs `ratchet run DIR --json`,
and reads the ledger: wall seconds of the process, job-units, promotions, the holdout gain and the
idle executor share (1 - job-seconds / (wall of the attempts x max_parallel): how much of the
executor's capacity no job used between the first attempt's start and the last verdict).

    python benchmarks/workers.py [--workers 1 2 4] [--wall 3m] [--max-parallel 2] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, REPO, save, table  # noqa: E402

RATCHET = PYTHON.parent / "ratchet"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Ratchet bench", "-c", "user.email=bench@localhost", *args],
                   cwd=repo, check=True, stdout=subprocess.DEVNULL)


def idle_share(events: list[dict[str, Any]], max_parallel: int) -> float | None:
    """1 - (seconds jobs ran) / (seconds from the first attempt.started to the last trial.judged of
    an attempt, x max_parallel); None when no attempt was judged."""
    ts = [dt.datetime.fromisoformat(e["ts"]) for e in events if e["kind"] == "attempt.started"]
    ends = [dt.datetime.fromisoformat(e["ts"]) for e in events
            if e["kind"] == "trial.judged" and e["data"].get("attempt", 0) > 0]
    if not ts or not ends:
        return None
    span = (max(ends) - min(ts)).total_seconds()
    busy = sum(e["data"].get("elapsed_s") or 0.0 for e in events if e["kind"] == "job.finished"
               and e["data"].get("stage") not in ("preflight", "holdout") and not e["data"].get("cached"))
    return max(0.0, 1.0 - busy / (span * max_parallel)) if span > 0 else None


def one_run(workers: int, wall: str, max_parallel: int) -> dict[str, Any]:
    """One campaign of the digits example with `workers` workers: its figures."""
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-workers-") as tmp:
        project = Path(tmp) / "digits"
        shutil.copytree(REPO / "examples" / "digits", project)
        contract = project / "ratchet.toml"
        text = contract.read_text()
        text = text.replace('kind = "search"', f'kind = "search"\nworkers = {workers}', 1)
        text = re.sub(r'(?m)^max_wall = .*$', f'max_wall = "{wall}"', text)
        text = re.sub(r"(?m)^max_attempts = \d+", "max_attempts = 40", text)
        text = re.sub(r"(?m)^cache = true", "cache = false", text)
        if "[compute]" in text:
            text = re.sub(r"(?m)^max_parallel = \d+", f"max_parallel = {max_parallel}", text)
        else:
            text += f"\n[compute]\nmax_parallel = {max_parallel}\n"
        contract.write_text(text)
        git(project, "init", "-q", "-b", "main")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "digits example: baseline")
        start = time.perf_counter()
        proc = subprocess.run([str(RATCHET), "run", str(project), "--json"], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        envelope = json.loads(proc.stdout)
        if not envelope.get("ok"):
            raise SystemExit(f"ratchet run failed: {envelope.get('error')}\n{proc.stderr[-2000:]}")
        r = envelope["result"]
        path = project / ".ratchet" / "runs" / r["run_id"] / "events.jsonl"
        events = [json.loads(line) for line in path.read_text().splitlines()]
    units = sum(e["data"].get("units_charged") or 0 for e in events if e["kind"] == "job.finished")
    attempts = sum(1 for e in events if e["kind"] == "attempt.started")
    h = r.get("holdout") or {}
    return {"workers": workers, "wall": elapsed, "attempts": attempts, "units": units, "promotions": r["promotions"],
            "gain": h.get("estimate"), "idle": idle_share(events, max_parallel), "stop": r["stop_reason"],
            "budget": r.get("budget")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--wall", default="3m", help="budget.max_wall of every run (the holdout runs after it)")
    parser.add_argument("--max-parallel", type=int, default=2, help="compute.max_parallel of every run")
    parser.add_argument("--quick", action="store_true", help="workers 1 and 2, max_wall 1m (a smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.workers, args.wall = [1, 2], "1m"
    rows = []
    for n in args.workers:
        m = one_run(n, args.wall, args.max_parallel)
        rows.append([str(n), f"{m['wall']:.0f}", str(m["attempts"]), str(m["units"]), str(m["promotions"]),
                     "-" if m["gain"] is None else f"{m['gain']:.4f}",
                     "-" if m["idle"] is None else f"{100 * m['idle']:.0f}%",
                     m["stop"] + (f" ({m['budget']})" if m["budget"] else "")])
    body = (f"The search agent on a fresh copy of examples/digits, `budget.max_wall = \"{args.wall}\"` (the "
            f"holdout runs after it), `compute.max_parallel = {args.max_parallel}`, the example's gate (units "
            "[8, 16, 32], confirmation on), measurement cache off; only `agent.workers` changes. Wall: the "
            "`ratchet run` process. Job-units: every job charged (preflight, confirmation and holdout included). "
            "Gain: the holdout's (final champion - baseline, accuracy). Idle executor share: 1 - job-seconds / "
            "(seconds from the first attempt's start to the last verdict x max_parallel).\n\n"
            + table(["workers", "wall (s)", "attempts", "job-units", "promotions", "holdout gain", "idle executor",
                     "stop"], rows))
    save("workers" + ("-quick" if args.quick else ""), "Workers: the search agent on digits at agent.workers = 1, 2, 4",
         body)


if __name__ == "__main__":
    main()
