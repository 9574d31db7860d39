"""A centered moving average over WINDOW samples (1: no smoothing)."""

WINDOW = 1


def smooth(xs, window=None):
    """The moving average of `xs` (a list of floats) over `window` samples (default WINDOW)."""
    w = max(1, int(window or WINDOW))
    half = w // 2
    out = []
    for i in range(len(xs)):
        part = xs[max(0, i - half): i + half + 1]
        out.append(sum(part) / len(part))
    return out
