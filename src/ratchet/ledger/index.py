"""`runs/<run_id>/index.sqlite`: a query index derived from the ledger, rebuildable at any time.

The events are the truth; this file only makes status and history queries cheap. `Index.apply`
adds one event in one transaction (idempotent: re-applying a stored event is a no-op), `rebuild`
re-creates the file from the events, `sync` brings it up to date (rebuilding when it disagrees
with the events). SQLite in WAL mode, so readers (status) do not block the writer.

Tables: meta(key, value JSON), events(seq, ts, kind, prev, digest, data JSON),
attempts(attempt, ...), plans(seq, ...), judgments(seq, ...), jobs(job_id, ...),
promotions(seq, ...), chain(segment, ...). Intervals are stored as two columns `interval_lo`,
`interval_hi`. `chain` hashes the ledger's bytes in segments (prefix.py), so a reader can check that
events.jsonl still starts with the lines the index was built from without re-reading them.
`PRAGMA user_version` is the index's own schema version (INDEX_SCHEMA): `sync` rebuilds an index
of another version.

Reading `ratchet status`'s state from an index without writing it: snapshot.py (`Snapshot`, also
importable from here).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from ratchet.core.canonical import canonical_bytes, digest_bytes
from ratchet.core.errors import LedgerError
from ratchet.core.events import Event
from ratchet.core.payloads import (
    AgentHarvested,
    AgentLaunched,
    AgentLeg,
    AttemptGaveUp,
    AttemptStarted,
    AttemptSubmitted,
    ChampionPromoted,
    JobFinished,
    JobStarted,
    LedgerRepaired,
    ModelCalled,
    ModelReserved,
    Payload,
    RunAbandoned,
    RunResumed,
    RunStarted,
    RunStopped,
    TrialJudged,
    TrialPlanned,
)
from ratchet.ledger.prefix import SEGMENT_EVENTS, Segment, line_bytes
from ratchet.ledger.snapshot import Snapshot

__all__ = ["INDEX_SCHEMA", "SCHEMA", "TABLES", "Index", "Snapshot"]

INDEX_SCHEMA = 2
"""The index's schema version, kept in `PRAGMA user_version`. 1 (stored as 0): no `chain` table.
2: the `chain` table (prefix.py)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, kind TEXT NOT NULL,
    prev TEXT NOT NULL, digest TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    attempt INTEGER PRIMARY KEY, started_seq INTEGER, tree TEXT, summary TEXT, params TEXT,
    report_blob TEXT, launches INTEGER NOT NULL DEFAULT 0, verdict TEXT, reason TEXT,
    reason_text TEXT, estimate REAL, interval_lo REAL, interval_hi REAL, p_value REAL,
    units INTEGER, level REAL, confirm_verdict TEXT, confirm_reason TEXT, confirm_estimate REAL,
    confirm_p_value REAL, gave_up TEXT);
CREATE TABLE IF NOT EXISTS plans (
    seq INTEGER PRIMARY KEY, attempt INTEGER, trial INTEGER, stage TEXT, plan_digest TEXT,
    plan_blob TEXT, level REAL, jobs INTEGER);
CREATE TABLE IF NOT EXISTS judgments (
    seq INTEGER PRIMARY KEY, attempt INTEGER, stage TEXT, verdict TEXT, reason TEXT,
    reason_text TEXT, estimate REAL, interval_lo REAL, interval_hi REAL, p_value REAL,
    units INTEGER, level REAL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, attempt INTEGER, stage TEXT, variant TEXT, unit, state TEXT,
    value REAL, reason TEXT, elapsed_s REAL, cpu_s REAL, cached INTEGER, units_charged INTEGER,
    pid INTEGER, started_seq INTEGER, finished_seq INTEGER);
CREATE TABLE IF NOT EXISTS promotions (
    seq INTEGER PRIMARY KEY, attempt INTEGER, commit_hash TEXT, tree TEXT, estimate REAL,
    interval_lo REAL, interval_hi REAL);
CREATE TABLE IF NOT EXISTS chain (
    segment INTEGER PRIMARY KEY, end_seq INTEGER NOT NULL, end_offset INTEGER NOT NULL, sha256 TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_attempt ON jobs (attempt, stage);
CREATE INDEX IF NOT EXISTS events_by_kind ON events (kind);
"""

TABLES = ("meta", "events", "attempts", "plans", "judgments", "jobs", "promotions", "chain")
"""Every table of the index, in dump order."""

_SIDE_FILES = ("-wal", "-shm", "-journal")


def _sql(value: Any) -> Any:
    """A JSON value as an SQLite value: containers as canonical JSON text, bools as 0/1."""
    if isinstance(value, Mapping | list | tuple):
        return canonical_bytes(value).decode()
    if isinstance(value, bool):
        return int(value)
    return value


_JOB_KEYS = ("attempt", "stage", "variant", "unit")


def _pick(payload: Payload | None, *keys: str) -> dict[str, Any]:
    """`{key: the payload's field key}` for each key: None for an UNSET field and for no payload."""
    values = {key: getattr(payload, key) for key in keys} if payload is not None else dict.fromkeys(keys)
    return {key: None if value is UNSET else value for key, value in values.items()}


def _bounds(interval: Any) -> tuple[Any, Any]:
    if isinstance(interval, list | tuple) and len(interval) == 2:
        return interval[0], interval[1]
    return None, None


class Index:
    """The SQLite index at `path` (created with its schema on first use). Close it when done."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._segment: Segment | None = None  # the chain segment being appended to, read on first use
        self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        # The kernel's workers (`agent.workers`) record from their own threads, one at a time under
        # the kernel's lock: the connection may be used by a thread other than its creator.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA)
        if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM events)").fetchone()[0]:
            conn.execute(f"PRAGMA user_version = {INDEX_SCHEMA}")  # a new index: this build's schema
        return conn

    def schema_version(self) -> int:
        """The schema version this index was built with (INDEX_SCHEMA for one built by this build)."""
        return max(1, int(self._conn.execute("PRAGMA user_version").fetchone()[0]))

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Add `event` in one transaction. Returns False when it is already stored (a no-op).

        Raises LedgerError `ledger.index_stale` when the index holds a different event at that seq
        or the event does not follow the last stored one (call `rebuild` or `sync`).
        """
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            applied = self._apply(event)
        except BaseException:
            self._conn.execute("ROLLBACK")
            self._segment = None  # re-read from the rows the rollback kept
            raise
        self._conn.execute("COMMIT")
        return applied

    def rebuild(self, events: Iterable[Event]) -> None:
        """Delete the index file and re-create it from `events` (oldest first), in one transaction."""
        self._conn.close()
        for suffix in ("", *_SIDE_FILES):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._segment = None
        self._conn = self._connect()
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            for event in events:
                self._apply(event)
        except BaseException:
            self._conn.execute("ROLLBACK")
            self._segment = None
            raise
        self._conn.execute("COMMIT")

    def sync(self, events: Sequence[Event]) -> int:
        """Bring the index up to date with `events` (the whole ledger, oldest first): apply the
        new ones, or rebuild when the stored events disagree or the index is of another schema
        version (INDEX_SCHEMA). Returns how many events were added."""
        last = self.last_seq()
        if (last >= len(events) or (last >= 0 and self._digest_at(last) != events[last].digest)
                or self.schema_version() != INDEX_SCHEMA):
            self.rebuild(events)
            return len(events)
        for event in events[last + 1 :]:
            self.apply(event)
        return len(events) - last - 1

    def _digest_at(self, seq: int) -> str | None:
        row = self._conn.execute("SELECT digest FROM events WHERE seq = ?", (seq,)).fetchone()
        return row[0] if row else None

    def _apply(self, event: Event) -> bool:
        stored = self._digest_at(event.seq)
        if stored == event.digest:
            return False
        last = self.last_seq()
        if stored is not None or event.seq != last + 1:
            raise LedgerError(
                "ledger.index_stale",
                f"index {self.path} cannot take event seq {event.seq} after seq {last}",
                "rebuild the index from the events (Index.rebuild)",
            )
        data_json = _sql(event.data)
        self._conn.execute(
            "INSERT INTO events (seq, ts, kind, prev, digest, data) VALUES (?, ?, ?, ?, ?, ?)",
            (event.seq, event.ts, event.kind, event.prev, event.digest, data_json),
        )
        getattr(self, "_on_" + event.kind.replace(".", "_"))(event.seq, event.payload)
        self._chain(event.seq, event.digest, line_bytes(event.seq, event.ts, event.kind, event.prev, data_json))
        return True

    def _chain(self, seq: int, digest: str, line: bytes) -> None:
        """Add the line of event `seq` to the `chain` segments. Raises LedgerError
        `ledger.index_stale` when the line does not hash to the event's digest or the segments do
        not end on the event before (an index of an older schema: `sync` rebuilds it)."""
        if digest_bytes(line) != digest:
            raise LedgerError("ledger.index_stale", f"event seq {seq} does not re-encode to the line its digest names",
                              "rebuild the index from the events (Index.rebuild)")
        try:
            segment = (self._segment or self._last_segment()).add(seq, line)
        except ValueError as err:
            raise LedgerError("ledger.index_stale", f"index {self.path}: the chain segments cannot take event "
                              f"seq {seq}: {err}", "rebuild the index from the events (Index.rebuild)") from None
        self._conn.execute("INSERT OR REPLACE INTO chain (segment, end_seq, end_offset, sha256) VALUES (?, ?, ?, ?)",
                           segment.row())
        self._segment = segment

    def _last_segment(self) -> Segment:
        """The last `chain` segment as stored, its hash state rebuilt from the index's own event rows
        (at most prefix.SEGMENT_EVENTS lines); Segment.first() when there is none."""
        rows = self._conn.execute("SELECT segment, end_seq, end_offset, sha256 FROM chain ORDER BY segment DESC "
                                  "LIMIT 2").fetchall()
        if not rows:
            return Segment.first()
        number, end_seq, end, sha = rows[0]
        start = rows[1][2] if len(rows) > 1 else 0
        segment = Segment(number, start, start, number * SEGMENT_EVENTS - 1, hashlib.sha256())
        for seq, ts, kind, prev, digest, data in self._conn.execute(
                "SELECT seq, ts, kind, prev, digest, data FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq",
                (number * SEGMENT_EVENTS, end_seq)):
            line = line_bytes(seq, ts, kind, prev, data)
            if digest_bytes(line) != digest:
                break
            segment = segment.add(seq, line)
        if segment.row() != (number, end_seq, end, sha):
            raise LedgerError("ledger.index_stale", f"index {self.path}: chain segment {number} does not match "
                              "its events", "rebuild the index from the events (Index.rebuild)")
        return segment

    def _upsert(self, table: str, key: str, key_value: Any, **columns: Any) -> None:
        if key_value is None:
            return  # an event without its key (malformed data) has no row to update
        names = [key, *columns]
        updates = ", ".join(f"{name} = excluded.{name}" for name in columns)
        action = f"DO UPDATE SET {updates}" if columns else "DO NOTHING"
        self._conn.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)}) "
            f"ON CONFLICT({key}) {action}",
            [_sql(key_value), *(_sql(v) for v in columns.values())],
        )

    def _meta(self, **values: Any) -> None:
        for key, value in values.items():
            self._upsert("meta", "key", key, value=json.dumps(value))

    # -- one handler per event kind ------------------------------------------------------------

    def _on_run_started(self, seq: int, d: RunStarted) -> None:
        self._meta(
            run_id=d.run_id,
            state="running",
            stop_reason=None,
            stop_budget=None,
            baseline=msgspec.to_builtins(d.baseline),
            limits=d.limits,
        )

    def _on_run_resumed(self, seq: int, d: RunResumed) -> None:
        self._meta(state="running", stop_reason=None, stop_budget=None)

    def _on_attempt_started(self, seq: int, d: AttemptStarted) -> None:
        self._upsert("attempts", "attempt", d.attempt, started_seq=seq)

    def _on_agent_launched(self, seq: int, d: AgentLaunched) -> None:
        self._conn.execute(
            "INSERT INTO attempts (attempt, launches) VALUES (?, 1) "
            "ON CONFLICT(attempt) DO UPDATE SET launches = launches + 1",
            (d.attempt,),
        )

    def _on_agent_leg(self, seq: int, d: AgentLeg) -> None:
        return None  # kept in the events table; no projection

    def _on_agent_harvested(self, seq: int, d: AgentHarvested) -> None:
        return None  # kept in the events table; no projection

    def _on_model_reserved(self, seq: int, d: ModelReserved) -> None:
        return None  # kept in the events table; no projection

    def _on_model_called(self, seq: int, d: ModelCalled) -> None:
        return None  # kept in the events table; no projection

    def _on_attempt_submitted(self, seq: int, d: AttemptSubmitted) -> None:
        self._upsert(
            "attempts", "attempt", d.attempt, **_pick(d, "tree", "summary", "params", "report_blob")
        )

    def _on_attempt_gave_up(self, seq: int, d: AttemptGaveUp) -> None:
        self._upsert("attempts", "attempt", d.attempt, gave_up=d.reason)

    def _on_trial_planned(self, seq: int, d: TrialPlanned) -> None:
        plan = _pick(d, "attempt", "trial", "stage", "plan_digest", "plan_blob", "level", "jobs")
        self._upsert("plans", "seq", seq, **plan)

    def _on_job_started(self, seq: int, d: JobStarted) -> None:
        result = _pick(None, "value", "reason", "elapsed_s", "cpu_s", "cached", "units_charged", "finished_seq")
        job = _pick(d, *_JOB_KEYS, "pid")
        self._upsert("jobs", "job_id", d.job_id, **job, **result, state="running", started_seq=seq)

    def _on_job_finished(self, seq: int, d: JobFinished) -> None:
        result = _pick(d, *_JOB_KEYS, "state", "value", "reason", "elapsed_s", "cpu_s", "units_charged")
        cached = d.cached
        self._upsert("jobs", "job_id", d.job_id, **result, cached=cached, finished_seq=seq)

    def _on_trial_judged(self, seq: int, d: TrialJudged) -> None:
        lo, hi = _bounds(d.interval)
        judged = _pick(d, "verdict", "reason", "reason_text", "estimate", "p_value", "units", "level")
        judged.update(interval_lo=lo, interval_hi=hi)
        self._upsert("judgments", "seq", seq, attempt=d.attempt, stage=d.stage, **judged)
        if d.stage == "trial":
            self._upsert("attempts", "attempt", d.attempt, **judged)
        elif d.stage == "confirm":
            confirm = {f"confirm_{key}": judged[key] for key in ("verdict", "reason", "estimate", "p_value")}
            self._upsert("attempts", "attempt", d.attempt, **confirm)

    def _on_champion_promoted(self, seq: int, d: ChampionPromoted) -> None:
        lo, hi = _bounds(d.interval)
        promotion = _pick(d, "attempt", "tree", "estimate")
        self._upsert(
            "promotions", "seq", seq, **promotion, commit_hash=d.commit, interval_lo=lo, interval_hi=hi
        )

    def _on_run_stopped(self, seq: int, d: RunStopped) -> None:
        reason = d.stop_reason
        self._meta(
            state="interrupted" if reason == "interrupted" else "stopped",
            stop_reason=reason,
            stop_budget=d.budget,
        )

    def _on_run_abandoned(self, seq: int, d: RunAbandoned) -> None:
        self._meta(state="stopped", stop_reason="abandoned", stop_budget=None)

    def _on_ledger_repaired(self, seq: int, d: LedgerRepaired) -> None:
        return None

    # -- reading ---------------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._conn.execute(sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def last_seq(self) -> int:
        """The seq of the last stored event; -1 when there is none."""
        row = self._conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return -1 if row[0] is None else row[0]

    def query_meta(self) -> dict[str, Any]:
        """Run-level facts: run_id, state, stop_reason, stop_budget, baseline, limits."""
        return {row["key"]: json.loads(row["value"]) for row in self._rows("SELECT key, value FROM meta")}

    def query_events(self, kind: str | None = None, since_seq: int = -1) -> list[dict[str, Any]]:
        """Events after `since_seq` (optionally of one kind) as dicts with `data` parsed, oldest first."""
        rows = self._rows(
            "SELECT seq, ts, kind, prev, digest, data FROM events WHERE seq > ? AND (? IS NULL OR kind = ?) "
            "ORDER BY seq",
            (since_seq, kind, kind),
        )
        for row in rows:
            row["data"] = json.loads(row["data"])
        return rows

    def query_attempts(self) -> list[dict[str, Any]]:
        """One dict per attempt (columns of the attempts table, params parsed), by attempt number."""
        rows = self._rows("SELECT * FROM attempts ORDER BY attempt")
        for row in rows:
            row["params"] = None if row["params"] is None else json.loads(row["params"])
        return rows

    def query_jobs(self, attempt: int | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """Jobs (optionally of one attempt and/or state), by job_id; `cached` as bool or None."""
        rows = self._rows(
            "SELECT * FROM jobs WHERE (? IS NULL OR attempt = ?) AND (? IS NULL OR state = ?) "
            "ORDER BY job_id",
            (attempt, attempt, state, state),
        )
        for row in rows:
            row["cached"] = None if row["cached"] is None else bool(row["cached"])
        return rows

    def query_judgments(self, stage: str | None = None) -> list[dict[str, Any]]:
        """Every trial.judged (optionally of one stage), oldest first."""
        return self._rows(
            "SELECT * FROM judgments WHERE (? IS NULL OR stage = ?) ORDER BY seq", (stage, stage)
        )

    def query_promotions(self) -> list[dict[str, Any]]:
        """Every champion.promoted, oldest first."""
        return self._rows("SELECT * FROM promotions ORDER BY seq")

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table, sorted: for comparing two indexes."""
        return {
            table: sorted(self._conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in TABLES
        }
