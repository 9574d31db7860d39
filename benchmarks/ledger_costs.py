"""Ledger costs: append and replay of 100,000 events, and `ratchet status --json` on such a run.

- append: ratchet.ledger.events.EventLog.append, one event at a time as the kernel does (canonical
  encoding, the read-back check, one os.write and one fsync per event). On the disk the run
  directory normally lives on, the rate is bound by fsync latency, so it is measured on a sample
  (APPEND_DISK_SAMPLE events); the full 100,000 are appended on tmpfs (/dev/shm), where fsync
  returns at once and the rate is the CPU cost of the ledger code itself.
- replay: read_events (every line parsed and verified: canonical form, seq, the hash chain) and
  fold (the pure reducer) over the 100,000-event file.
- status: `.venv/bin/ratchet status RUN --dir PROJECT --json` as a subprocess, interpreter start
  included, on a run directory holding the 100,000 events and a contract.toml copy (what status
  reads). Median of STATUS_REPEATS runs; the same on a 1,000-event run shows the fixed start cost.
- watch: one `ratchet watch` frame in process (commands.watch.read_frame, then
  present.watch.render_frame drawn on an 80-column console) on the same 100,000-event run, index in
  step: median of WATCH_REPEATS frames after the first (the first, which imports and warms up, is
  shown apart).
- peak memory: ru_maxrss of a fresh process doing only that one thing.

The event mix follows a search campaign with gate.units (10, 20, 40) and confirmation: per attempt
attempt.started, attempt.submitted, trial.planned, job.started/job.finished per variant x unit
(futility at look 1 for about half the trials), trial.judged; about one trial in twenty is
accepted and adds a confirmation stage and champion.promoted. job.* events are ~97% of the lines.

    python benchmarks/ledger_costs.py [--events 100000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, REPO, peak_rss_mb, save, table  # noqa: E402

EVENTS = 100_000
APPEND_DISK_SAMPLE = 2_000
STATUS_REPEATS = 5
LOOKS = (10, 20, 40)
RUN_ID = "20260101-000000-bench"
START_S = 1_767_225_600.0  # 2026-01-01T00:00:00Z: event timestamps advance from here
TARGET_REPLAY_EPS = 50_000
TARGET_STATUS_MS = 500.0
WATCH_REPEATS = 5
TARGET_WATCH_MS = 1000.0


def _hex(rng: random.Random, n: int = 64) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _ts(seconds: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(START_S + seconds, dt.UTC).isoformat().replace("+00:00", "Z")


def realistic_events(n_events: int, seed: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, data) pairs of a plausible campaign, `n_events` in all, ending with run.stopped.

    The data carry the keys the kernel writes (campaign.py, measure.py, gate.Decision.to_json).
    """
    rng = random.Random(seed)
    emitted = 0

    def emit(kind: str, data: dict[str, Any]):
        nonlocal emitted
        emitted += 1
        return kind, data

    yield emit(
        "run.started",
        {
            "run_id": RUN_ID,
            "contract_digest": "sha256:" + _hex(rng),
            "baseline": {"commit": _hex(rng, 40), "tree": _hex(rng, 40)},
            "salt": _hex(rng, 32),
            "sandbox": "bwrap",
            "target_kind": "benchmark",
            "direction": "max",
            "limits": {
                "max_attempts": 100_000,
                "max_cpu_hours": 0,
                "max_evaluations": 0,
                "max_gpu_hours": 0,
                "max_val_trials": 0,
                "max_wall_s": 0,
            },
            "holdout_reserve": 80,
        },
    )
    attempt, trial = 0, 0
    while True:
        attempt += 1
        trial += 1
        stages = ["trial"]
        stop_look = rng.choices([0, 1, 2], weights=[50, 25, 25])[0]
        accepted = rng.random() < 0.05
        if accepted:
            stages.append("confirm")
        need = 4 + sum(4 * LOOKS[stop_look] for _ in stages) + 2 * len(stages) + 2
        if emitted + need >= n_events:
            break
        yield emit("attempt.started", {"attempt": attempt})
        params = {"C": rng.uniform(0.01, 1000), "gamma": rng.uniform(1e-5, 0.1), "kernel": "rbf"}
        yield emit(
            "attempt.submitted",
            {
                "attempt": attempt,
                "tree": _hex(rng, 40),
                "summary": f"C={params['C']:.4g}, gamma={params['gamma']:.4g}",
                "report_blob": "sha256:" + _hex(rng),
                "params": params,
            },
        )
        level = 0.05 / 5.187 / trial
        for stage in stages:
            looks = list(LOOKS) if stage == "trial" else [LOOKS[stop_look]]
            yield emit(
                "trial.planned",
                {
                    "attempt": attempt,
                    "trial": trial,
                    "stage": stage,
                    "plan_digest": "sha256:" + _hex(rng),
                    "plan_blob": "sha256:" + _hex(rng),
                    "level": level,
                    "looks": looks,
                    "jobs": 2 * looks[-1],
                },
            )
            for unit in range(LOOKS[stop_look]):
                jobs = [f"a{attempt:04d}-{stage}-u{unit:03d}-{v}" for v in ("champion", "candidate")]
                rng.shuffle(jobs)
                for job_id in jobs:
                    yield emit(
                        "job.started",
                        {
                            "job_id": job_id,
                            "attempt": attempt,
                            "stage": stage,
                            "variant": job_id.rsplit("-", 1)[1],
                            "unit": unit,
                            "pid": rng.randint(1000, 4_000_000),
                        },
                    )
                for job_id in jobs:
                    value = rng.uniform(0.85, 0.97)
                    yield emit(
                        "job.finished",
                        {
                            "job_id": job_id,
                            "attempt": attempt,
                            "stage": stage,
                            "variant": job_id.rsplit("-", 1)[1],
                            "unit": unit,
                            "seed": rng.randint(0, 2**31 - 1),
                            "state": "ok",
                            "value": value,
                            "reason": f"accuracy = {value}",
                            "elapsed_s": rng.uniform(0.5, 2.0),
                            "cpu_s": rng.uniform(0.001, 0.01),
                            "cached": False,
                            "units_charged": 1,
                        },
                    )
            ok = stage == "confirm" or accepted
            estimate = rng.uniform(0.001, 0.02) if ok else rng.uniform(-0.02, 0.002)
            yield emit(
                "trial.judged",
                {
                    "attempt": attempt,
                    "stage": stage,
                    "verdict": "accepted" if ok else "rejected",
                    "reason": "significant_gain"
                    if ok
                    else ("futility" if stop_look < 2 else "not_significant"),
                    "reason_text": f"Mean gain {estimate:+.4g} ... at look {stop_look + 1} of {len(looks)}.",
                    "estimate": estimate,
                    "interval": [estimate - 0.01, estimate + 0.01],
                    "p_value": rng.random() * (0.001 if ok else 1.0),
                    "threshold": level / 3,
                    "units": LOOKS[stop_look],
                    "look": stop_look if stage == "trial" else 0,
                    "level": level,
                    "retry_units": [],
                    "champion_mean": 0.9,
                    "candidate_mean": 0.9 + estimate,
                    "champion_lcb": 0.89,
                    "candidate_lcb": 0.89,
                },
            )
        if accepted:
            yield emit(
                "champion.promoted",
                {
                    "attempt": attempt,
                    "commit": _hex(rng, 40),
                    "tree": _hex(rng, 40),
                    "estimate": 0.01,
                    "interval": [0.001, 0.02],
                    "mean": 0.91,
                    "lcb": 0.9,
                    "branch": f"ratchet/{RUN_ID}/champion",
                },
            )
    launch = 0
    while emitted < n_events - 1:  # pad with an agent's own experiments up to the exact count
        launch += 1
        yield emit("agent.launched", {"attempt": attempt - 1, "launch": launch, "jobs": [f"probe-{launch}"],
                                      "note": "probe"})
    yield emit("run.stopped", {"stop_reason": "budget_exhausted", "budget": "max_attempts", "detail": None})


# -- child processes: one measurement each, so ru_maxrss is that measurement's own peak ------------


def child_append(path: str, n: int) -> dict[str, Any]:
    from ratchet.ledger.events import EventLog

    pairs = list(realistic_events(n))
    log = EventLog.open(path)
    start = time.perf_counter()
    for i, (kind, data) in enumerate(pairs):
        log.append(kind, data, _ts(i * 0.5))  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    log.close()
    return {"events": n, "seconds": elapsed, "kinds": Counter(k for k, _ in pairs), "rss_mb": peak_rss_mb()}


def child_replay(path: str) -> dict[str, Any]:
    from ratchet.core.state import fold
    from ratchet.ledger.events import read_events

    start = time.perf_counter()
    events = read_events(path)
    read_s = time.perf_counter() - start
    state = fold(events)
    total = time.perf_counter() - start
    assert state.last_seq == len(events) - 1
    return {
        "events": len(events),
        "read_s": read_s,
        "fold_s": total - read_s,
        "seconds": total,
        "rss_mb": peak_rss_mb(),
    }


def child_index(path: str, index_path: str) -> dict[str, Any]:
    """Build the run's index.sqlite as a kernel does when it opens a run (Index.sync)."""
    from ratchet.ledger.events import read_events
    from ratchet.ledger.index import Index

    events = read_events(path)
    start = time.perf_counter()
    with Index(index_path) as index:
        index.sync(events)
    return {"events": len(events), "seconds": time.perf_counter() - start, "rss_mb": peak_rss_mb()}


def child_watch(project: str) -> dict[str, Any]:
    """Frames of `ratchet watch` on the run in `project`, in this process: read, then draw."""
    import io

    from rich.console import Console

    from ratchet.commands.watch import read_frame
    from ratchet.present.watch import render_frame

    walls = []
    for _ in range(WATCH_REPEATS + 1):
        start = time.perf_counter()
        frame = read_frame(Path(project), RUN_ID)
        Console(file=io.StringIO(), width=80).print(render_frame(frame))
        walls.append((time.perf_counter() - start) * 1000)
    assert frame["ledger"]["state_from"] == "index", frame["ledger"]
    return {"first_ms": walls[0], "median_ms": statistics.median(walls[1:]), "attempts": frame["attempts"],
            "rss_mb": peak_rss_mb()}


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [str(PYTHON), __file__, "--child", *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


# -- status ------------------------------------------------------------------------------------


def make_project(root: Path, events_file: Path, index_file: Path | None) -> Path:
    """A project directory with one run holding `events_file`, a contract.toml copy and, when
    given, the index.sqlite a kernel keeps in step with the ledger."""
    run = root / ".ratchet" / "runs" / RUN_ID
    run.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "digits" / "ratchet.toml", root / "ratchet.toml")
    shutil.copy(REPO / "examples" / "digits" / "ratchet.toml", run / "contract.toml")
    shutil.copy(events_file, run / "events.jsonl")
    if index_file is not None:
        shutil.copy(index_file, run / "index.sqlite")
    return root


def time_status(project: Path, repeats: int) -> tuple[float, float, dict[str, Any]]:
    """(median wall ms, peak RSS MiB, parsed result) of `ratchet status RUN --dir project --json`."""
    ratchet = PYTHON.parent / "ratchet"
    walls, rss, result = [], [], {}
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [str(ratchet), "status", RUN_ID, "--dir", str(project), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        stdout = proc.stdout.read()  # type: ignore[union-attr]
        proc.stderr.read()  # type: ignore[union-attr]
        _, code, usage = os.wait4(proc.pid, 0)
        walls.append((time.perf_counter() - start) * 1000)
        proc.returncode = os.waitstatus_to_exitcode(code)
        rss.append(usage.ru_maxrss / 1024)
        result = json.loads(stdout)
        if not result.get("ok"):
            raise SystemExit(f"status failed: {result.get('error')}")
    return statistics.median(walls), max(rss), result["result"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--quick", action="store_true", help="10,000 events, fewer repeats")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        if what == "append":
            result = child_append(rest[0], int(rest[1]))
        elif what == "index":
            result = child_index(rest[0], rest[1])
        elif what == "watch":
            result = child_watch(rest[0])
        else:
            result = child_replay(rest[0])
        print(json.dumps(result))
        return
    n = 10_000 if args.quick else args.events
    sample = min(APPEND_DISK_SAMPLE, n) // (4 if args.quick else 1)
    repeats = 2 if args.quick else STATUS_REPEATS
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with (
        tempfile.TemporaryDirectory(prefix="ratchet-bench-ledger-") as disk_tmp,
        tempfile.TemporaryDirectory(prefix="ratchet-bench-ledger-", dir=shm) as mem_tmp,
    ):
        disk, mem = Path(disk_tmp), Path(mem_tmp)
        on_disk = _child("append", str(disk / "sample.jsonl"), str(sample))
        in_mem = _child("append", str(mem / "events.jsonl"), str(n))
        replay = _child("replay", str(mem / "events.jsonl"))
        index = _child("index", str(mem / "events.jsonl"), str(mem / "index.sqlite"))
        _child("append", str(mem / "small.jsonl"), "1000")
        _child("index", str(mem / "small.jsonl"), str(mem / "small.sqlite"))
        status = {
            "indexed": time_status(
                make_project(disk / "big", mem / "events.jsonl", mem / "index.sqlite"), repeats
            ),
            "full": time_status(
                make_project(disk / "noindex", mem / "events.jsonl", None), max(1, repeats // 2)
            ),
            "small": time_status(
                make_project(disk / "small", mem / "small.jsonl", mem / "small.sqlite"), repeats
            ),
        }
        watch = _child("watch", str(disk / "big"))
        size_mb = (mem / "events.jsonl").stat().st_size / 2**20
        pass_ms = python_pass_ms(repeats * 2)
    same = {k: v for k, v in status["indexed"][2].items() if k != "ledger"} == {
        k: v for k, v in status["full"][2].items() if k != "ledger"
    }
    if not same:
        raise SystemExit("status read from the index differs from status folded from the events")
    save(
        "ledger_costs" + ("-quick" if args.quick else ""),
        "Ledger: append, replay, status",
        render(n, sample, repeats, size_mb, on_disk, in_mem, replay, index, status, pass_ms, watch),
    )


def python_pass_ms(repeats: int) -> float:
    """Median wall ms of `python -c pass` (the same interpreter): the unit status is compared with."""
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(PYTHON), "-c", "pass"], check=True)
        walls.append((time.perf_counter() - start) * 1000)
    return statistics.median(walls)


def render(n, sample, repeats, size_mb, on_disk, in_mem, replay, index, status, pass_ms, watch) -> str:
    """The markdown body of the ledger results."""
    kinds = in_mem["kinds"]
    jobs_share = (kinds.get("job.started", 0) + kinds.get("job.finished", 0)) / n
    eps = n / replay["seconds"]
    rows = [
        (
            "append, run directory's disk (fsync per event)",
            f"{sample:,}",
            f"{on_disk['seconds']:.2f}",
            f"{sample / on_disk['seconds']:,.0f}",
            f"{on_disk['rss_mb']:.0f}",
            "-",
        ),
        (
            "append, tmpfs (fsync returns at once: the ledger code's own cost)",
            f"{n:,}",
            f"{in_mem['seconds']:.2f}",
            f"{n / in_mem['seconds']:,.0f}",
            f"{in_mem['rss_mb']:.0f}",
            "-",
        ),
        (
            "**replay: read_events (every line verified) + fold**",
            f"{n:,}",
            f"{replay['seconds']:.2f}",
            f"**{eps:,.0f}**",
            f"{replay['rss_mb']:.0f}",
            f"{'met' if eps >= TARGET_REPLAY_EPS else 'missed'} (>= {TARGET_REPLAY_EPS:,})",
        ),
        (
            "  of which read_events",
            f"{n:,}",
            f"{replay['read_s']:.2f}",
            f"{n / replay['read_s']:,.0f}",
            "",
            "",
        ),
        ("  of which fold", f"{n:,}", f"{replay['fold_s']:.2f}", f"{n / replay['fold_s']:,.0f}", "", ""),
        (
            "index rebuild (Index.sync on an empty index.sqlite)",
            f"{n:,}",
            f"{index['seconds']:.2f}",
            f"{n / index['seconds']:,.0f}",
            f"{index['rss_mb']:.0f}",
            "-",
        ),
    ]
    big_ms, big_rss, big = status["indexed"]
    full_ms, full_rss, full = status["full"]
    small_ms, small_rss, small = status["small"]
    status_rows = [
        (
            f"**{n:,}, index in step (the normal case)**",
            big["ledger"]["verified"],
            big["ledger"]["state_from"],
            f"**{big_ms:.0f}**",
            f"{big_ms / pass_ms:.1f}x",
            f"{big_rss:.0f}",
            f"{'met' if big_ms < TARGET_STATUS_MS else 'missed'} (< {TARGET_STATUS_MS:.0f} ms)",
        ),
        (
            f"{n:,}, no index (or one out of step)",
            full["ledger"]["verified"],
            full["ledger"]["state_from"],
            f"{full_ms:.0f}",
            f"{full_ms / pass_ms:.1f}x",
            f"{full_rss:.0f}",
            "-",
        ),
        (
            "1,000, index in step (start-up cost)",
            small["ledger"]["verified"],
            small["ledger"]["state_from"],
            f"{small_ms:.0f}",
            f"{small_ms / pass_ms:.1f}x",
            f"{small_rss:.0f}",
            "-",
        ),
    ]
    return (
        f"Events: {n:,} in a realistic mix ({jobs_share:.1%} job.started/job.finished; "
        f"{len(big['attempts']):,} attempts, {big['promotions']} "
        f"promotions), {size_mb:.1f} MiB of events.jsonl.\n"
        f"Targets: replay >= {TARGET_REPLAY_EPS:,} events/s; status under {TARGET_STATUS_MS:.0f} ms.\n\n"
        "## Append, replay, index\n\n"
        + table(["operation", "events", "seconds", "events/s", "peak RSS MiB", "target"], rows)
        + "\n## `ratchet status RUN --dir PROJECT --json` (a subprocess: interpreter start included)\n\n"
        + f"Median of {repeats} runs (the no-index row: of {max(1, repeats // 2)}). Both {n:,}-event rows "
        f"gave the same result (checked). `python -c pass` took {pass_ms:.0f} ms (median of {repeats * 2}) on "
        "this machine in this run: the ratio column divides by it, so a slower or busier machine shows "
        "in both.\n\n"
        + table(
            ["events in the run", "verified", "state from", "wall ms", "x `python -c pass`", "peak RSS MiB",
             "target"], status_rows
        )
        + "\n## One `ratchet watch` frame (in process: read_frame + render_frame, 80 columns)\n\n"
        + table(
            ["events in the run", "first frame ms", f"median of {WATCH_REPEATS} more, ms", "peak RSS MiB", "target"],
            [(f"{n:,}, index in step", f"{watch['first_ms']:.0f}", f"**{watch['median_ms']:.0f}**",
              f"{watch['rss_mb']:.0f}",
              f"{'met' if watch['median_ms'] < TARGET_WATCH_MS else 'missed'} (< {TARGET_WATCH_MS:.0f} ms)")],
        )
        + "\nEvent kinds: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
        + "\n"
    )


if __name__ == "__main__":
    main()
