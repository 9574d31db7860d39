"""The report's two plots (matplotlib, Agg backend): the champion's cumulative confirmed gain over
attempts, and each attempt's effect with its interval. Writes PNG files; returns their paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

VERDICT_COLORS = {"accepted": "tab:green", "rejected": "tab:red", "inconclusive": "tab:orange"}


def champion_plot(attempts: Sequence[Mapping[str, Any]], promotions: Sequence[Mapping[str, Any]],
                  holdout: Mapping[str, Any] | None, path: Path) -> Path:
    """Step plot of the champion's cumulative confirmed gain (metric units, positive = better) after
    each attempt, with each promotion's interval, and the holdout's estimate at the end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_attempt = {p["attempt"]: p for p in promotions}
    xs, ys, total = [0], [0.0], 0.0
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for a in attempts:
        p = by_attempt.get(a["attempt"])
        if p is not None and p.get("estimate") is not None:
            total += p["estimate"]
            lo, hi = p.get("interval") or (p["estimate"], p["estimate"])
            ax.errorbar([a["attempt"]], [total], yerr=[[p["estimate"] - lo], [hi - p["estimate"]]],
                        fmt="o", color="tab:green", capsize=3)
        xs.append(a["attempt"])
        ys.append(total)
    ax.step(xs, ys, where="post", color="tab:blue", label="champion (sum of confirmed gains)")
    if holdout and holdout.get("estimate") is not None:
        lo, hi = holdout.get("interval") or (holdout["estimate"],) * 2
        x = (xs[-1] if xs else 0) + 0.5
        ax.errorbar([x], [holdout["estimate"]], yerr=[[holdout["estimate"] - lo], [hi - holdout["estimate"]]],
                    fmt="D", color="black", capsize=4, label="holdout vs baseline")
    ax.axhline(0.0, color="grey", lw=0.8)
    _integer_ticks(ax)
    ax.set_xlabel("attempt")
    ax.set_ylabel("gain over baseline")
    ax.set_title("Champion over attempts")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def effects_plot(attempts: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Each measured attempt's estimated effect (candidate - champion, positive = better) with its
    interval, coloured by verdict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for a in attempts:
        if a.get("estimate") is None:
            continue
        est = a["estimate"]
        lo, hi = a.get("interval") or (est, est)
        ax.errorbar([a["attempt"]], [est], yerr=[[max(est - lo, 0.0)], [max(hi - est, 0.0)]], fmt="o",
                    capsize=3, color=VERDICT_COLORS.get(a.get("verdict") or "", "tab:gray"))
    ax.axhline(0.0, color="grey", lw=0.8)
    _integer_ticks(ax)
    ax.set_xlabel("attempt")
    ax.set_ylabel("effect vs champion")
    ax.set_title("Each attempt's effect (green accepted, red rejected, orange inconclusive)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _integer_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
