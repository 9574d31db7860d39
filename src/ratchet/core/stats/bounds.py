"""The bound printed with a verdict: the same test inverted at the deciding look's threshold.

For a test whose p-value p(m) of H0: mean(d) <= m is non-decreasing in m (sign-flip, the betting
test, the binary margin test), the set of null means it rejects at threshold c is an interval
(-inf, m*). The bound is the largest m found with p(m) <= c: a one-sided lower confidence bound for
the mean gain at the confidence 1 - c of that look, direction-normalised, metric units. The search
brackets the margin itself, so the trial is accepted if and only if bound >= margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable

BISECTIONS = 48  # halvings of the bracket: the bound is found to (hi - lo) * 2**-48


def lower_bound(
    p_of: Callable[[float], float], threshold: float, margin: float, low: float, high: float, accepted: bool
) -> float | None:
    """The largest null mean m in [low, high] the test rejects, p_of(m) <= threshold (bisection).

    p_of: the test's p-value as a function of the null mean m, non-decreasing in m; margin: the null
    tested (inside [low, high]); accepted: the verdict at the margin (p <= threshold there), which
    picks the bracket, so the result is >= margin if and only if accepted, whatever float rounding
    p_of adds; p_of(high) should exceed the threshold (no data rejects every mean). Returns None when
    not accepted and even `low` is not rejected (the test cannot bound the gain from below).
    Raises ValueError unless low <= margin <= high, all finite.
    """
    if not (all(math.isfinite(v) for v in (low, margin, high)) and low <= margin <= high):
        raise ValueError(f"need finite low <= margin <= high, got {low!r}, {margin!r}, {high!r}")
    if accepted:
        lo, hi = margin, high
    elif low < margin and p_of(low) <= threshold:
        lo, hi = low, margin
    else:
        return None
    for _ in range(BISECTIONS):
        mid = lo + (hi - lo) / 2.0
        if mid in (lo, hi):
            break
        if p_of(mid) <= threshold:
            lo = mid
        else:
            hi = mid
    return lo
