"""The versions of the rules the gate judges by (`GATE_RULES`), and the version a run recorded.

Pure, and imports nothing of the gate: the tests (`stats/`), the gate and the loop all read it.
"""

from __future__ import annotations

from ratchet.core.errors import RatchetError

GATE_RULES = 2
"""The version of the rules a verdict is judged by, recorded in `run.started` data.gate.rules (a run
that records none was judged by rules 1). `ratchet verify` re-derives each run's verdicts with the
rules it recorded; a run is resumed only under the rules it started with.

- 1: harmful-tail guard at a fixed 6 robust SDs; `betting` bets over the two-sided range
  [lo - hi, hi - lo] capped at 0.75 / mu0; examples agents shown each trial's val means.
- 2: harmful-tail guard threshold chosen by the number of units, the worst loss measured against the
  larger of the IQR-based SD and the upper tail (`tail_guard`: <= 1e-3 false alarms per look of
  Gaussian differences at every n); `guarded_sign_flip` also needs Hall's skewness-corrected t to
  reject; `betting` is the floor e-process (`stats/floor.py`: aGRAPA
  bets capped at 0.99 / (m - L) above the floor L = -`gate.max_unit_loss`, a unit below it
  rejected as `below_floor`, scores outside `target.metric_range` no longer refused); examples
  agents shown dev results and of val
  only whether the candidate was promoted.
"""

RESUMABLE_RULES = frozenset({GATE_RULES})
"""The gate rules this build judges new trials by: a run recorded under others verifies, never resumes."""


def recorded_rules(gate: object) -> int:
    """The gate rules a run recorded (`run.started` data.gate), 1 when it records none (runs from
    before the rules were recorded). Raises RatchetError `gate.bad_rules` for a value that is not a
    known rules version."""
    value = gate.get("rules", 1) if isinstance(gate, dict) else 1
    if isinstance(value, bool) or value not in range(1, GATE_RULES + 1):
        raise RatchetError("gate.bad_rules", f"run.started records gate rules {value!r}; this build knows "
                           f"rules 1 to {GATE_RULES}", hint="verify it with the Ratchet version that recorded it")
    return int(value)
