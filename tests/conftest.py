"""Shared fixtures: a real temporary git repository holding a small benchmark.

The `bench_repo` fixture (or `make_repo(root, files=..., x=...)` from the `make_repo` fixture)
builds:

- bench.py: reads params.toml and the seed from $RATCHET_SEED, prints a few log lines and then
  `{"score": ...}` where score = -(x - 3)^2 + noise(seed), noise ~ N(0, 0.1) seeded (deterministic
  per seed). Larger is better; x = 3 is the optimum.
- params.toml: `x = 0.0` (the tunable).
- ratchet.toml: a benchmark contract over this repository (allowed: params.toml; protected: bench.py).
- .gitignore: `.ratchet/`.

One commit ("baseline") made with an explicit identity passed through the environment, so the
repository's own config has no user.name/user.email (tests can check Ratchet's fallback identity).
The `git_cli` fixture gives `git(root, *args) -> stdout` (plain git for test setup).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_fixture import git, make_bench_repo


@pytest.fixture
def bench_repo(tmp_path: Path) -> Path:
    """A fresh benchmark repository (see the module docstring) at tmp_path/"repo"."""
    return make_bench_repo(tmp_path / "repo")


@pytest.fixture
def make_repo():
    """`make_bench_repo`: build a benchmark repository at any path, with extra files."""
    return make_bench_repo


@pytest.fixture
def git_cli():
    """`git(root, *args, env=None) -> stdout`: plain git for setting up test repositories."""
    return git
