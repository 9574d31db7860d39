"""The harmful-tail guard: reject a candidate whose units show a loss far outside their own spread.

A candidate that wins a little on most units and loses a lot on a few (a training trick that
sometimes diverges, a cache that is sometimes cold) is outside the sign-flip test's guarantee: once
one of its large losses shows, the mean may still look like a gain. The guard rejects at a look when
the worst paired difference lies more than TAIL_GUARD_SCALES robust standard deviations below the
median: min(d) < median(d) - TAIL_GUARD_SCALES * s, s = 1.4826 * MAD (the normal-consistent median
absolute deviation; Hampel 1974, JASA 69:383), or the mean absolute deviation from the median when
the MAD is 0. It only ever rejects, so it cannot raise a test's type-I error; it costs power only
when the noise itself has a heavy lower tail. It cannot see a failure mode that no unit showed
(the chance of that is (1 - q) ** n, `guarantee.unseen_chance`).
"""

from __future__ import annotations

import numpy as np

TAIL_GUARD_SCALES = 6.0  # robust SDs below the median; Gaussian noise: P(trigger) < 1e-6 per 40 units
MAD_TO_SD = 1.4826  # the MAD of a normal distribution times this is its standard deviation


def harmful_tail(d: np.ndarray, scales: float = TAIL_GUARD_SCALES) -> bool | np.ndarray:
    """Whether the guard fires on paired differences d, shape (n,) or (trials, n), metric units.

    Returns a bool for 1-D input, a bool array (trials,) for 2-D; False for n < 3 (no spread to
    judge against) or when every difference equals the median.
    """
    x = np.atleast_2d(np.asarray(d, dtype=float))
    if x.shape[1] < 3:
        out = np.zeros(x.shape[0], dtype=bool)
    else:
        median = np.median(x, axis=1)
        dev = np.abs(x - median[:, None])
        s = MAD_TO_SD * np.median(dev, axis=1)
        s = np.where(s > 0, s, dev.mean(axis=1))
        out = (s > 0) & (x.min(axis=1) < median - scales * s)
    return bool(out[0]) if np.ndim(d) == 1 else out
