"""The measurement cache (`.ratchet/cache/`): a measurement reused when everything that affects it is
identical, shared by runs and `compare` when `target.cache` is true.

The key is the canonical digest of the tree hash, the command, the seed and its variable, the
environment Ratchet sets (minus what differs per job: RATCHET_JOB_ID, HOME, TMPDIR), the sandbox mode
and network, the timeout, the resources, the metric and the target kind. Only successful
measurements (state ok) are stored; an unreadable or corrupt entry is a miss, never an error.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ratchet.compute.base import Resources
from ratchet.core.canonical import digest, is_digest
from ratchet.ledger.files import write_exclusive

CACHE_FORMAT = "ratchet.cache/1"
"""Part of every key: bump it when what a cached measurement means changes."""

PER_JOB_ENV = ("RATCHET_JOB_ID", "HOME", "TMPDIR")
"""Variables that differ between two runs of the same measurement; left out of the key."""


def cache_key(
    *,
    tree: str,
    command: str | list[str] | tuple[str, ...],
    seed: int | str,
    seed_env: str,
    env_set_by_ratchet: Mapping[str, str],
    sandbox_mode: str,
    network: bool,
    timeout_s: float,
    resources: Resources | Mapping[str, Any],
    metric: str,
    kind: str,
) -> str:
    """`sha256:<hex>` digest of everything that affects one measurement (see the module docstring).
    Raises CanonicalError for values with no JSON form (e.g. a NaN timeout)."""
    env = {k: v for k, v in env_set_by_ratchet.items() if k not in PER_JOB_ENV}
    res = dataclasses.asdict(resources) if dataclasses.is_dataclass(resources) else dict(resources)
    return digest(
        {
            "format": CACHE_FORMAT,
            "tree": tree,
            "command": list(command) if not isinstance(command, str) else command,
            "seed": seed,
            "seed_env": seed_env,
            "env": env,
            "sandbox": {"mode": sandbox_mode, "network": network},
            "timeout_s": float(timeout_s),
            "resources": res,
            "metric": metric,
            "kind": kind,
        }
    )


class MeasurementCache:
    """Measurements stored as `<dir>/<2 hex>/<64 hex>.json` ({"key", "measurement"}), one per key."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)

    def _path(self, key: str) -> Path:
        if not is_digest(key):
            raise ValueError(f"{key!r} is not a sha256 digest")
        hexpart = key.split(":", 1)[1]
        return self.dir / hexpart[:2] / f"{hexpart}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The measurement stored under `key`, or None (absent, unreadable, corrupt or not ok)."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                entry = json.loads(f.read())
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        measurement = entry.get("measurement")
        if not isinstance(measurement, dict) or measurement.get("state") != "ok":
            return None
        return measurement

    def put(self, key: str, measurement: Mapping[str, Any]) -> bool:
        """Store `measurement` (a JSON-able mapping with "state") under `key` when its state is ok,
        written exclusively (temp file with O_EXCL|O_NOFOLLOW, fsync, rename). Returns True when
        stored, False when not cacheable (state not ok). An existing entry is replaced."""
        if measurement.get("state") != "ok":
            return False
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"key": key, "measurement": dict(measurement)}, sort_keys=True, allow_nan=False)
        write_exclusive(path, data.encode())
        return True
