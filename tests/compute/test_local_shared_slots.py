"""The local executor's slots are shared by every batch in flight (several workers submit at once):
never more than `max_parallel` jobs run, and a waiting gate measurement starts before a waiting
agent experiment (`JobSpec.background`), each class first come first served."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from jobkit import spec

from ratchet.compute.local import LocalExecutor


def _stamp(log: Path, name: str, seconds: float) -> str:
    return f"echo start {name} $(date +%s.%N) >> {log}; sleep {seconds}; echo end {name} $(date +%s.%N) >> {log}"


def _spans(log: Path) -> dict[str, tuple[float, float]]:
    marks: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines():
        what, name, at = line.split()
        marks.setdefault(name, {})[what] = float(at)
    return {name: (m["start"], m["end"]) for name, m in marks.items()}


def test_batches_in_flight_share_max_parallel_and_gate_jobs_go_first(tmp_path: Path):
    log = tmp_path / "log.txt"
    work = tmp_path / "work"
    work.mkdir()
    executor = LocalExecutor(tmp_path / "jobs", 1)
    background = [spec(f"launch-{i}", _stamp(log, f"launch-{i}", 0.4), work, background=True) for i in range(3)]
    results: dict[str, list] = {}

    def run(name: str, specs: list) -> None:
        results[name] = executor.run(specs)

    first = threading.Thread(target=run, args=("launch", background))
    first.start()
    time.sleep(0.2)  # launch-0 holds the only slot; launch-1 and launch-2 wait
    gate = threading.Thread(target=run, args=("trial", [spec("trial-0", _stamp(log, "trial-0", 0.1), work)]))
    gate.start()
    first.join(30)
    gate.join(30)
    executor.close()
    assert all(r.state == "ok" for rs in results.values() for r in rs), results
    spans = _spans(log)
    ordered = sorted(spans, key=lambda name: spans[name][0])
    assert ordered[:2] == ["launch-0", "trial-0"], ordered  # the gate job jumped the waiting launches
    edges = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert most == 1, "two batches in flight ran more jobs at once than max_parallel = 1"
