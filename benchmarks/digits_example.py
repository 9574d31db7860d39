"""The real example: one campaign of the bundled digits example (an SVM on scikit-learn's digits).

Copies examples/digits to a temporary directory, makes it a git repository with one commit, runs
`ratchet run DIR --json` and then `ratchet status RUN --dir DIR --json`, and reports what the run
promoted, the holdout gain with its interval, the job-units spent and the wall time. The contract
is the example's own (gate.units [8, 16, 32], confirmation on, max_attempts 10, max_wall 2m); with
--quick, max_attempts is cut to 2 (a smoke test: the numbers then mean little).

    python benchmarks/digits_example.py [--quick]
"""

from __future__ import annotations

import argparse
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
    subprocess.run(
        ["git", "-c", "user.name=Ratchet bench", "-c", "user.email=bench@localhost", *args],
        cwd=repo,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def run_json(*args: str) -> tuple[dict[str, Any], float, float]:
    """(the --json envelope, wall seconds, peak RSS MiB of the ratchet process) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(RATCHET), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - start
    # communicate() reaped the child; its rusage is in RUSAGE_CHILDREN (the largest child so far).
    import resource

    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return json.loads(stdout), wall, rss


def fmt(x: Any, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="max_attempts 2 (smoke test)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-digits-") as tmp:
        project = Path(tmp) / "digits"
        shutil.copytree(REPO / "examples" / "digits", project)
        if args.quick:
            contract = project / "ratchet.toml"
            contract.write_text(re.sub(r"(?m)^max_attempts = \d+", "max_attempts = 2", contract.read_text()))
        git(project, "init", "-q", "-b", "main")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", "digits example: baseline")
        run, wall, rss = run_json("run", str(project), "--json")
        if not run.get("ok"):
            raise SystemExit(f"ratchet run failed: {run.get('error')}")
        r = run["result"]
        status, status_wall, _ = run_json("status", r["run_id"], "--dir", str(project), "--json")
        s = status["result"]
        events = project / ".ratchet" / "runs" / r["run_id"] / "events.jsonl"
        sandbox = json.loads(events.read_text().splitlines()[0])["data"].get("sandbox")
    h = r.get("holdout") or {}
    used = s["budget"]["used"]
    interval = h.get("interval")
    summary = [
        ["stop reason", f"{r['stop_reason']}" + (f" ({r['budget']})" if r.get("budget") else "")],
        ["attempts", str(used["attempts"])],
        ["promotions", f"**{r['promotions']}**"],
        [
            "holdout gain (accuracy, final champion - baseline)",
            f"**{fmt(h.get('estimate'))}** [{fmt(interval[0])}, {fmt(interval[1])}], "
            f"p = {h.get('p_value', 0):.2g}, "
            f"{h.get('units')} units"
            if interval
            else "- (nothing promoted: no holdout)",
        ],
        ["job-units (both variants, confirmation and holdout included)", f"**{used['evaluations']}**"],
        ["wall time, ledger (run.started to the last event)", f"{used['wall_s']:.0f} s"],
        ["wall time, `ratchet run` process", f"**{wall:.0f} s**"],
        [
            "CPU hours of jobs, as recorded (under bwrap: each job's wall time on one core)",
            f"{used['cpu_hours']:.4f}",
        ],
        ["peak RSS of `ratchet run` (MiB)", f"{rss:.0f}"],
        [
            "`ratchet status --json` afterwards",
            f"{status_wall * 1000:.0f} ms ({s.get('ledger', {}).get('state_from', '?')})",
        ],
    ]
    attempts = [
        [
            str(a["attempt"]),
            a.get("summary") or "",
            str(a["verdict"]),
            str(a["reason"]),
            fmt(a["estimate"]),
            fmt(a["p_value"], 3) if a["p_value"] is not None else "-",
            fmt(a.get("level"), 5),
            str(a["units"]),
            fmt((a.get("confirm") or {}).get("estimate")),
        ]
        for a in s["attempts"]
    ]
    body = (
        "`ratchet run DIR --json` on a fresh copy of examples/digits (one git "
        f"commit){' with max_attempts 2 (--quick)' if args.quick else ''}; "
        "the contract's gate: units [8, 16, 32], confirmation "
        "on, `campaign` multiplicity at alpha 0.05 over "
        "max_attempts; budget max_wall 2m (the holdout runs after "
        f"it). Jobs ran under sandbox `{sandbox}`.\n\n"
        + table(["", "value"], summary, "ll")
        + "\n## Attempts (`ratchet status --json`)\n\n"
        + table(
            [
                "#",
                "candidate",
                "verdict",
                "reason",
                "estimate",
                "p",
                "level",
                "units",
                "confirmation estimate",
            ],
            attempts,
            "llllrrrrr",
        )
    )
    save("digits_example" + ("-quick" if args.quick else ""), "The digits example, run once", body)


if __name__ == "__main__":
    main()
