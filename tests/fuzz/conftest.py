"""Counts the inputs the fuzz tests generate and prints the total at the end of the session
("fuzzed inputs: N"), so a CI log shows how many bad inputs the parsers were given."""

from __future__ import annotations

from collections import Counter

import pytest

FUZZED: Counter[str] = Counter()
"""Parser name -> inputs given to it in this session (each fuzz test adds one per input)."""


@pytest.fixture
def fuzzed() -> Counter[str]:
    """The session's input counter (see FUZZED)."""
    return FUZZED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per parser and the total, when any fuzz test ran."""
    if not FUZZED:
        return
    terminalreporter.section("fuzzed inputs")
    for name, count in sorted(FUZZED.items()):
        terminalreporter.write_line(f"{name:28} {count:6,}")
    terminalreporter.write_line(f"{'fuzzed inputs':28} {sum(FUZZED.values()):6,}")
