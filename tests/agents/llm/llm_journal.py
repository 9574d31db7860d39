"""A journal over a directory, as the loop's ledger-backed one will be: blobs in a real `BlobStore`
(fsynced), reservations and call records appended to `calls.jsonl` (fsynced per line). A new
`DirJournal` on the same directory is what a resumed kernel sees."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ratchet.agents.llm.records import CallRecord
from ratchet.core.budget import Account, Charge, Reservation, ResourceName, Settlement
from ratchet.ledger.blobs import BlobStore


class DirJournal:
    """The Journal protocol over `root` (blobs/ and calls.jsonl)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.blobs = BlobStore(self.root / "blobs")
        self.log = self.root / "calls.jsonl"

    def put_blob(self, data: bytes) -> str:
        return self.blobs.put_bytes(data)

    def get_blob(self, digest: str) -> bytes:
        return self.blobs.get_bytes(digest)

    def _append(self, entry: dict[str, Any]) -> None:
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def record_reservation(self, reservation: Reservation, request_digest: str, request_blob: str) -> None:
        self._append({"kind": "reserved", "key": reservation.key, "charge": reservation.charge.to_json(),
                      "request_digest": request_digest, "request_blob": request_blob})

    def record_call(self, record: CallRecord) -> None:
        self._append({"kind": "called", **record.to_json()})

    def entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def calls(self) -> list[CallRecord]:
        return [CallRecord.from_json({k: v for k, v in e.items() if k != "kind"})
                for e in self.entries() if e["kind"] == "called"]

    def find_call(self, key: str) -> CallRecord | None:
        found = [c for c in self.calls() if c.key == key]
        return found[-1] if found else None

    def budget(self, limits: dict[ResourceName, float]) -> Account:
        """The budget as a resumed kernel rebuilds it from this journal."""
        records: list[Reservation | Settlement] = []
        for e in self.entries():
            if e["kind"] == "reserved":
                records.append(Reservation(e["key"], Charge.from_json(e["charge"])))
            else:
                records.append(Settlement(e["key"], Charge.from_json(e["charged"])))
        return Account.replay(limits, records)
