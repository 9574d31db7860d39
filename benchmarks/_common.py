"""Shared helpers of the benchmark scripts: the machine header, markdown tables, result files.

Every result file under benchmarks/results/ starts with the date and the machine (nproc, CPU model,
Python version) so a number is never read without the box it came from.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
PYTHON = Path(sys.executable)
"""The interpreter running the benchmarks (the project's .venv python under `make bench`)."""


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo ("unknown" elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nproc() -> int:
    """CPUs this process may run on (what `nproc` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def source_revision() -> str:
    """`git describe`-like revision of the source tree (short commit, `+dirty` when edited)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_header(title: str) -> str:
    """The first lines of a result file: title, date, machine, interpreter, source revision."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"# {title}\n\n"
        f"- date: {now}\n"
        f"- machine: nproc {nproc()}, {cpu_model()}, {platform.system()} {platform.release()}; "
        f"load average {os.getloadavg()[0]:.2f} when written (other processes share the CPUs)\n"
        f"- python: {platform.python_version()} ({PYTHON})\n"
        f"- ratchet source: {source_revision()}\n"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A markdown table. align: one character per column, `l` or `r` (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def save(name: str, title: str, body: str) -> Path:
    """Write `results/<name>.md` (header + body), print the body, return the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    text = machine_header(title) + "\n" + body.rstrip() + "\n"
    path.write_text(text, encoding="utf-8")
    print(text, flush=True)
    return path


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss), in MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def clopper_pearson(successes: int, n: int) -> tuple[float, float]:
    """Two-sided 95% Clopper-Pearson interval of a binomial proportion, (low, high) in [0, 1]
    (Clopper & Pearson 1934, Biometrika 26:404-413). n >= 1, 0 <= successes <= n."""
    from scipy.stats import beta

    low = 0.0 if successes == 0 else float(beta.ppf(0.025, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(0.975, successes + 1, n - successes))
    return low, high


def cp(successes: int, n: int, digits: int = 2) -> str:
    """`rate % [low, high]`: the rate with its two-sided 95% Clopper-Pearson interval, in percent."""
    low, high = clopper_pearson(successes, n)
    return f"{100 * successes / n:.{digits}f} [{100 * low:.{digits}f}, {100 * high:.{digits}f}]"
