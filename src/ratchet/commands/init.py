"""`ratchet init`: a contract with every key of DESIGN.md §4 on its own line (defaults shown) and
minimal working files for a `benchmark` or an `examples` target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from ratchet.core.contract import CONTRACT_FILE
from ratchet.core.errors import DataError

Kind = Literal["benchmark", "examples"]

_COMMON_TAIL = """
[scope]
allowed = {allowed}     # the only paths a candidate may change
protected = {protected} # never changeable; ratchet.toml and target.examples always are
hidden = []              # never present in an agent's workspace

[agent]
kind = "search"          # search | files | command | llm
[agent.search]
file = "params.toml"     # tunables are written into this file (.toml or .json)
sampler = "tpe"          # tpe | random
[agent.search.space]
{space}
# kind = "files": prepared candidates, one per attempt, in name order
# [agent.files]
# path = "candidates/"   # subdirectories (overlaid onto the champion) or .patch files
# kind = "command" (an external coding-agent CLI) and kind = "llm" are not built yet

[gate]
alpha = 0.05             # the campaign's type-I error budget
multiplicity = "campaign" # campaign: P(any false promotion in the run) <= alpha | trial: alpha per trial
min_effect = 0.0         # smallest gain worth promoting, metric units (tested as the null)
min_effect_rel = 0.0     # or relative to the champion's mean
units = [10, 20, 40]     # sequential looks: cumulative paired units
confirm = true           # benchmark: re-measure an accepted candidate on fresh units before promotion
holdout_units = 0        # benchmark: units of the final holdout (0: the last entry of gate.units)
patience = 0             # stop after this many trials in a row without a promotion (0: never)
# target = 0.95          # stop once the champion's lower confidence bound reaches this

[budget]                 # 0 means unlimited, except max_attempts
max_attempts = 20
max_evaluations = 0      # job-units, both variants, confirmation and holdout counted
max_cpu_hours = 0.0
max_gpu_hours = 0.0
max_wall = "0"           # seconds, or "90s" / "45m" / "2h"
max_val_trials = 0       # examples: how many candidates may be measured on val

[compute]
backend = "local"        # local | slurm
max_parallel = 2
gpus_per_job = 0
cpus_per_job = 1         # slurm: --cpus-per-task
memory_mb_per_job = 0    # slurm: --mem in MiB (0: the cluster's default)
gpus = []                # local: GPU devices to hand out, e.g. [0, 1]
max_concurrent_gpus = 0  # GPUs in use at once (0: all of gpus locally, no cap on slurm)

[compute.slurm]          # used with backend = "slurm" (docs/slurm.md)
# partition = "gpu"
# account = "my-lab"
# qos = "normal"
extra_args = []          # further sbatch flags, verbatim
time_grace_s = 60.0      # --time = target.timeout_s + this
poll_min_s = 0.5         # scheduler polls back off from this ...
poll_max_s = 15.0        # ... to this (keep below the cluster's MinJobAge)

[sandbox]
mode = "auto"            # auto | bwrap | none
network = false
"""

BENCHMARK_CONTRACT = """\
[campaign]
name = "{name}"          # [A-Za-z0-9_.-]{{1,64}}
seed = 0                 # master seed: splits, search and (with a per-run salt) unit seeds

[target]
kind = "benchmark"       # benchmark | examples
command = "python3 bench.py"  # run in a clean checkout of the variant's tree
metric = "score"         # key in the LAST single-line JSON object on stdout
direction = "max"        # max | min
seed_env = "RATCHET_SEED" # env var carrying the unit's seed
timeout_s = 600          # per job
cache = true             # reuse a measurement with identical inputs (false for timing metrics)
"""

EXAMPLES_CONTRACT = """\
[campaign]
name = "{name}"          # [A-Za-z0-9_.-]{{1,64}}
seed = 0                 # master seed: splits, search and (with a per-run salt) unit seeds

[target]
kind = "examples"        # benchmark | examples
examples = "data/examples.jsonl"  # {{"input": ..., "expected_output": ...}} per line
solution = "solution.py" # run as `python3 solution.py`, input on stdin
split = [0.6, 0.2, 0.2]  # dev / val / test
direction = "max"        # max | min
timeout_s = 600          # per example
cache = true             # reuse a measurement with identical inputs
[[target.checks]]        # >= 1; all must pass
type = "exact_match"     # exact_match | normalized_match | json_equality | regex_match | numeric_tolerance | custom
"""

BENCH_PY = '''\
"""A tiny benchmark: reads params.toml, prints {"score": ...} for the seed in RATCHET_SEED."""
import json
import os
import random
import tomllib

with open("params.toml", "rb") as f:
    params = tomllib.load(f)
rng = random.Random(int(os.environ.get("RATCHET_SEED", "0")))
x = float(params["x"])
score = 1.0 - (x - 3.0) ** 2 / 10.0 + rng.gauss(0.0, 0.05)
print(json.dumps({"score": score}))
'''

SOLUTION_PY = '''\
"""Reads one input on stdin, prints the output. Ratchet's candidates improve this file."""
import sys
import tomllib

with open("params.toml", "rb") as f:
    params = tomllib.load(f)
text = sys.stdin.read()
print(text.upper() if params.get("upper") else text)
'''

_EXAMPLE_ROWS = [("hello", "HELLO"), ("ratchet", "RATCHET"), ("paired test", "PAIRED TEST")]


def scaffold(directory: Path, kind: Kind, name: str | None = None) -> list[Path]:
    """Write `ratchet.toml` and minimal working files for `kind` into `directory` (created if needed).

    Existing files other than the contract are kept as they are. Returns the paths written.
    Raises DataError `init.exists` when a ratchet.toml already exists (it is never overwritten).
    """
    directory.mkdir(parents=True, exist_ok=True)
    contract = directory / CONTRACT_FILE
    if contract.exists():
        raise DataError(
            "init.exists",
            f"{contract} already exists; it is never overwritten",
            hint="edit it, or remove it first if you really want a fresh one",
        )
    name = name or _safe_name(directory.resolve().name)
    files: dict[str, str] = {}
    if kind == "benchmark":
        head = BENCHMARK_CONTRACT.format(name=name)
        tail = _COMMON_TAIL.format(
            allowed='["params.toml"]', protected='["bench.py"]',
            space='x = { type = "float", low = 0.0, high = 10.0 }',
        )
        files = {"bench.py": BENCH_PY, "params.toml": "x = 1.0\n"}
    else:
        head = EXAMPLES_CONTRACT.format(name=name)
        tail = _COMMON_TAIL.format(
            allowed='["solution.py", "params.toml"]', protected="[]",
            space='upper = { type = "categorical", choices = [true, false] }',
        ).replace("cumulative paired units", "cumulative val examples")
        rows = "".join(json.dumps({"input": i, "expected_output": o}) + "\n" for i, o in _EXAMPLE_ROWS)
        files = {"solution.py": SOLUTION_PY, "params.toml": "upper = false\n", "data/examples.jsonl": rows}
    written = []
    with open(contract, "x", encoding="utf-8") as f:
        f.write(head + tail)
    written.append(contract)
    for rel, text in files.items():
        path = directory / rel
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _safe_name(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in text)[:64]
    return cleaned or "project"


def init_project(directory: Path, kind: str) -> dict[str, object]:
    """`ratchet init`: validate `kind`, scaffold, and return {"directory", "kind", "written": [paths]}.

    Raises DataError `init.bad_kind` for an unknown kind, `init.exists` (see scaffold).
    """
    if kind not in ("benchmark", "examples"):
        raise DataError("init.bad_kind", f"--kind {kind!r} is not a target kind", hint="use benchmark or examples")
    written = scaffold(directory, kind)  # type: ignore[arg-type]
    return {"directory": str(directory), "kind": kind, "written": [str(p) for p in written]}
