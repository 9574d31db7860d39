"""A search run's parameters in the report: the metric against each parameter (slice plots) and
each parameter's importance.

Data: each attempt's recorded parameters (`attempt.submitted` data.params) and its candidate's raw
mean (`trial.judged` data.candidate_mean, metric units), from the `ratchet status` result's
attempts. Each candidate was measured on its own trial's units against the champion of its time,
so the means carry that trial's noise; the plots say so in their captions.

Importance: Optuna's fANOVA evaluator (`optuna.importance.get_param_importances` with
`FanovaImportanceEvaluator(seed=IMPORTANCE_SEED)`; Hutter, Hoos & Leyton-Brown 2014) over the
attempts rebuilt as completed Optuna trials with the contract's search space. Pure apart from
matplotlib and Optuna; figures in, figures out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.present.report.plots import FIGSIZE_IN, VERDICT_COLORS

IMPORTANCE_SEED = 0
"""Seed of the fANOVA forest, so a report re-rendered from the same ledger draws the same bars."""

MIN_IMPORTANCE_TRIALS = 3
"""Measured attempts with distinct parameters needed before importances are drawn."""

SLICE_COLUMNS = 3
"""Slice plots per row."""

IMPORTANCE_METHOD = (
    "Importance: Optuna's fANOVA evaluator (get_param_importances, seed 0) over the measured attempts, "
    "each attempt's candidate mean as its value; importances sum to 1. Each candidate was measured on "
    "its own trial's units, so its mean carries that trial's noise, and with few attempts the ranking "
    "is rough."
)


def measured(attempts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The attempts that recorded parameters and a candidate mean."""
    return [a for a in attempts if a.get("params") and a.get("candidate_mean") is not None]


def slice_figure(attempts: Sequence[Mapping[str, Any]], space: Mapping[str, Mapping[str, Any]], metric: str) -> Any:
    """One panel per parameter of `space` (the contract's agent.search.space): each measured
    attempt's candidate mean (y, metric units) against its value of that parameter (x; a log axis
    for `log = true`, one slot per choice for a categorical), coloured by verdict, the champion
    ringed. None when no attempt was measured."""
    from ratchet.present.report.plots import _pyplot

    rows = measured(attempts)
    names = [name for name in space if any(name in a["params"] for a in rows)]
    if not rows or not names:
        return None
    plt = _pyplot()
    columns = min(SLICE_COLUMNS, len(names))
    lines = -(-len(names) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(FIGSIZE_IN[0], 2.6 * lines), squeeze=False, sharey=True)
    for k, name in enumerate(names):
        ax = axes[k // columns][k % columns]
        spec = space[name]
        choices = [str(c) for c in spec.get("choices") or []]
        for a in rows:
            if name not in a["params"]:
                continue
            value = a["params"][name]
            x = choices.index(str(value)) if choices and str(value) in choices else value
            colour = VERDICT_COLORS.get(a.get("verdict") or "", "tab:gray")
            ax.scatter([x], [a["candidate_mean"]], color=colour, s=28, zorder=3,
                       edgecolors="black" if a.get("promoted") else "none", linewidths=1.2)
        if choices:
            ax.set_xticks(range(len(choices)))
            ax.set_xticklabels(choices, rotation=30, fontsize=8)
            ax.set_xlim(-0.5, len(choices) - 0.5)
        elif spec.get("log"):
            ax.set_xscale("log")
        ax.set_xlabel(name)
        if k % columns == 0:
            ax.set_ylabel(f"candidate mean ({metric})"[:40])
        ax.grid(alpha=0.3)
    for k in range(len(names), lines * columns):
        axes[k // columns][k % columns].set_visible(False)
    fig.suptitle("The metric against each parameter (ringed: promoted)", fontsize=10)
    fig.tight_layout()
    return fig


def importances(attempts: Sequence[Mapping[str, Any]], space: Mapping[str, Mapping[str, Any]],
                direction: str) -> dict[str, float] | None:
    """Each parameter's importance (IMPORTANCE_METHOD), largest first, or None with fewer than
    MIN_IMPORTANCE_TRIALS measured attempts with distinct parameters or fewer than 2 parameters."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if len(space) < 2:
        return None
    dists: dict[str, Any] = {}
    for name, spec in space.items():
        if spec.get("type") == "categorical":
            dists[name] = CategoricalDistribution(list(spec["choices"]))
        elif spec.get("type") == "int":
            dists[name] = IntDistribution(int(spec["low"]), int(spec["high"]), log=bool(spec.get("log")))
        else:
            dists[name] = FloatDistribution(float(spec["low"]), float(spec["high"]), log=bool(spec.get("log")))
    trials, seen = [], set()
    for a in measured(attempts):
        params = dict(a["params"])
        key = repr(sorted(params.items()))
        if set(params) != set(dists) or key in seen:
            continue
        seen.add(key)
        try:
            trials.append(optuna.trial.create_trial(params=params, distributions=dists,
                                                    value=float(a["candidate_mean"])))
        except ValueError:
            continue  # a value outside the space as declared now (the contract changed): left out
    if len(trials) < MIN_IMPORTANCE_TRIALS:
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize" if direction == "min" else "maximize")
    study.add_trials(trials)
    evaluator = optuna.importance.FanovaImportanceEvaluator(seed=IMPORTANCE_SEED)
    found = optuna.importance.get_param_importances(study, evaluator=evaluator)
    return {name: float(value) for name, value in found.items()}


def importance_figure(values: Mapping[str, float]) -> Any:
    """Horizontal bars of `values` (parameter -> importance), the largest on top."""
    from ratchet.present.report.plots import _pyplot

    plt = _pyplot()
    names = list(values)[::-1]
    fig, ax = plt.subplots(figsize=(FIGSIZE_IN[0], 0.5 + 0.4 * len(names)))
    ax.barh(names, [values[n] for n in names], color="tab:blue")
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("importance (sums to 1)")
    ax.set_title("Parameter importance (fANOVA)", fontsize=10)
    fig.tight_layout()
    return fig
