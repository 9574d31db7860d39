"""What the HTML report shows beyond the status result, read from the run: a search run's parameter
space, and an examples run's per-example results of its final measurement.

Per example, from what the run kept: the holdout's `job.finished` events (which shard measured
which examples, on which side), each shard's stdout in `jobs/<job_id>/` (the shard runner's records:
status, output, stderr tail), its `judged.jsonl` next to it (the kernel's verdict per check, written
since the report shows it) and the project's examples file (input and expected output, matched by
example id). Anything missing is said in the row, never fatal. Reports are for the user: they may
show val and test examples, which no agent ever reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.core.payloads import JobFinished
from ratchet.ledger.rundir import RunDir

OUTPUT_CHARS = 600
"""Characters of an input, an expected or an actual output shown per example (the rest is cut)."""

MAX_RECORD_BYTES = 4 * 1024 * 1024
"""A shard stdout line longer than this is not parsed (an output near the cap): its row says so."""


def search_space(agent: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The search space (`agent.search.space`, each parameter's spec as a dict) of the contract's
    agent section as a dict (`Contract.agent.model_dump()`), None when the agent is not a search."""
    search = agent.get("search") if agent.get("kind") == "search" else None
    return dict(search["space"]) if isinstance(search, Mapping) and search.get("space") else None


def _split_of(job_id: str) -> str:
    """`a0000-holdout-dev-l0-candidate-s000` -> dev; the holdout plan's own shards measure test."""
    for name in ("dev", "val"):
        if f"-holdout-{name}-" in job_id:
            return name
    return "test"


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """A shard's stdout as {example id: its runner record}; {} when missing."""
    out: dict[str, dict[str, Any]] = {}
    try:
        with open(path, "rb") as lines:
            for raw in lines:
                if len(raw) > MAX_RECORD_BYTES:
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("id"), str):
                    out[record["id"]] = record
    except OSError:
        pass
    return out


def _clip(text: Any) -> str:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return value if len(value) <= OUTPUT_CHARS else value[:OUTPUT_CHARS] + f" … ({len(value) - OUTPUT_CHARS:,} more)"


def example_rows(run: RunDir, examples_file: Path, finished: Iterable[JobFinished]) -> list[dict[str, Any]]:
    """One row per example the final measurement judged (holdout stage; the final champion on test,
    dev and val), test first: {"split", "id", "name", "input", "expected", "output", "status",
    "passed", "checks" ([[type, passed, reason]] or None: not kept), "error", "baseline_passed"
    (test only: the baseline's verdict on the same example, None elsewhere)}. Texts are cut at
    OUTPUT_CHARS. [] when the run measured no holdout."""
    from ratchet.core.errors import RatchetError
    from ratchet.targets.examples import load_examples

    try:
        known = {ex.id: ex for ex in load_examples(examples_file).examples}
    except (RatchetError, OSError):
        known = {}
    rows: list[dict[str, Any]] = []
    baseline: dict[str, bool] = {}
    for job in finished:
        if job.stage != "holdout" or not isinstance(job.examples, dict):
            continue
        if job.variant == "champion":  # the baseline's side of the test split
            baseline.update({k: bool(v[0]) for k, v in job.examples.items() if isinstance(v, list) and v})
            continue
        files = run.job_files(job.job_id)
        records, judged = _records(files.stdout), _records(files.judged)
        for example_id, compact in job.examples.items():
            rows.append(_row(_split_of(job.job_id), example_id, compact, known.get(example_id),
                             records.get(example_id), judged.get(example_id)))
    order = {"test": 0, "val": 1, "dev": 2}
    rows.sort(key=lambda r: (order[r["split"]], r["passed"], r["name"] or r["id"]))
    for r in rows:
        r["baseline_passed"] = baseline.get(r["id"]) if r["split"] == "test" else None
    return rows


def _row(split: str, example_id: str, compact: Any, example: Any, record: Mapping[str, Any] | None,
         judged: Mapping[str, Any] | None) -> dict[str, Any]:
    passed, status = (bool(compact[0]), str(compact[1])) if isinstance(compact, list) and len(compact) in (2, 4) else (
        False, "unknown")
    error = ""
    if judged is not None and not judged.get("passed"):
        error = str(judged.get("reason") or "")
    elif record is not None and status != "ok":
        tail = str(record.get("stderr_tail") or "").strip().splitlines()
        error = tail[-1] if tail else status
    checks: Sequence[Any] | None = judged.get("checks") if judged is not None else None
    return {
        "split": split, "id": example_id, "name": getattr(example, "name", None),
        "input": _clip(example.input) if example is not None else None,
        "expected": _clip(example.expected_output) if example is not None else None,
        "output": _clip(_output(record)) if record is not None else None,
        "status": status, "passed": passed,
        "checks": [list(c) for c in checks] if isinstance(checks, list) else None,
        "error": _clip(error) if error else "",
    }


def _output(record: Mapping[str, Any]) -> str:
    """A record's output: a script's stdout, or a prompt solution's first reply (its samples')."""
    samples = record.get("samples")
    if isinstance(samples, list) and samples and isinstance(samples[0], dict):
        return str(samples[0].get("output", ""))
    return str(record.get("output", ""))
