"""`ratchet init`: a contract with every key on its own line (defaults shown, see docs/guide.md) and
small working files for a `benchmark` or an `examples` target.

The benchmark scaffold ships the safe pattern of docs/threat-model.md: the protected `bench.py`
runs the candidate's `solve.py` in a subprocess and computes the metric itself. The examples
scaffold ships EXAMPLE_COUNT examples, enough for a real promotion under the default gate.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Literal, cast

from ratchet.core.contract import CONTRACT_FILE
from ratchet.core.errors import DataError

Kind = Literal["benchmark", "examples"]

_COMMON_TAIL = """
[scope]
allowed = {allowed}     # the only paths a candidate may change
protected = {protected} # never changeable; ratchet.toml and target.examples always are
hidden = []              # never present in an agent's workspace

[agent]
max_idle_attempts = 3    # attempts in a row whose agent did not work before the run stops (0: never)
workers = 1              # attempts in flight at once, each with its own agent (docs/workers.md)
kind = "search"          # search | files | command | llm (its own table follows the kind)
[agent.search]
file = "params.toml"     # tunables are written into this file (.toml or .json)
sampler = "tpe"          # tpe | random
[agent.search.space]
{space}
# kind = "files": prepared candidates, one per attempt, in name order
# [agent.files]
# path = "candidates/"   # subdirectories (overlaid onto the champion) or .patch files
# kind = "llm": a model behind an OpenAI-compatible API (docs/agents-llm.md)
# [agent.llm]
# base_url = "https://api.openai.com/v1"  # or vLLM http://127.0.0.1:8000/v1, Ollama http://127.0.0.1:11434/v1
# model = "gpt-4o-mini"   # required
# api_key_env = "OPENAI_API_KEY"  # the NAME of the variable holding the key ("" for none)
# temperature = 0.2
# seed = 0                # sent to the server when set (left out by default)
# max_output_tokens = 4096  # per call
# context_window = 32768  # the model's context in tokens
# request_timeout_s = 300.0 # one request's overall deadline
# max_retries = 4         # retries of a 429 or 5xx
# retry_max_wait_s = 60.0 # cap on Retry-After and backoff waits
# strategy = false        # one strategy call per round writing `directives` directives
# directives = 3
# [agent.llm.price]       # USD per million tokens (needed by budget.max_usd)
# input_usd_per_mtok = 0.0
# output_usd_per_mtok = 0.0
# [agent.llm.prompts]     # files replacing the built-in prompts: system, repository, examples, strategy
# system = "prompts/system.md"
# kind = "command": an external coding-agent CLI through the channel (docs/agents-command.md)
# [agent.command]
# command = "my-agent --prompt-file {{prompt}}"   # {{prompt}} {{prompt_text}} {{workspace}} {{channel}}
# wake_command = "my-agent --resume {{session}} --prompt-file {{prompt}}"   # unset: each wake starts afresh
# pass_env = []            # names of variables the CLI needs (its model's credentials)
# network = false
# timeout_s = 3600.0       # seconds per leg
# brief = "BRIEF.md"       # the task, in your words
# submit = "on_exit"       # also submit by exiting with changes (report: REPORT.md); "channel": only ratchet-sys submit
# max_submits = 3          # submissions per session: a rejected change is revised by its author as the next attempt
# [agent.command.price]    # USD per million tokens the CLI reports (budget.max_usd when it reports no cost)
# input_usd_per_mtok = 0.0
# output_usd_per_mtok = 0.0

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
max_model_calls = 0      # llm agent: model calls
max_input_tokens = 0     # llm, command agents: input tokens (llm: each call reserves its request size first)
max_output_tokens = 0    # llm, command agents: output tokens
max_usd = 0.0            # llm, command agents: dollars (reported, or priced from [agent.*.price])

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
read_only = []           # extra absolute paths a sandboxed job may read (e.g. a conda or pyenv install)
pass_env = []            # variables passed to jobs with their values (they enter the cache key)
keep_ratchet_venv = false  # true: Ratchet's own virtual environment stays first on the jobs' PATH
"""

BENCHMARK_CONTRACT = """\
[campaign]
name = "{name}"          # [A-Za-z0-9_.-]{{1,64}}
seed = 0                 # master seed: splits, search and (with a per-run salt) unit seeds

[target]
kind = "benchmark"       # benchmark | examples
command = "python3 bench.py"  # run in a clean checkout of the variant's tree
metric = "error"         # key in the LAST single-line JSON object on stdout
direction = "min"        # max | min
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
[[target.checks]]        # >= 1; all must pass (what each compares: docs/examples-checks.md)
type = "exact_match"     # exact_match | normalized_match | json_equality | regex_match | numeric_tolerance | custom
"""

BENCH_PY = '''\
"""The protected benchmark: it makes the task, runs the candidate's code in a SUBPROCESS and
computes the metric itself, so nothing a candidate changes runs inside this process (scope
protects files, not a process: see Ratchet's docs/threat-model.md).

The task: estimate the centre of 200 points, 15% of them outliers on one side. The seed in
RATCHET_SEED draws the data; solve.py (which candidates may change) prints its estimate; the
metric is the absolute error. The child gets neither the seed nor the true centre.
"""
import json
import os
import random
import subprocess
import sys

rng = random.Random(int(os.environ["RATCHET_SEED"]))
centre = rng.uniform(-10.0, 10.0)
points = [rng.gauss(centre, 1.0) if rng.random() >= 0.15 else rng.gauss(centre + 30.0, 5.0) for _ in range(200)]

child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # no seed, no secrets
run = subprocess.run([sys.executable, "solve.py"], input=json.dumps(points), capture_output=True, text=True,
                     timeout=60, env=child_env)
if run.returncode != 0:
    sys.exit(f"solve.py failed (exit {run.returncode}): {run.stderr[-500:]}")
estimate = float(run.stdout.strip().splitlines()[-1])  # no number: this job fails, it never scores
print(json.dumps({"error": abs(estimate - centre)}))
'''

SOLVE_PY = '''\
"""The candidate's code: reads a JSON list of numbers on stdin, prints one estimate of their
centre. Ratchet's candidates change this file or the `trim` in params.toml."""
import json
import sys
import tomllib

with open("params.toml", "rb") as f:
    trim = float(tomllib.load(f)["trim"])  # fraction dropped from each end before averaging
values = sorted(json.load(sys.stdin))
cut = int(len(values) * trim)
kept = values[cut: len(values) - cut] or values
print(sum(kept) / len(kept))
'''

SOLUTION_PY = '''\
"""Reads one input on stdin, prints the output. Ratchet's candidates change this file or params.toml."""
import sys
import tomllib

with open("params.toml", "rb") as f:
    case = tomllib.load(f)["case"]
text = sys.stdin.read()
print({"upper": text.upper(), "lower": text.lower(), "title": text.title()}.get(case, text))
'''

EXAMPLE_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")

EXAMPLE_COUNT = 200
"""Examples the `--kind examples` scaffold writes. With split [0.6, 0.2, 0.2], val and test get 40
each: under the default gate, trial 1 can accept at its first look (10 val examples, smallest
McNemar p 0.5**10 below the look's increment) and the holdout on test has 40 pairs."""


def example_rows(count: int = EXAMPLE_COUNT) -> str:
    """The scaffold's examples as JSONL text: `count` distinct mixed-case phrases, each expected
    back in upper case."""
    rows = []
    for i in range(count):
        phrase = f"{EXAMPLE_WORDS[i % 10].capitalize()} {EXAMPLE_WORDS[(i // 10) % 10]} {i}"
        rows.append(json.dumps({"input": phrase, "expected_output": phrase.upper()}) + "\n")
    return "".join(rows)


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
            allowed='["solve.py", "params.toml"]', protected='["bench.py"]',
            space='trim = { type = "float", low = 0.0, high = 0.45 }',
        )
        files = {"bench.py": BENCH_PY, "solve.py": SOLVE_PY, "params.toml": "trim = 0.0\n"}
    else:
        head = EXAMPLES_CONTRACT.format(name=name)
        tail = _COMMON_TAIL.format(
            allowed='["solution.py", "params.toml"]', protected="[]",
            space='case = { type = "categorical", choices = ["keep", "upper", "lower", "title"] }',
        ).replace("cumulative paired units", "cumulative val examples")
        files = {"solution.py": SOLUTION_PY, "params.toml": 'case = "keep"\n', "data/examples.jsonl": example_rows()}
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


def next_steps(directory: Path) -> list[str]:
    """The commands to run after `ratchet init DIRECTORY`, in order: commit (a run measures the
    committed tree, so it needs a git repository with a commit), check, run."""
    where = shlex.quote(str(directory))
    return [
        f"git -C {where} init -q && git -C {where} add -A && git -C {where} commit -qm 'ratchet init'",
        f"ratchet check {where}",
        f"ratchet run {where}",
    ]


def init_project(directory: Path, kind: str) -> dict[str, object]:
    """`ratchet init`: validate `kind`, scaffold, and return {"directory", "kind", "written":
    [paths], "next": [commands], "note"}.

    Raises DataError `init.bad_kind` for an unknown kind, `init.exists` (see scaffold).
    """
    if kind in ("benchmark", "examples"):
        written = scaffold(directory, cast(Kind, kind))
    else:
        raise DataError("init.bad_kind", f"--kind {kind!r} is not a target kind", hint="use benchmark or examples")
    return {
        "directory": str(directory), "kind": kind, "written": [str(p) for p in written],
        "next": next_steps(directory),
        "note": "`ratchet run` measures the committed tree (HEAD), never the working tree: commit these "
                "files first (in an existing repository: git add and git commit them)",
    }
