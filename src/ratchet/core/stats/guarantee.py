"""What each test of the gate promises, in one sentence, and what a trial's units cannot see.

Pure and import-light (no numpy): `ratchet check`, the report and the docs read these. No test can
certify a mean from a few units for every distribution (Bahadur & Savage 1956, Ann Math Stat
27:1115): a failure mode that no unit showed cannot be seen, so each guarantee names its condition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ratchet.core.vocab import GateTest

GATE_TESTS: tuple[GateTest, ...] = ("guarded_sign_flip", "sign_flip", "betting")
DEFAULT_TEST: GateTest = "guarded_sign_flip"

GUARANTEES: Mapping[str, str] = {
    "sign_flip": (
        "P(accept) <= the trial's level whenever the paired differences minus the margin are "
        "symmetric about 0 (exact; a candidate that wins a little on most units and loses a lot on "
        "a few is outside this guarantee)."
    ),
    "guarded_sign_flip": (
        "P(accept) <= the trial's level whenever the paired differences minus the margin are "
        "symmetric about 0 (exact); beyond that, Hall's skewness-corrected t test must reject too, which "
        "kept skewed nulls (lognormal, exponential, gamma(2), either direction) within the level in "
        "simulation, and a candidate whose units show a loss far below the other units' spread is "
        "rejected (the harmful-tail guard), but a rare large loss that no unit showed cannot be seen."
    ),
    "betting": (
        "P(accept) <= the trial's level, at every look, for every distribution of paired differences "
        "whose mean is at most the margin and whose units each lose at most gate.max_unit_loss (default: "
        "the width of target.metric_range) (Ville's inequality); a unit that loses more rejects the "
        "candidate (below_floor), but a loss beyond the floor that no unit showed cannot be seen."
    ),
    "binary": (
        "P(accept) <= the trial's level for every distribution of paired pass/fail units whose gain "
        "in pass rate is at most the margin (exact McNemar; exact unconditional bound with a margin)."
    ),
}
CONFIDENCE_RULED_OUT = 0.95  # the confidence of `ruled_out_frequency`


def guarantee(test: str) -> str:
    """The one-sentence guarantee of `test` (a GateTest, or "binary"). Raises KeyError otherwise."""
    return GUARANTEES[test]


def unseen_chance(frequency: float, units: int) -> float:
    """(1 - q) ** n: the chance that a failure mode of frequency q in [0, 1] shows on none of n >= 0
    units (0.95 ** 40 = 0.13). Raises ValueError on q outside [0, 1] or n < 0."""
    if not 0.0 <= frequency <= 1.0 or units < 0:
        raise ValueError(f"need 0 <= frequency <= 1 and units >= 0, got {frequency!r}, {units!r}")
    return (1.0 - frequency) ** units


def ruled_out_frequency(units: int, confidence: float = CONFIDENCE_RULED_OUT) -> float:
    """The smallest failure frequency q that n >= 1 units without a failure rule out at `confidence`:
    1 - (1 - confidence) ** (1 / n), about 3 / n at 95% ("rule of three"; Hanley & Lippman-Hand 1983,
    JAMA 249:1743). 1.0 when n == 0. Raises ValueError on n < 0 or confidence outside (0, 1)."""
    if units < 0 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need units >= 0 and 0 < confidence < 1, got {units!r}, {confidence!r}")
    return 1.0 if units == 0 else -math.expm1(math.log1p(-confidence) / units)
