"""The whole kernel's overhead: a campaign of N fast jobs through `ratchet run` against `xargs -P 2`
running the same commands in the same sandbox.

The project: a small git repository (PROJECT_FILES: 8 files in 3 directories, 20 KiB) whose
benchmark sleeps JOB_S and prints a metric that depends only on the seed (champion and candidate tie
on every unit, so nothing is promoted and no holdout runs), and a `files` agent with one prepared
candidate per attempt (each writes a different `note.txt`, so every tree is new; the candidates
folder is in `scope.hidden`, so no checkout holds it). One look of UNITS units per trial, no
confirmation: each attempt is exactly 2 x UNITS jobs, plus one preflight job. The measurement cache
is on (its writes are part of the cost; the seeds of each trial are fresh, so it never hits).

The baseline runs the same `/bin/sh -c` command the same number of times through `xargs -P 2`, each
under bubblewrap with the argv `compute.sandbox.wrap_argv` builds (when bwrap works here; else both
run bare), in one shared checkout. The runners alternate (xargs, ratchet, xargs, ratchet, ...), each
run a fresh process; the table gives the medians. With --baseline-src DIR, `ratchet run` from DIR/src
(e.g. an export of the previous main) takes its turn in the same rotation: before and after measured
at the same time on the same machine, which matters on a shared one.

Where the time goes: one more `ratchet run` in this process with timers wrapped around the
kernel's steps (checkouts, ledger appends and their fsync, index writes, the cache, state folds,
ledger scans, the gate, the executor's wait). Target: `ratchet run` at most 1.25x xargs + bwrap
for 50 ms jobs.

    python benchmarks/kernel_overhead.py [--attempts 25] [--units 20] [--repeats 3] [--quick]
                                         [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

SRC_ENV = "RATCHET_BENCH_SRC"
"""Set by this script for its child processes: the source tree (`src/`) they import Ratchet from."""
SRC = Path(os.environ.get(SRC_ENV) or Path(__file__).resolve().parents[1] / "src")
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, save, table  # noqa: E402

from ratchet.compute.env import job_env  # noqa: E402
from ratchet.compute.sandbox import probe_bwrap, wrap_argv  # noqa: E402

RATCHET = [str(PYTHON), "-c", f"import sys; sys.path.insert(0, {str(SRC)!r}); sys.argv[0] = 'ratchet'; "
           "from ratchet.cli import main; main()"]
"""`ratchet` from the source tree this script lives in (whatever the venv's install points to)."""
PARALLEL = 2
JOB_S = 0.05
"""Seconds each job sleeps."""
SEED_ENV = "RATCHET_SEED"
COMMAND = f'sleep {JOB_S}; echo "{{\\"score\\": $(( {SEED_ENV} % 997 ))}}"'
"""The benchmark: sleep, then a metric that depends only on the seed."""
TARGET_RATIO = 1.25

CONTRACT = """\
[campaign]
name = "kernel-overhead"
seed = 1

[target]
kind = "benchmark"
command = '''{command}'''
metric = "score"
direction = "max"
seed_env = "{seed_env}"
timeout_s = 30
cache = true

[scope]
allowed = ["note.txt"]
hidden = ["candidates/"]

[agent]
kind = "files"
[agent.files]
path = "candidates"

[gate]
units = [{units}]
confirm = false

[budget]
max_attempts = {attempts}

[compute]
max_parallel = {parallel}

[sandbox]
mode = "{sandbox}"
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Ratchet bench", "-c", "user.email=bench@localhost", *args],
                   cwd=repo, check=True, stdout=subprocess.DEVNULL)


PROJECT_FILES = {
    "README.md": "A small project: a benchmark script, its code and its data.\n",
    "bench.sh": f"#!/bin/sh\n{COMMAND}\n",
    "note.txt": "baseline\n",
    "src/model.py": "def predict(x):\n    return 2 * x + 1\n" * 20,
    "src/features.py": "def features(row):\n    return [float(v) for v in row]\n" * 20,
    "data/train.csv": "".join(f"{i},{2 * i + 1}\n" for i in range(500)),
    "data/test.csv": "".join(f"{i},{2 * i + 1}\n" for i in range(100)),
}
"""What every checkout holds besides ratchet.toml (the candidates folder is hidden from jobs)."""


def make_project(root: Path, attempts: int, units: int, sandbox: str) -> Path:
    """A committed git project at `root/project`: PROJECT_FILES, the contract and `attempts`
    candidates."""
    project = root / "project"
    (project / "candidates").mkdir(parents=True)
    for rel, text in PROJECT_FILES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    for i in range(1, attempts + 1):
        entry = project / "candidates" / f"c{i:04d}"
        entry.mkdir()
        (entry / "note.txt").write_text(f"candidate {i}\n")
    (project / "ratchet.toml").write_text(CONTRACT.format(
        command=COMMAND, seed_env=SEED_ENV, units=units, attempts=attempts, parallel=PARALLEL, sandbox=sandbox))
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "kernel overhead benchmark")
    return project


def jobs_of(attempts: int, units: int) -> int:
    """Jobs one campaign runs: the preflight, then both variants on every unit of every attempt."""
    return 1 + attempts * 2 * units


# -- the two runners -------------------------------------------------------------------------------


def time_xargs(root: Path, jobs: int, sandboxed: bool) -> float:
    """Wall seconds of `xargs -P PARALLEL` running COMMAND `jobs` times (one seed each), under bwrap
    when `sandboxed`."""
    work, scratch = root / "xargs-work", root / "xargs-scratch"
    work.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    argv = ["/bin/sh", "-c", f"{SEED_ENV}=$1; {COMMAND}", "job"]
    if sandboxed:
        env = {**job_env(SEED_ENV, 0, "xargs", "candidate", "0"), "HOME": str(scratch), "TMPDIR": str(scratch)}
        env.pop(SEED_ENV)
        argv = wrap_argv(argv, workdir=work, scratch=scratch, network=False, env=env)
    seeds = "".join(f"{i}\n" for i in range(jobs)).encode()
    start = time.perf_counter()
    subprocess.run(["xargs", "-P", str(PARALLEL), "-n", "1", *argv], input=seeds, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_ratchet(root: Path, attempts: int, units: int, sandbox: str) -> tuple[float, int]:
    """(wall seconds of `ratchet run PROJECT --json` as a subprocess, jobs it ran)."""
    project = make_project(root, attempts, units, sandbox)
    start = time.perf_counter()
    proc = subprocess.run([*RATCHET, "run", str(project), "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    out = json.loads(proc.stdout)
    if not out.get("ok"):
        raise SystemExit(f"ratchet run failed: {out.get('error')}")
    return wall, ran_jobs(project, out["result"]["run_id"])


def ran_jobs(project: Path, run_id: str) -> int:
    """`job.finished` events of a run that ran a job (not cached)."""
    events = project / ".ratchet" / "runs" / run_id / "events.jsonl"
    finished = [json.loads(line)["data"] for line in events.read_text().splitlines()
                if '"kind":"job.finished"' in line]
    return sum(1 for d in finished if not d.get("cached"))


# -- where the time goes ---------------------------------------------------------------------------


WAIT = "executor wait"
IN_WAIT = " (in wait)"
"""Suffix of a label timed while the executor's wait runs (a callback: it overlaps the jobs)."""


class Timers:
    """Wall seconds and calls per label, summed over the calls made on the main thread; a call made
    during the executor's wait is counted under `label + IN_WAIT`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._main = threading.main_thread()
        self._waiting = 0

    def wrap(self, owner: object, name: str, label: str) -> None:
        """Replace `owner.name` (a function or method) by a timed one."""
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            if threading.current_thread() is not self._main:
                return inner(*args, **kwargs)
            key = label + IN_WAIT if self._waiting and label != WAIT else label
            self._waiting += label == WAIT
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - start
                self.calls[key] += 1
                self._waiting -= label == WAIT

        setattr(owner, name, timed)


STEPS: list[tuple[str, str, str, str]] = [
    # (module, attribute path, label, what it is)
    ("ratchet.compute.sandbox", "probe_bwrap", "bwrap probe", "one sandboxed Python, once per run"),
    ("ratchet.loop.campaign", "Campaign.run", "campaign", "the loop, from the preflight to run.stopped"),
    ("ratchet.commands.runs", "write_report", "report", "report.md at the end"),
    ("ratchet.commands.runs", "run_status", "status", "the run's summary for --json"),
    ("ratchet.loop.measure", "Runner._run", "batch", "one batch: checkouts, submit, wait, cleanup"),
    ("ratchet.loop.measure", "Runner._checkout", "checkout", "a clean checkout per job, before the batch starts"),
    ("ratchet.compute.local", "LocalExecutor.wait", WAIT, "the jobs run; the callbacks below run meanwhile"),
    ("ratchet.loop.kernel", "Kernel.record", "record", "one ledger event and its index row"),
    ("ratchet.ledger.events", "EventLog.append", "ledger append", "encode, verify, write, fsync"),
    ("ratchet.ledger.events", "EventLog._write_line", "write + fsync", "os.write and os.fsync of one line"),
    ("ratchet.ledger.index", "Index.apply", "index", "one SQLite transaction per event"),
    ("ratchet.compute.cache", "MeasurementCache.put", "cache put", "one file written and fsynced per job"),
    ("ratchet.targets.shell", "ShellJobs.read", "read result", "the metric from the job's stdout"),
    ("ratchet.loop.kernel", "Kernel.state", "state fold", "the run's state folded from the ledger"),
    ("ratchet.loop.kernel", "Kernel.find", "ledger scan", "Kernel.find / once: the last event of a kind"),
    ("ratchet.loop.trial", "decide", "gate", "the gate's decision at a look"),
    ("ratchet.agents.files", "FilesAgent.start", "agent", "the candidate's tree (git)"),
    ("ratchet.loop.campaign", "Campaign._judge_without_jobs", "scope check", "diff and scope of a candidate"),
]


def install(timers: Timers) -> None:
    """Wrap every step of STEPS with `timers`."""
    import importlib

    for module, path, label, _ in STEPS:
        owner: object = importlib.import_module(module)
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        timers.wrap(owner, name, label)


@contextlib.contextmanager
def argv(*args: str) -> Iterator[None]:
    saved = sys.argv
    sys.argv = list(args)
    try:
        yield
    finally:
        sys.argv = saved


def profile_run(root: Path, attempts: int, units: int, sandbox: str) -> tuple[float, Timers]:
    """One `ratchet run` in this process with the kernel's steps timed: (wall seconds, timers)."""
    start = time.perf_counter()
    from ratchet import cli
    from ratchet.commands import run  # noqa: F401  (the run command's imports: scipy, numpy, pydantic...)

    imports = time.perf_counter() - start
    timers = Timers()
    timers.seconds["imports"] = imports
    install(timers)
    project = make_project(root, attempts, units, sandbox)
    out = io.StringIO()
    start = time.perf_counter()
    with argv("ratchet", "run", str(project), "--json"), contextlib.redirect_stdout(out):
        with contextlib.suppress(SystemExit):
            cli.main()
    wall = time.perf_counter() - start
    if not json.loads(out.getvalue()).get("ok"):
        raise SystemExit(f"ratchet run failed: {out.getvalue()[:2000]}")
    return wall, timers


def breakdown(profiles: dict[str, dict], jobs: int, xargs_wall: float) -> str:
    """Where the time goes in each profiled run (one column pair per source tree)."""
    what = {label: text for _, _, label, text in STEPS}
    what.update({f"{label}{IN_WAIT}": text for label, text in what.items()})
    in_loop = ["checkout", "state fold", "ledger scan", "gate", "agent", "scope check", "record"]
    callbacks = ["record", "ledger append", "write + fsync", "index", "cache put", "read result"]
    lines: list[tuple[str, str, Callable[[dict, float], float], str]] = [
        ("`ratchet run` (in process, timers on)", "", lambda s, w: w, ""),
        ("start-up: importing the CLI and the run command (scipy, numpy, pydantic, typer; in every "
         "subprocess run, not in the in-process wall above)", "", lambda s, w: s["imports"], "serial"),
        ("**main thread outside the executor's wait** (no job runs meanwhile)", "", lambda s, w: w - s[WAIT],
         "serial"),
        ("- opening the run: contract, git, agent, run directory, lock, bwrap probe, run.started", "",
         lambda s, w: w - s["campaign"] - s["report"] - s["status"], "serial"),
        *[(f"- {label}: {what[label]}", label, _get(label), "serial") for label in in_loop],
        ("- cleanup and submit (batch - checkouts - wait)", "batch",
         lambda s, w: s["batch"] - s["checkout"] - s[WAIT], "serial"),
        ("- the rest of the loop (blobs, progress, budget checks)", "",
         lambda s, w: s["campaign"] - s["batch"] - sum(s[k] for k in in_loop if k != "checkout"), "serial"),
        *[(f"- {label}: {what[label]}", label, _get(label), "serial") for label in ("report", "status")],
        ("**executor wait - xargs** (the wait's time over what xargs took for the same jobs)", WAIT,
         lambda s, w: s[WAIT] - xargs_wall, "overlaps jobs"),
        *[(f"- {label}: {what[label + IN_WAIT]}", label + IN_WAIT, _get(label + IN_WAIT),
           "callback, overlaps jobs") for label in callbacks],
    ]
    headers = ["step"]
    for name in profiles:
        headers += [f"{name}: s", f"{name}: ms per job"]
    headers += ["calls", "when"]
    rows = []
    for text, count_label, value, when in lines:
        row = [text]
        for prof in profiles.values():
            seconds = value(defaultdict(float, prof["seconds"]), prof["wall"])
            row += [f"{seconds:.2f}", f"{seconds * 1000 / jobs:.2f}"]
        last = list(profiles.values())[-1]
        row += [str(last["calls"].get(count_label, "")) if count_label else "", when]
        rows.append(row)
    return table(headers, rows, "l" + "rr" * len(profiles) + "rl")


def _get(label: str) -> Callable[[dict, float], float]:
    return lambda s, w: s[label]


# -- the whole benchmark ---------------------------------------------------------------------------


def child(kind: str, attempts: int, units: int, sandbox: str) -> dict:
    """One measurement in this (fresh) process, on the source tree SRC."""
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-kernel-") as tmp:
        root = Path(tmp)
        jobs = jobs_of(attempts, units)
        if kind == "xargs":
            return {"wall": time_xargs(root, jobs, sandbox == "bwrap"), "jobs": jobs}
        if kind == "ratchet":
            wall, ran = time_ratchet(root, attempts, units, sandbox)
            return {"wall": wall, "jobs": ran}
        wall, timers = profile_run(root, attempts, units, sandbox)
        return {"wall": wall, "jobs": jobs, "seconds": dict(timers.seconds), "calls": dict(timers.calls)}


def measure(kind: str, attempts: int, units: int, sandbox: str, src: Path = SRC) -> dict:
    """`child` in a fresh process importing Ratchet from `src`."""
    out = subprocess.run([str(PYTHON), __file__, "--child", kind, str(attempts), str(units), sandbox],
                         capture_output=True, text=True, env={**os.environ, SRC_ENV: str(src)})
    if out.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=25, help="attempts (candidates) in the campaign")
    parser.add_argument("--units", type=int, default=20, help="units per trial (one look)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, help="also time Ratchet from this source tree (its src/), "
                        "alternating with the others: a before/after on the same machine at the same time")
    parser.add_argument("--quick", action="store_true", help="3 attempts of 10 units, one repeat")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, attempts, units, sandbox = args.child
        print(json.dumps(child(kind, int(attempts), int(units), sandbox)))
        return
    attempts, units, repeats = (3, 10, 1) if args.quick else (args.attempts, args.units, args.repeats)
    status = probe_bwrap()
    sandbox = "bwrap" if status.available else "none"
    jobs = jobs_of(attempts, units)
    sources = {"this source": SRC} if args.baseline_src is None else \
        {"baseline": args.baseline_src.resolve() / "src", "this source": SRC}
    runs: dict[str, list[float]] = {"xargs": [], **{name: [] for name in sources}}
    for _ in range(repeats):
        for name in runs:
            kind, src = ("xargs", SRC) if name == "xargs" else ("ratchet", sources[name])
            m = measure(kind, attempts, units, sandbox, src)
            if m["jobs"] != jobs:
                raise SystemExit(f"{name} ran {m['jobs']} jobs, expected {jobs}")
            runs[name].append(m["wall"])
    profiles = {name: measure("profile", attempts, units, sandbox, src) for name, src in sources.items()}
    body = render(attempts, units, repeats, sandbox, status.reason, runs, profiles)
    where = ", ".join(f"{name}: `{src}`" for name, src in sources.items())
    save("kernel_overhead" + ("-quick" if args.quick else ""), "Kernel overhead: `ratchet run` against xargs",
         f"Sources ({where}).\n\n{body}")


def render(attempts: int, units: int, repeats: int, sandbox: str, reason: str, runs: dict[str, list[float]],
           profiles: dict[str, dict]) -> str:
    """The markdown body: the target table, every run, where the time goes."""
    jobs = jobs_of(attempts, units)
    xargs = statistics.median(runs["xargs"])
    runner = f"xargs -P {PARALLEL} + {'bwrap' if sandbox == 'bwrap' else 'no sandbox'}"
    rows = [[runner, str(jobs), f"{xargs:.2f}", "1.000", "-", "-"]]
    for name, walls in runs.items():
        if name == "xargs":
            continue
        wall = statistics.median(walls)
        ratio = wall / xargs
        rows.append([f"`ratchet run` ({name})", str(jobs), f"{wall:.2f}", f"**{ratio:.3f}**",
                     f"{(wall - xargs) * PARALLEL / jobs * 1000:.1f}", "met" if ratio <= TARGET_RATIO else "MISSED"])
    every = "; ".join(f"{name} " + ", ".join(f"{w:.2f}" for w in walls) for name, walls in runs.items())
    return (
        f"A campaign of {attempts} attempts x {units} units x 2 variants + 1 preflight = **{jobs} jobs** of "
        f"`sleep {JOB_S:g}` (then a metric from the seed), {PARALLEL} at a time, sandbox `{sandbox}` ({reason}); "
        "`files` agent, one look per trial, no confirmation, cache on. "
        f"Median of {repeats} runs each, the runners alternating, each run in a fresh process (interpreter "
        f"start included); load average {os.getloadavg()[0]:.2f} at the end.\n\n"
        f"*Overhead per job*: (ratchet - xargs) x {PARALLEL} / jobs, the time each slot loses per job.\n\n"
        f"## Target: `ratchet run` <= {TARGET_RATIO}x {runner} for {JOB_S * 1000:.0f} ms jobs\n\n"
        + table(["runner", "jobs", "wall s", "ratio to xargs", "overhead per job ms", "target"], rows, "lrrrrl")
        + f"\nEvery run (seconds): {every}.\n"
        + "\n## Where the time goes (one more run of each source, in process, with timers)\n\n"
        "Wall seconds on the kernel's main thread, summed over calls. The main thread prepares each "
        "batch (checkouts), then waits for it while the jobs run; ledger events, index rows and cache "
        "writes are made in the executor's callbacks during that wait, so they overlap the jobs and "
        "cost wall time only when they keep the next job from starting. Rows marked `serial` are wall "
        "time no job runs in.\n\n"
        + breakdown(profiles, jobs, xargs)
    )


if __name__ == "__main__":
    main()
