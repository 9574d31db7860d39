"""Guardrail results as people read them (pure): one line per guardrail with its estimate, bound and
allowance, for verdict lines, `status`, reports, `watch` and the agents' feedback (docs/gate.md,
Guardrails)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _num(value: Any) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:+.4g}"


def guardrail_line(g: Mapping[str, Any]) -> str:
    """`guardrail accuracy: change -0.0031 (lower bound -0.0112, allowance -0.02): passed`: the mean
    paired change (direction-normalised, positive = better), the test's lower bound of it and the
    allowance it must stay above, then the status (core.guardrails.GUARDRAIL_STATUSES)."""
    allowance = g.get("allowance")
    shown = f"-{allowance:g}" if isinstance(allowance, int | float) else "-"
    return (f"guardrail {g.get('name')}: change {_num(g.get('estimate'))} (lower bound {_num(g.get('bound'))}, "
            f"allowance {shown}): {g.get('status')}")


def guardrail_lines(items: Sequence[Mapping[str, Any]] | None, indent: str = "") -> list[str]:
    """One `guardrail_line` per recorded guardrail result, each with `indent`; [] without guardrails."""
    return [indent + guardrail_line(g) for g in items or ()]
