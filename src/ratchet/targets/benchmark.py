"""The benchmark target: a command that prints its metric as JSON, run once per variant and unit.

`parse_metric` is pure: the metric is the key `target.metric` of the LAST line of stdout that is a
single-line JSON object; other lines (logs, progress bars, a trailing non-JSON line) are ignored.
`benchmark_job` builds the JobSpec of one variant on one unit (the seed reaches the command through
`target.seed_env`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ratchet.compute.base import OUTPUT_CAP_BYTES, JobSpec, Resources, SandboxSpec
from ratchet.compute.env import job_env

MetricState = Literal["ok", "no_metric", "bad_metric"]
"""What reading the metric gave.

ok: a finite number. no_metric: no JSON object on stdout, or the last one lacks the key.
bad_metric: the key is there but its value is not a finite number (a string, a bool, null, NaN, inf).
"""

QUOTE_CHARS = 200
"""Characters of stdout (its tail) or of a value quoted in a reason."""


@dataclass(frozen=True)
class MetricReading:
    """state: see MetricState. value: the metric as a float when state is ok, else None.
    reason: one line saying what was read or why nothing usable was."""

    state: MetricState
    value: float | None
    reason: str


class _Number(float):
    """A JSON number that remembers how it was written (so "1e999" is quoted as written)."""

    text: str

    def __new__(cls, text: str) -> _Number:
        obj = super().__new__(cls, float(text))
        obj.text = text
        return obj


class _NonFinite:
    """A NaN, Infinity or -Infinity token, which Python's json accepts but JSON does not."""

    def __init__(self, text: str):
        self.text = text


def _last_json_object(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        text = line.strip()
        if not (text.startswith("{") and text.endswith("}")):
            continue
        try:
            value = json.loads(text, parse_float=_Number, parse_constant=_NonFinite)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _quote(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else "..." + text[-QUOTE_CHARS:]


def parse_metric(stdout: str, metric: str) -> MetricReading:
    """Read `metric` from the last single-line JSON object of `stdout`; see MetricState.

    The reason quotes the stdout tail (last QUOTE_CHARS characters) when no JSON object was printed,
    the last object's keys when the key is missing, and the offending text when the value is bad.
    """
    found = _last_json_object(stdout)
    if found is None:
        tail = _quote(stdout.strip()) or "(empty)"
        return MetricReading("no_metric", None, f"no JSON object on stdout; its tail: {tail!r}")
    if metric not in found:
        keys = ", ".join(sorted(found)) or "none"
        return MetricReading(
            "no_metric", None, f"the last JSON object on stdout has no key {metric!r} (keys: {keys})"
        )
    value = found[metric]
    if isinstance(value, _NonFinite):
        return MetricReading("bad_metric", None, f"{metric} is {value.text}, not a finite number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = _quote(json.dumps(value, default=lambda v: getattr(v, "text", str(v))))
        return MetricReading("bad_metric", None, f"{metric} is {shown}, not a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        text = value.text if isinstance(value, _Number) else _quote(str(value))
        return MetricReading("bad_metric", None, f"{metric} is {text}, not a finite number")
    return MetricReading("ok", number, f"{metric} = {number!r}")


def benchmark_job(
    *,
    job_id: str,
    command: str,
    workdir: Path,
    seed: int,
    seed_env: str,
    variant: str,
    unit: str,
    timeout_s: float,
    sandbox: SandboxSpec | None = None,
    resources: Resources | None = None,
    output_cap_bytes: int = OUTPUT_CAP_BYTES,
    extra_env: Mapping[str, str] | None = None,
) -> JobSpec:
    """The JobSpec running `command` (through /bin/sh -c) in `workdir` (the variant's clean
    checkout) for one variant on one unit, with the allow-listed environment of `job_env`
    (`seed_env`=seed). sandbox/resources: None means SandboxSpec()/Resources().
    Raises RatchetError `job.reserved_env` for a reserved `seed_env`."""
    env = job_env(seed_env, seed, job_id, variant, unit, extra_env, sandbox=sandbox)
    return JobSpec(
        job_id=job_id,
        argv=("/bin/sh", "-c", command),
        workdir=Path(workdir),
        env=env,
        timeout_s=timeout_s,
        resources=resources or Resources(),
        sandbox=sandbox or SandboxSpec(),
        output_cap_bytes=output_cap_bytes,
    )
