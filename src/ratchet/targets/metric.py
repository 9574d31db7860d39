"""Reading a benchmark's metric from a job's stdout (pure).

The metric is the key `target.metric` of the LAST line of stdout that is a single-line JSON object;
other lines (logs, progress bars, a trailing non-JSON line) are ignored. When there is none, the
reason says whether a JSON object was printed over several lines (`indent=2`) or on stderr: both are
common, and neither is read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ratchet.core.vocab import MetricState

QUOTE_CHARS = 200
"""Characters of stdout (its tail) or of a value quoted in a reason."""

MULTILINE_SCAN_CHARS = 64 * 1024
"""How much of stdout's end is searched for a JSON object printed over several lines, characters."""

MULTILINE_STARTS_MAX = 64
"""At most this many lines starting with `{` (the last ones) are tried as such an object's start."""


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


def _multiline_object(stdout: str) -> tuple[dict[str, Any], int] | None:
    """(the last JSON object of stdout's end printed over several lines, its line count), or None."""
    lines = stdout[-MULTILINE_SCAN_CHARS:].splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("{")][-MULTILINE_STARTS_MAX:]
    decoder = json.JSONDecoder()
    for i in reversed(starts):
        text = "\n".join(lines[i:]).lstrip()
        try:
            value, end = decoder.raw_decode(text)
        except (ValueError, RecursionError):
            continue
        spans = text[:end].count("\n") + 1
        if isinstance(value, dict) and spans > 1:
            return value, spans
    return None


def _where_else(stdout: str, stderr: str, metric: str) -> str:
    """What a job that printed no usable single-line JSON object on stdout printed instead: a JSON
    object over several lines of stdout, or a JSON line with `metric` on stderr ("" when neither)."""
    spread = _multiline_object(stdout)
    if spread is not None:
        has = "with" if metric in spread[0] else "without"
        return (f"; stdout holds a JSON object {has} {metric!r} printed over {spread[1]} lines (indent): only a "
                "JSON object on a single line is read (json.dumps without indent)")
    found = _last_json_object(stderr)
    if found is not None and metric in found:
        return f"; stderr has a JSON line with {metric!r}, but only stdout is read: print it to stdout"
    return ""


def _quote(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else "..." + text[-QUOTE_CHARS:]


def parse_metric(stdout: str, metric: str, stderr: str = "") -> MetricReading:
    """Read `metric` from the last single-line JSON object of `stdout`; see MetricState.

    The reason quotes the stdout tail (last QUOTE_CHARS characters) when no single-line JSON object
    was printed, and then says when stdout holds a JSON object over several lines or `stderr` (the
    job's, or its tail) a JSON line with the metric; the last object's keys when the key is
    missing; the offending text when the value is bad.
    """
    found = _last_json_object(stdout)
    if found is None:
        tail = _quote(stdout.strip()) or "(empty)"
        return MetricReading("no_metric", None, f"no single-line JSON object on stdout; its tail: {tail!r}"
                             + _where_else(stdout, stderr, metric))
    if metric not in found:
        keys = ", ".join(sorted(found)) or "none"
        also = _where_else("", stderr, metric)
        return MetricReading(
            "no_metric", None, f"the last JSON object on stdout has no key {metric!r} (keys: {keys})" + also
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
