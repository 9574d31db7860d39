"""benchmarks/adaptive_examples.py in quick mode (short campaigns, few runs): it runs, and its result
file holds a row for every null-campaign cell (setting x answers model x agent x T) and every
power-campaign cell, each rate with its 95% Clopper-Pearson interval."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
RATE = re.compile(r"^\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]$")
"""A rate in percent with its interval, as the tables print it: `1.25 [0.70, 2.05]`."""


def _rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]


@pytest.mark.slow
def test_quick_mode_writes_a_row_for_every_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common
    import adaptive_examples as bench

    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", ["adaptive_examples.py", "--quick"])
    bench.main()

    rows = _rows((tmp_path / "adaptive_examples-quick.md").read_text(encoding="utf-8"))
    null = [r for r in rows if r[0] in {m.name for m in bench.MODELS}]
    expected = {(m.name, agent, str(t)) for m in bench.MODELS for agent in bench.AGENTS.values()
                for t in bench.QUICK_ATTEMPTS}
    assert len(null) == len(bench.SETTINGS) * len(expected), f"{len(null)} null-campaign rows"
    assert {(r[0], r[1], r[2]) for r in null} == expected
    for r in null:
        assert all(RATE.match(cell) for cell in (r[3], r[4], r[6])), f"a rate without its interval: {r}"
        assert r[5] in {"yes", "**NO**"} and r[7] == str(bench.QUICK_RUNS), r
    power = [r for r in rows if r[1] in {"before", "after"}]
    assert [(r[0], r[1]) for r in power] == [(s.name, d) for s in bench.SETTINGS for d in ("before", "after")]
    assert all(RATE.match(r[4]) for r in power), power
