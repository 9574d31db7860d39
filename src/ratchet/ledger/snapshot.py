"""The state `ratchet status` shows, read without writing from a run's index.sqlite (index.py).

`Snapshot.prefix_end` checks that the ledger's bytes start with exactly the lines the index was
built from (their segment hashes, prefix.py); `Snapshot.status_state` then reads the state from the
index: the cheap path for long runs. Anything it cannot vouch for returns None, and the caller
verifies and folds the ledger (state.fold). Every value mirrors fold's field for field.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ratchet.core.canonical import MAX_SAFE_INT
from ratchet.core.events import Event
from ratchet.core.state import AttemptState, BudgetUsed, Champion, Judgment, RunState, TreeRef, fold
from ratchet.ledger.prefix import SegmentRow, prefix_end

_SESSION_KINDS = ("run.started", "run.resumed", "ledger.repaired", "run.abandoned")
"""The events whose timestamps (with their predecessors' and the last event's) fix the wall clock:
a session's start, and the events fold does not count (a repair, an abandon), whose predecessor
ends the session before them (without it an abandoned run's wall reads 0 s)."""


class Snapshot:
    """A read-only view of an index.sqlite, frozen at `open` (one read transaction: a kernel
    writing meanwhile is not seen). `last`: (seq, digest) of its last event, None when empty;
    `segments`: its `chain` rows (empty for an index of an older schema). Close it when done."""

    def __init__(self, conn: sqlite3.Connection, last: tuple[int, str] | None, segments: list[SegmentRow]):
        self._conn = conn
        self.last = last
        self.segments = segments
        self._checked: tuple[bytes, int | None] | None = None  # (raw, prefix_end(raw)) of the last check

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Snapshot | None:
        """Open the index at `path` read-only (no write, no schema change); None when it is missing
        or unreadable."""
        if not Path(path).is_file():
            return None
        try:
            conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        try:
            conn.execute("BEGIN")
            row = conn.execute(
                "SELECT seq, digest FROM events WHERE seq = (SELECT MAX(seq) FROM events)"
            ).fetchone()
        except sqlite3.Error:
            conn.close()
            return None
        try:
            query = "SELECT segment, end_seq, end_offset, sha256 FROM chain ORDER BY segment"
            segments = conn.execute(query).fetchall()
        except sqlite3.Error:
            segments = []  # an index of schema 1: nothing vouches for the ledger's bytes
        return cls(conn, None if row is None else (row[0], row[1]), segments)

    def close(self) -> None:
        """End the read transaction and close the connection."""
        self._conn.close()

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prefix_end(self, raw: bytes) -> int | None:
        """How many bytes of `raw` (the ledger's) are exactly the lines this index was built from
        (prefix.prefix_end over its `chain` rows, ending on its last event), or None."""
        if self.last is None:
            return None
        if self._checked is None or self._checked[0] is not raw:
            self._checked = (raw, prefix_end(raw, self.segments, *self.last))
        return self._checked[1]

    def status_state(self, raw: bytes) -> RunState | None:
        """The RunState fields `ratchet status` reads, or None.

        Only when `raw` (the ledger's bytes) starts with exactly the lines this index was built from
        (`prefix_end`), each verified by the kernel before it was indexed. Filled: run_id, state,
        stop_reason, stop_budget, baseline, champion, baseline_mean, champion_mean, promotions,
        attempts, holdout, budget_used, limits, last_seq. Not filled (defaults; never resume from
        this): finished_jobs, running_jobs, open_trial, trial counters, salt and the other
        run.started facts. The wall clock comes from `fold` itself over the events it reads (session
        starts, repairs, the event before each, the last event); the raw means from the preflight's
        jobs rows and the trial.judged and champion.promoted events; every other value mirrors fold
        field for field. None as well when the index holds values fold would read differently (a
        non-integer attempt number, more than one run.started, a job finished twice, GPU seconds
        other than null or 0, which the jobs table does not keep) or on any
        SQLite error.
        """
        if self.last is None or self.prefix_end(raw) is None:
            return None
        try:
            return _status_state(self._conn, raw, self.last[0])
        except (sqlite3.Error, ValueError, TypeError, KeyError):
            return None


def _number(value: Any) -> Any:
    """A REAL column's value as json.loads read it from the ledger: canonical JSON writes an
    integral float as an integer (2.0 as 2), and SQLite's REAL affinity turned it back into 2.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INT:
        return int(value)
    return value


def _pair(lo: Any, hi: Any) -> tuple[Any, Any] | None:
    return None if lo is None and hi is None else (_number(lo), _number(hi))


_NO_GPU = (b'"gpu_s":null', b'"gpu_s":0,', b'"gpu_s":0}')
"""GPU seconds that add nothing to fold's GPU hours (null or 0, as every job without a GPU records)."""


def _status_state(conn: sqlite3.Connection, raw: bytes, last: int) -> RunState | None:
    counts = dict(conn.execute("SELECT kind, COUNT(*) FROM events GROUP BY kind").fetchall())
    first = conn.execute("SELECT kind FROM events WHERE seq = 0").fetchone()
    odd_attempts = conn.execute(
        "SELECT (SELECT COUNT(*) FROM attempts WHERE typeof(attempt) != 'integer') + "
        "(SELECT COUNT(*) FROM judgments WHERE stage = 'confirm' AND typeof(attempt) != 'integer')"
    ).fetchone()[0]
    gpu = raw.count(b'"gpu_s":') != sum(map(raw.count, _NO_GPU))  # the jobs table has no GPU seconds to sum
    if counts.get("run.started") != 1 or first != ("run.started",) or odd_attempts or gpu:
        return None
    budget = _budget(conn, counts, last)
    if budget is None:
        return None
    meta = {key: json.loads(value) for key, value in conn.execute("SELECT key, value FROM meta")}
    baseline = meta.get("baseline") or {}
    ref = TreeRef(baseline.get("commit"), baseline.get("tree"))
    promoted = conn.execute(
        "SELECT commit_hash, tree, estimate, interval_lo, interval_hi, attempt FROM promotions "
        "ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    champion = Champion(ref.commit, ref.tree)
    if promoted is not None:
        commit, tree, estimate, lo, hi, attempt = promoted
        champion = Champion(commit, tree, _number(estimate), _pair(lo, hi), attempt)
    means = _Means(conn)
    return RunState(
        run_id=meta.get("run_id"),
        state=meta.get("state") or "running",
        stop_reason=meta.get("stop_reason"),
        stop_budget=meta.get("stop_budget"),
        baseline=ref,
        champion=champion,
        baseline_mean=means.baseline,
        baseline_guardrails=MappingProxyType(means.baseline_guards),
        champion_mean=means.champion,
        promotions=counts.get("champion.promoted", 0),
        attempts=_attempts(conn, means),
        holdout=_last_judgment(conn, "holdout", means),
        budget_used=budget,
        limits=MappingProxyType(dict(meta.get("limits") or {})),
        last_seq=last,
    )


class _Means:
    """The raw means fold reads (the index keeps them only in its events table): `baseline` (the
    preflight's mean), `champion` (as last measured: the preflight, each trial's champion side, each
    promotion's mean, in ledger order), `judged` (trial.judged seq -> (champion_mean, candidate_mean))
    and `trial` (attempt -> the means of its last stage-trial judgment); `guards` (trial.judged seq ->
    its guardrails), `trial_guards` (attempt -> those of its last stage-trial judgment) and
    `baseline_guards` (each guardrail's mean over the preflight's ok jobs)."""

    def __init__(self, conn: sqlite3.Connection):
        total, units, last_seq = 0.0, 0, -1
        for value, charged, seq in conn.execute(  # summed in ledger order, as fold does
            "SELECT value, units_charged, finished_seq FROM jobs WHERE stage = 'preflight' AND state = 'ok' "
            "AND value IS NOT NULL AND finished_seq IS NOT NULL ORDER BY finished_seq"
        ):
            total += float(value)
            units += charged or 1
            last_seq = seq
        self.baseline: float | None = total / units if units else None
        latest: tuple[int, Any] = (last_seq, self.baseline)
        self.judged: dict[int, tuple[Any, Any]] = {}
        self.trial: dict[Any, tuple[Any, Any]] = {}
        self.guards: dict[int, tuple[Any, ...]] = {}
        self.trial_guards: dict[Any, tuple[Any, ...]] = {}
        sums: dict[str, list[float]] = {}
        for (data,) in conn.execute("SELECT data FROM events WHERE kind = 'job.finished' ORDER BY seq"):
            d = json.loads(data)
            if d.get("stage") == "preflight" and d.get("state") == "ok" and d.get("value") is not None:
                for name, value in (d.get("guardrails") or {}).items():
                    acc = sums.setdefault(name, [0.0, 0.0])
                    acc[0], acc[1] = acc[0] + float(value), acc[1] + 1
        self.baseline_guards = {name: total / count for name, (total, count) in sums.items()}
        promotions = 0
        submitted_at: dict[Any, int] = {}  # attempt -> promotions recorded when it was submitted
        for seq, kind, data in conn.execute(
            "SELECT seq, kind, data FROM events WHERE kind IN ('attempt.submitted', 'trial.judged', "
            "'champion.promoted') ORDER BY seq"
        ):
            d = json.loads(data)
            if kind == "attempt.submitted":
                submitted_at[d.get("attempt")] = promotions
                continue
            if kind == "champion.promoted":
                promotions += 1
                if d.get("mean") is not None:
                    latest = (seq, d["mean"])
                continue
            pair = (d.get("champion_mean"), d.get("candidate_mean"))
            self.judged[seq] = pair
            self.guards[seq] = tuple(d.get("guardrails") or ())
            if d.get("stage") == "trial":
                self.trial[d.get("attempt")] = pair
                self.trial_guards[d.get("attempt")] = self.guards[seq]
                if pair[0] is not None and submitted_at.get(d.get("attempt"), promotions) == promotions:
                    latest = (seq, pair[0])  # not a trial of a champion replaced since (several workers)
        self.champion: Any = latest[1]


_JUDGMENT_COLUMNS = (
    "stage, verdict, reason, reason_text, estimate, interval_lo, interval_hi, p_value, units, level, attempt, seq"
)


def _judgment(row: Sequence[Any], means: _Means) -> Judgment:
    stage, verdict, reason, text, estimate, lo, hi, p_value, units, level, attempt, seq = row
    champion_mean, candidate_mean = means.judged.get(seq, (None, None))
    return Judgment(stage, verdict, reason, text, _number(estimate), _pair(lo, hi), _number(p_value),
                    units, _number(level), attempt, champion_mean, candidate_mean, means.guards.get(seq, ()))


def _last_judgment(conn: sqlite3.Connection, stage: str, means: _Means) -> Judgment | None:
    row = conn.execute(
        f"SELECT {_JUDGMENT_COLUMNS} FROM judgments WHERE stage = ? ORDER BY seq DESC LIMIT 1", (stage,)
    ).fetchone()
    return None if row is None else _judgment(row, means)


def _attempts(conn: sqlite3.Connection, means: _Means) -> tuple[AttemptState, ...]:
    """AttemptState per attempts row, as fold builds them (confirm: the attempt's last confirm judgment)."""
    query = f"SELECT {_JUDGMENT_COLUMNS} FROM judgments WHERE stage = 'confirm' ORDER BY seq"
    confirms = {row[-2]: _judgment(row, means) for row in conn.execute(query)}
    promoted = {attempt for (attempt,) in conn.execute("SELECT attempt FROM promotions")}
    started = {}  # attempt -> its attempt.started data (the worker, the attempt it re-bases)
    for (data,) in conn.execute("SELECT data FROM events WHERE kind = 'attempt.started' ORDER BY seq"):
        d = json.loads(data)
        started[d.get("attempt")] = d
    out = []
    for row in conn.execute(
        "SELECT attempt, tree, summary, params, report_blob, launches, verdict, reason, reason_text, "
        "estimate, interval_lo, interval_hi, p_value, units, level, gave_up FROM attempts ORDER BY attempt"
    ):
        (attempt, tree, summary, params, blob, launches, verdict, reason, text, estimate, lo, hi, p_value,
         units, level, gave_up) = row
        params = None if params is None else json.loads(params)
        out.append(AttemptState(
            attempt=attempt, tree=tree, summary=summary,
            params=MappingProxyType(dict(params)) if isinstance(params, Mapping) else None,
            report_blob=blob, launches=launches, verdict=verdict, reason=reason, reason_text=text,
            estimate=_number(estimate), interval=_pair(lo, hi), p_value=_number(p_value), units=units,
            level=_number(level), confirm=confirms.get(attempt), gave_up=gave_up,
            champion_mean=means.trial.get(attempt, (None, None))[0],
            candidate_mean=means.trial.get(attempt, (None, None))[1], promoted=attempt in promoted,
            guardrails=means.trial_guards.get(attempt, ()),
            worker=started.get(attempt, {}).get("worker"), rebases=started.get(attempt, {}).get("rebases"),
            revises=started.get(attempt, {}).get("revises"),
        ))
    return tuple(out)


def _budget(conn: sqlite3.Connection, counts: Mapping[str, int], last: int) -> BudgetUsed | None:
    """BudgetUsed as fold sums it: job-units and CPU hours over job.finished in ledger order (one
    jobs row per job.finished, else None), attempts counted, the wall clock from fold itself."""
    finished, evaluations = conn.execute(
        "SELECT COUNT(*), SUM(CASE WHEN cached THEN 0 ELSE CAST(COALESCE(units_charged, 0) AS INTEGER) END) "
        "FROM jobs WHERE finished_seq IS NOT NULL"
    ).fetchone()
    if finished != counts.get("job.finished", 0) or not isinstance(evaluations, int | None):
        return None
    cpu_hours = 0.0
    for (cpu_s,) in conn.execute(  # summed in ledger order, as fold does, for the same last bits
        "SELECT cpu_s FROM jobs WHERE finished_seq IS NOT NULL AND NOT cached ORDER BY finished_seq"
    ):
        cpu_hours += float(cpu_s or 0.0) / 3600.0
    marks = ", ".join("?" for _ in _SESSION_KINDS)
    query = f"SELECT seq FROM events WHERE kind IN ({marks})"
    starts = [seq for (seq,) in conn.execute(query, _SESSION_KINDS)]
    wanted = sorted({last, *starts, *(seq - 1 for seq in starts if seq > 0)})
    clock = fold(_events(conn, wanted)).budget_used.wall_s
    return BudgetUsed(counts.get("attempt.started", 0), evaluations or 0, cpu_hours, 0.0, clock)


def _events(conn: sqlite3.Connection, seqs: Sequence[int]) -> list[Event]:
    rows = conn.execute(
        f"SELECT seq, ts, kind, prev, data, digest FROM events WHERE seq IN ({', '.join('?' for _ in seqs)}) "
        "ORDER BY seq",
        list(seqs),
    ).fetchall()
    return [Event(seq, ts, kind, prev, json.loads(data), digest)
            for seq, ts, kind, prev, data, digest in rows]
