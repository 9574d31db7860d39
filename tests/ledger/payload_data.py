"""Event data built through the payload models (core.payloads), for the ledger tests."""

from __future__ import annotations

from typing import Any

from ratchet.core.payloads import PAYLOADS


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """(kind, data) built through the kind's payload model (core.payloads): the fixture cannot drift
    from what the kernel writes, since the same models refuse anything else on append."""
    return kind, PAYLOADS[kind](**fields).to_data()


def started(run_id: str = "r", **fields: Any) -> dict[str, Any]:
    """A minimal valid run.started data (core.payloads.RunStarted) for run `run_id`."""
    data = {"run_id": run_id, "contract_digest": "sha256:" + "1" * 64, "baseline": {"commit": "c", "tree": "t"},
            "salt": "s", "sandbox": "none", "target_kind": "benchmark", "direction": "max", "limits": {}}
    return ev("run.started", **{**data, **fields})[1]


def judged(attempt: int, verdict: str, stage: str = "trial") -> dict[str, Any]:
    """A minimal valid trial.judged data."""
    return ev("trial.judged", attempt=attempt, stage=stage, verdict=verdict, reason="r", reason_text="t",
              estimate=None, interval=None, p_value=None, units=0, look=0, level=0.05)[1]
