"""The closed sets of Ratchet's words, each defined once with one line per value.

Every module that names a stage, a variant, a stop reason, a job's or a measurement's state uses
these types; `docs/ledger.md` lists the same values (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

Direction = Literal["max", "min"]
"""Whether larger (`max`) or smaller (`min`) values of the metric are better."""

ScoreKind = Literal["continuous", "binary"]
"""continuous: a metric per unit (paired sign-flip test); binary: pass/fail per unit (exact McNemar)."""

Stage = Literal["trial", "confirm", "holdout"]
STAGES: Mapping[str, str] = {
    "trial": "the paired comparison of a candidate against the champion",
    "confirm": "re-measurement of an accepted candidate on fresh units, at the same level",
    "holdout": "the final champion against the original baseline on fresh units, once per run",
}
"""The stages a plan is compiled for."""

JobStage = Literal["preflight", "dev", "trial", "confirm", "holdout", "launch", "calibrate"]
JOB_STAGES: Mapping[str, str] = {
    "preflight": "the baseline measured once before any attempt (its mean is the first champion figure)",
    "dev": "examples: a candidate measured alone on the dev split before its trial, for an agent that reads history",
    **STAGES,
    "launch": "an agent's own experiment, run on its request and charged to the budget",
    "calibrate": "`ratchet calibrate` measuring the champion, twice per seed, to learn its noise",
}
"""Why a job ran (`job.started` / `job.finished` data.stage)."""

Variant = Literal["champion", "candidate", "experiment"]
VARIANTS: Mapping[str, str] = {
    "champion": "the side being beaten: the current champion (the baseline at first, and in the holdout)",
    "candidate": "the side proposed: the submitted tree (the final champion in the holdout)",
    "experiment": "an agent's own experiment, outside any comparison",
}
"""Which side of a comparison a job measured."""

StopReason = Literal["budget_exhausted", "plateau", "target_reached", "val_exhausted", "agent_stopped",
                     "agent_unresponsive", "interrupted", "preflight_failed", "compared", "calibrated", "abandoned"]
STOP_REASONS: Mapping[str, str] = {
    "budget_exhausted": "a budget (data.budget names it) cannot cover the next attempt and the reserved holdout",
    "plateau": "gate.patience trials in a row ended without a promotion",
    "target_reached": "the champion's confidence bound reached gate.target",
    "val_exhausted": "examples: every val block has had its promotion, so val has no fresh block for another trial",
    "agent_stopped": "the agent said it has nothing more to propose",
    "agent_unresponsive": ("agent.max_idle_attempts attempts in a row ended because the agent did not work (it failed "
                           "to start, timed out, returned nothing usable, or its server did not answer); data.detail "
                           "names the last failure"),
    "interrupted": "Ctrl-C or SIGTERM: jobs were killed; the run can be resumed",
    "preflight_failed": "the baseline could not be measured at all before the first attempt",
    "compared": "a `ratchet compare` made its one comparison",
    "calibrated": "a `ratchet calibrate` measured the champion's noise (data.calibration; data.detail names a failure)",
    "abandoned": "`ratchet abandon` closed an interrupted run without resuming it",
}
"""Why a campaign stopped (`run.stopped` data.stop_reason)."""

LegOutcome = Literal["launch", "checkpoint", "submit", "on_exit", "none", "channel_refused", "start_failed"]
LEG_OUTCOMES: Mapping[str, str] = {
    "launch": "the agent queued launches and slept",
    "checkpoint": ("the agent slept with no launch queued: it is woken at once, its note echoed, no job run "
                   "(one of the attempt's sleeps)"),
    "submit": "the agent submitted a candidate",
    "on_exit": ("the CLI exited (exit code 0) with a new change in scope and no request: its workspace was "
                "harvested as the submission (agent.command.submit = \"on_exit\")"),
    "none": "the CLI ended without a request (it is reminded once, then the attempt ends)",
    "channel_refused": "the kernel refused the agent's channel (a symlink, a file in place of a folder)",
    "start_failed": ("the CLI did not start: bwrap could not run it, or it failed (a non-zero exit code) within a "
                     "second with nothing done (no request, no file changed); data.problem holds its stderr tail"),
}
"""How a command agent's leg ended (`agent.leg` data.outcome)."""

RunMode = Literal["compare", "calibrate"]
RUN_MODES: Mapping[str, str] = {
    "compare": "`ratchet compare`: one paired comparison of two revisions; never resumed",
    "calibrate": "`ratchet calibrate`: the champion measured twice per seed to learn its noise; never resumed",
}
"""What a run directory that is not a campaign holds (`run.started` data.mode; a campaign has none)."""

RunStatus = Literal["running", "stopped", "interrupted"]
RUN_STATUSES: Mapping[str, str] = {
    "running": "no stop recorded since the last start or resume (read as interrupted when no kernel holds the lock)",
    "stopped": "a final stop reason was recorded",
    "interrupted": "the last stop was `interrupted`: resumable",
}
"""A run's state as `ratchet status` reports it."""

JobState = Literal["ok", "failed", "timeout", "oom", "killed", "cancelled", "lost", "unknown", "skipped",
                   "unschedulable"]
JOB_STATES: Mapping[str, str] = {
    "ok": "exit code 0",
    "failed": "a non-zero exit code",
    "timeout": "killed at its timeout (by the kernel, or by a scheduler at the walltime)",
    "oom": "killed for using more memory than it was given (OUT_OF_MEMORY, a cgroup's OOM kill)",
    "killed": "ended by a signal the kernel did not send (a crash)",
    "cancelled": "killed by a cancel (Ctrl-C, a stop)",
    "lost": "the machine or the scheduler lost it (NODE_FAIL, PREEMPTED, BOOT_FAIL): it may run again",
    "unknown": "its state could not be read; never success",
    "skipped": ("not run, or stopped, because the candidate already failed on a unit of the same look (that "
                "look's verdict is `candidate_failed` whatever the rest would measure); no measurement"),
    "unschedulable": ("the scheduler can never start it (a pending reason such as BadConstraints, "
                      "PartitionNodeLimit, PartitionConfig): its reason names the scheduler's word; it was cancelled"),
}
"""How a job's process ended, before any metric is read."""

MetricState = Literal["ok", "no_metric", "bad_metric"]
METRIC_STATES: Mapping[str, str] = {
    "ok": "a finite number",
    "no_metric": "no single-line JSON object on stdout, or the last one lacks the key",
    "bad_metric": "the key is there but its value is not a finite number (a string, a bool, null, NaN, inf)",
}
"""What reading a benchmark's metric from its stdout gave."""

MeasurementState = Literal["ok", "failed", "timeout", "oom", "killed", "cancelled", "lost", "unknown", "skipped",
                           "unschedulable", "no_metric", "bad_metric"]
"""A benchmark job's recorded state (`job.finished` data.state): its JobState, or, for a job that
ended ok, no_metric / bad_metric when no usable metric was read."""

PValueKind = Literal["exact", "bound", "monte_carlo"]
"""How a p-value was computed (printed next to it):
- exact: the test's null distribution enumerated in full (sign-flip up to EXACT_MAX_UNITS, McNemar);
- bound: a conservative upper bound of the p-value (the unconditional margin test's sup over a
  grid, the betting test's 1 / max wealth by Ville's inequality);
- monte_carlo: (1 + count) / (B + 1) over B random sign flips, valid (never optimistic) but random."""

Spending = Literal["linear", "pocock"]
"""How a trial's level is spread over its looks: `linear` level * t (default), `pocock` (for comparison)."""

GateTest = Literal["guarded_sign_flip", "sign_flip", "betting"]
"""The test of a continuous metric (`gate.test`); binary scores always use exact McNemar / the exact
unconditional margin test, valid for every distribution of paired pass/fail units.
- guarded_sign_flip (default): the sign-flip test plus the harmful-tail guard (`tail_guard`);
- sign_flip: the sign-flip permutation test of the mean paired difference alone (no guard);
- betting: a betting (e-process) test; under gate rules 2 the floor test (`floor`), which needs
  `gate.max_unit_loss` or `target.metric_range`; under rules 1 bets over the range (`betting`)."""


CLOSED_SETS: Mapping[str, Mapping[str, str]] = {
    "stage": STAGES, "job stage": JOB_STAGES, "variant": VARIANTS, "stop reason": STOP_REASONS,
    "leg outcome": LEG_OUTCOMES,
    "run mode": RUN_MODES, "run status": RUN_STATUSES, "job state": JOB_STATES, "metric state": METRIC_STATES,
}
"""Every closed set with its meanings, by name (what the docs list)."""

for _literal, _meanings in ((Stage, STAGES), (JobStage, JOB_STAGES), (Variant, VARIANTS),
                            (StopReason, STOP_REASONS), (LegOutcome, LEG_OUTCOMES), (RunMode, RUN_MODES),
                            (RunStatus, RUN_STATUSES),
                            (JobState, JOB_STATES), (MetricState, METRIC_STATES)):
    assert set(get_args(_literal)) == set(_meanings), _literal
assert set(get_args(MeasurementState)) == set(JOB_STATES) | set(METRIC_STATES)
