"""A real temporary git repository holding a small benchmark (see tests/conftest.py), importable
by name from any test module (`from repo_fixture import git, make_bench_repo`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

BENCH_PY = """\
import json, os, random, sys, tomllib

with open("params.toml", "rb") as f:
    params = tomllib.load(f)
seed = int(os.environ.get("RATCHET_SEED", "0"))
x = float(params.get("x", 0.0))
noise = random.Random(seed).gauss(0.0, 0.1)
print("loading data...", file=sys.stderr)
print("progress: 100%")
print(json.dumps({"score": -(x - 3.0) ** 2 + noise, "x": x, "seed": seed}))
"""

CONTRACT = """\
[campaign]
name = "bench"
seed = 0

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
direction = "max"
timeout_s = 60

[scope]
allowed = ["params.toml"]
protected = ["bench.py"]

[agent]
kind = "search"

[agent.search]
file = "params.toml"

[agent.search.space]
x = { type = "float", low = -5.0, high = 5.0 }
"""

FIXTURE_IDENTITY = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
}


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run plain git in `root` for test setup (global/system config ignored); returns stdout."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(
        {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", **FIXTURE_IDENTITY, **(env or {})}
    )
    proc = subprocess.run(
        ["git", "-C", str(root), *args], env=full, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def make_bench_repo(root: Path, files: dict[str, str] | None = None, x: float = 0.0) -> Path:
    """Create the benchmark repository in `root` (created if missing) with one commit; `files`
    adds or replaces files (relative path -> text) before the commit. Returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    content = {
        "bench.py": BENCH_PY,
        "params.toml": f"x = {x!r}\n",
        "ratchet.toml": CONTRACT,
        ".gitignore": ".ratchet/\n",
        **(files or {}),
    }
    for rel, text in content.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root


EXAMPLES_CONTRACT = """\
[campaign]
name = "words"
seed = 3

[target]
kind = "examples"
examples = "data/examples.jsonl"
solution = "solution.py"
split = [0.4, 0.3, 0.3]
timeout_s = 10

[[target.checks]]
type = "exact_match"

[scope]
allowed = ["solution.py"]

[agent]
kind = "files"
[agent.files]
path = "candidates/"

[gate]
units = [10, 27]

[budget]
max_attempts = 3
"""
"""An examples contract (words to upper-case, the files agent, val looks 10 and 27), shared by the
examples campaign and verify tests."""


def make_examples_repo(root: Path, contract: str = EXAMPLES_CONTRACT, words: int = 90) -> Path:
    """An examples project in a new git repo at `root`: `words` words to upper-case, a baseline that
    echoes its input, and three prepared candidates (a no-op edit, the upper-casing solution, a crash)."""
    (root / "data").mkdir(parents=True)
    rows = [{"input": f"word{i:03d} alpha", "expected_output": f"WORD{i:03d} ALPHA"} for i in range(words)]
    (root / "data" / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    baseline = "import sys\nprint(sys.stdin.read())\n"
    (root / "solution.py").write_text(baseline)
    (root / "ratchet.toml").write_text(contract)
    (root / ".gitignore").write_text(".ratchet/\n")
    for name, text in (("1-same", baseline + "# a comment\n"),
                       ("2-upper", "import sys\nprint(sys.stdin.read().upper())\n"),
                       ("3-crash", "raise SystemExit(3)\n")):
        (root / "candidates" / name).mkdir(parents=True)
        (root / "candidates" / name / "solution.py").write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    return root
