"""Helpers for end-to-end tests: run the real `ratchet` CLI in a subprocess and read its JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratchet.core.canonical import digest_bytes
from ratchet.core.events import GENESIS_PREV, encode_event


def ratchet(*args: str, cwd: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None
            ) -> tuple[int, dict[str, Any], str]:
    """Run `python -m ratchet ARGS --json`; returns (exit code, the JSON envelope, stderr)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "ratchet", *args, "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=full_env)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one JSON line on stdout, got {proc.stdout!r}\nstderr: {proc.stderr}"
    return proc.returncode, json.loads(lines[0]), proc.stderr


def set_contract(root: Path, replace: dict[str, str] | None = None, append: str = "") -> None:
    """Edit ratchet.toml in `root` (text replacements, then appended text) and commit it."""
    from repo_fixture import git

    path = root / "ratchet.toml"
    text = path.read_text()
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text + append)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "contract")


def events(root: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's ledger events as dicts."""
    path = root / ".ratchet" / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def interrupted_at(root: Path, args: list[str], started: Callable[[dict[str, Any]], bool], timeout: float = 120
                  ) -> tuple[int, dict[str, Any], str]:
    """Run `python -m ratchet ARGS --json` in the background and send it SIGINT (Ctrl-C) once the
    project's run has a `job.started` event whose data `started` accepts. Returns (exit code, the
    JSON envelope, stderr)."""
    out, err = root.parent / f"out-{time.monotonic_ns()}", root.parent / f"err-{time.monotonic_ns()}"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "ratchet", *args, "--json"], stdout=stdout, stderr=stderr)
    deadline = time.monotonic() + timeout
    while not any(e["kind"] == "job.started" and started(e["data"]) for e in _events_so_far(root)):
        assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=timeout)
    lines = [line for line in out.read_text().splitlines() if line.strip()]
    assert len(lines) == 1, f"stdout {lines!r}\nstderr: {err.read_text()}"
    return code, json.loads(lines[0]), err.read_text()


def _events_so_far(root: Path) -> list[dict[str, Any]]:
    """The events of every run of the project at `root` read so far (a line being written is skipped)."""
    found = []
    for path in (root / ".ratchet" / "runs").glob("*/events.jsonl"):
        for line in path.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found



def use_files_agent(root: Path, candidates: dict[str, str], append: str = "") -> None:
    """Turn the benchmark fixture's contract to the `files` agent over prepared candidates: each
    `candidates[name]` is the params.toml text of candidates/<name>/; `append` is added to the
    contract (set_contract), and the change is committed."""
    for name, params in candidates.items():
        (root / "candidates" / name).mkdir(parents=True)
        (root / "candidates" / name / "params.toml").write_text(params)
    set_contract(root, replace={'kind = "search"': 'kind = "files"\n[agent.files]\npath = "candidates/"'},
                 append=append)

def rechain(path: Path, edit: Callable[[dict[str, Any]], bool]) -> None:
    """Apply `edit` to every event (it returns True for the ones it changed) and re-compute the hash
    chain, so the ledger is well formed again: what a careful forger would do."""
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    changed = [edit(event) for event in lines]  # every event, not only up to the first change
    assert any(changed), "the edit changed nothing"
    prev, out = GENESIS_PREV, []
    for event in lines:
        line = encode_event(event["seq"], event["ts"], event["kind"], prev, event["data"])
        out.append(line)
        prev = digest_bytes(line)
    path.write_bytes(b"\n".join(out) + b"\n")


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval of a binomial proportion, (low, high) in [0, 1]
    (Clopper & Pearson 1934): what the simulation tests hold a measured rate to."""
    from scipy.stats import beta

    a = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(beta.ppf(a, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1.0 - a, successes + 1, n - successes))
    return low, high


def venv_agent_cli(where: Path, name: str = "venvbot") -> Path:
    """A coding-agent CLI installed the way pipx or `pip install` into a venv does it: a real venv
    (`python -m venv`, no pip) at `where`, outside /usr and outside every sandbox's default view,
    whose `bin/<name>` is a script run by the venv's own python. `<name> --version` prints
    `<name> 1.0 <the venv>`; any other call runs the workspace's `agent/bot.py` (the example's scripted
    agent: it launches, sleeps, edits and submits through the channel). Returns the venv's bin directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    cli = where / "bin" / name
    cli.write_text(f"#!{where}/bin/python\n"
                   "import runpy, sys\n"
                   "if sys.argv[1:] == ['--version']:\n"
                   f"    print('{name} 1.0', sys.prefix)\n"
                   "    sys.exit(0)\n"
                   "sys.argv = ['agent/bot.py', *sys.argv[1:]]\n"
                   "runpy.run_path('agent/bot.py', run_name='__main__')\n")
    cli.chmod(0o755)
    return where / "bin"


def user_venv(where: Path) -> Path:
    """A venv at `where` (outside /usr) holding a package `onlyhere` no other Python has."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    (site,) = (where / "lib").glob("python3*/site-packages")
    (site / "onlyhere").mkdir()
    (site / "onlyhere" / "__init__.py").write_text("OFFSET = 0.0\n")
    return where
