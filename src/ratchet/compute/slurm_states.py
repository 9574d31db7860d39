"""What Slurm says, read: `scontrol -o show job` records of an array's tasks, the scheduler's job
states, and how a task's wrapper outcome and its scheduler record become one JobResult. Pure.

The wrapper's `outcome.json` is the primary source (exit code, signal, times, output tails); the
scheduler's word says how the task was ended when it was ended from outside (TIMEOUT, OUT_OF_MEMORY,
NODE_FAIL, PREEMPTED, CANCELLED...) and is kept as `JobResult.scheduler_state`. A task the scheduler
forgot (past MinJobAge) with no outcome file is `unknown`, never success.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ratchet.compute.base import JobResult, JobState
from ratchet.compute.outcome import describe_end

PENDING_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "SPECIAL_EXIT",
})
"""Scheduler states of a task that has not ended (it runs, waits, or will run again)."""

ENDED_FROM_OUTSIDE: Mapping[str, JobState] = {
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",
    "OUT_OF_MEMORY": "oom",
    "NODE_FAIL": "lost",
    "PREEMPTED": "lost",
    "BOOT_FAIL": "lost",
    "CANCELLED": "cancelled",
    "REVOKED": "cancelled",
}
"""Terminal states in which the scheduler ended the task, and the JobState each becomes (this wins
over the wrapper's own account, which only saw a signal)."""

ENDED_BY_ITSELF = frozenset({"COMPLETED", "FAILED"})
"""Terminal states of a task that ended by itself: the wrapper's outcome says how."""

TERMINAL_STATES = frozenset(ENDED_FROM_OUTSIDE) | ENDED_BY_ITSELF

NEVER_STARTS_REASONS = frozenset({
    "BadConstraints", "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "InvalidAccount",
    "InvalidQOS", "DependencyNeverSatisfied", "QOSMinGRES", "QOSMinCpuNotSatisfied",
})
"""Pending reasons of a task the scheduler can never start as asked (its shape exceeds what the
partition, account or QOS allow, or names a feature no node has). Reasons ending in `PerJob` or
`PerJobLimit` (a per-job QOS or association limit the job alone exceeds) count too, and so does
`ReqNodeNotAvail` naming a node the cluster does not have (`TaskRecord.nodes_missing`, set by the
executor, which knows the nodes). A node that exists but is down (`ReqNodeNotAvail`, `Resources`)
may come back: those keep waiting."""

_FIELD = re.compile(r"(?:^|\s)([A-Za-z/:]+)=(\S*)")
_ARRAY_ID = re.compile(r"^(\d+)(?:;\S+)?$")


@dataclass(frozen=True)
class TaskRecord:
    """One array task as `scontrol -o show job` shows it.

    index: ArrayTaskId. slurm_job_id: the task's own JobId (None for tasks still pending in the
    array's aggregate record). state: JobState= (the scheduler's word, e.g. "OUT_OF_MEMORY"),
    reason: Reason=. exit_code, exit_signal: ExitCode=<code>:<signal>. restarts: Restarts= (how often
    it was requeued). run_time_s: RunTime= in seconds.
    """

    index: int
    slurm_job_id: str | None
    state: str
    reason: str
    exit_code: int | None
    exit_signal: int | None
    restarts: int
    run_time_s: float
    name: str = ""
    """JobName= (the run's token, for an array Ratchet submitted)."""
    nodes_missing: bool = False
    """The reason is ReqNodeNotAvail and names a node the cluster does not have (see
    `unavailable_nodes`; the executor checks them against the cluster's nodes)."""

    @property
    def base_state(self) -> str:
        """The state word without a qualifier ("CANCELLED by 0" -> "CANCELLED")."""
        return self.state.split()[0] if self.state else ""

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (a RUNNING 0:0 record is not a result)."""
        return self.base_state in TERMINAL_STATES

    @property
    def never_starts(self) -> bool:
        """Whether the task waits (pending or held) for a reason that can never clear
        (NEVER_STARTS_REASONS, or a required node that does not exist: `nodes_missing`)."""
        return self.base_state == "PENDING" and (never_starts(self.reason) or self.nodes_missing)


def never_starts(reason: str) -> bool:
    """Whether a pending reason (`Reason=` of `scontrol show job`) says the job can never start."""
    word = reason.split(",")[0]
    return word in NEVER_STARTS_REASONS or word.endswith(("PerJob", "PerJobLimit"))


def unavailable_nodes(reason: str) -> list[str]:
    """The nodes a `ReqNodeNotAvail` reason names ("ReqNodeNotAvail,_UnavailableNodes:n[1-2],gpu7"
    -> ["n1", "n2", "gpu7"]); [] for another reason or none named. Raises nothing: a part it
    cannot expand is kept as written."""
    if not reason.startswith("ReqNodeNotAvail"):
        return []
    _, sep, listed = reason.partition("UnavailableNodes:")
    return expand_hostlist(listed.strip(" _,")) if sep else []


def expand_hostlist(hostlist: str) -> list[str]:
    """Slurm's compressed host list as names: "n[1-3,7],gpu[01-02],login" -> n1 n2 n3 n7 gpu01
    gpu02 login (zero padding kept); a part it cannot read is kept as written."""
    names: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[\]]*)\[([^\]]*)\]|([^,\[\]]+)", hostlist):
        if plain:
            names.append(plain)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            first, last = whole(low), whole(high or low)
            if first is not None and last is not None and last - first < MAX_ARRAY_INDICES:
                names += [f"{prefix}{i:0{len(low)}d}" for i in range(first, last + 1)]
            else:
                names.append(f"{prefix}[{part}]")
    return names


def parse_array_id(sbatch_stdout: str) -> str:
    """The job id printed by `sbatch --parsable` ("1234" or "1234;cluster"). Raises ValueError."""
    match = _ARRAY_ID.match(sbatch_stdout.strip())
    if not match:
        raise ValueError(f"sbatch printed {sbatch_stdout.strip()!r}, not a job id")
    return match.group(1)


def expand_indices(spec: str) -> list[int]:
    """Array indices from an ArrayTaskId value: "7", "3-6", "1,4-5,9", "0-999%8" (the throttle after
    % is ignored). Raises ValueError on anything else, and on a range wider than MAX_ARRAY_INDICES."""
    indices: list[int] = []
    for part in spec.split("%")[0].split(","):
        if "-" in part:
            low, high = (whole(end) for end in part.split("-", 1))
            if low is None or high is None or high - low >= MAX_ARRAY_INDICES:
                raise ValueError(f"{part!r} is not an array index range")
            indices.extend(range(low, high + 1))
        elif part:
            index = whole(part)
            if index is None:
                raise ValueError(f"{part!r} is not an array index")
            indices.append(index)
    return indices


MAX_ARRAY_INDICES = 4_000_001
"""Slurm's largest MaxArraySize (indices 0..4,000,000): a wider range in its output is not read."""


def whole(text: str) -> int | None:
    """`text` as a non-negative integer when it is ASCII digits only, else None (`str.isdigit`
    also admits digits such as `¹` that `int` refuses)."""
    return int(text) if text.isascii() and text.isdigit() else None


def index_ranges(indices: Iterable[int]) -> str:
    """Array indices as Slurm writes them, sorted and merged: {5, 0, 1, 2} -> "0-2,5"."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i != run[-1] + 1:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(i)
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(parts)


def parse_duration_hms(value: str) -> float:
    """Seconds from Slurm's [days-]HH:MM:SS (also MM:SS); 0.0 for an unparsable value."""
    days = 0
    if "-" in value:
        head, value = value.split("-", 1)
        days = whole(head) or 0
    parts = [whole(p) for p in value.split(":")]
    if not 1 <= len(parts) <= 3:
        return 0.0
    seconds = 0
    for part in parts:
        if part is None:
            return 0.0
        seconds = seconds * 60 + part
    return float(days * 86400 + seconds)


def parse_show_job(text: str) -> dict[int, TaskRecord]:
    """Task records by array index from `scontrol -o show job <array id>` (one record per line; a
    pending aggregate record such as ArrayTaskId=3-999%8 stands for each of its indices). Lines
    that are not array tasks are skipped."""
    records: dict[int, TaskRecord] = {}
    for line in text.splitlines():
        fields: dict[str, str] = {}
        for key, value in _FIELD.findall(line):
            fields.setdefault(key, value)
        if "ArrayTaskId" not in fields or "JobState" not in fields:
            continue
        try:
            indices = expand_indices(fields["ArrayTaskId"])
        except ValueError:
            continue
        code, _, sig = fields.get("ExitCode", "").partition(":")
        single = len(indices) == 1
        for index in indices:
            records[index] = TaskRecord(
                index=index,
                slurm_job_id=fields.get("JobId") if single else None,
                state=fields["JobState"],
                reason=fields.get("Reason", ""),
                exit_code=whole(code),
                exit_signal=whole(sig),
                restarts=whole(fields.get("Restarts", "")) or 0,
                run_time_s=parse_duration_hms(fields.get("RunTime", "")),
                name=fields.get("JobName", ""),
            )
    return records


DEFAULT_MAX_ARRAY_SIZE = 1001
"""Slurm's default MaxArraySize (array indices 0..1000), assumed when the cluster's cannot be read."""


def config_value(show_config: str, name: str) -> str | None:
    """The value of `name` in `scontrol show config` output ("MinJobAge               = 30 sec"
    -> "30 sec"), or None when absent."""
    for line in show_config.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return None


def max_array_size(show_config: str) -> int | None:
    """MaxArraySize from `scontrol show config` output ("MaxArraySize            = 1001"), or None
    when it is absent or not a positive number."""
    value = config_value(show_config, "MaxArraySize") or ""
    return whole(value) or None


POLL_SHARE_OF_MIN_JOB_AGE = 0.5
"""The longest poll interval as a share of the cluster's MinJobAge: a task ending just after a
poll is seen at the next one with half of MinJobAge to spare (slurmctld purges ended jobs on its
own cadence, and a poll round may take seconds)."""


def min_job_age_s(show_config: str) -> float | None:
    """MinJobAge in seconds from `scontrol show config` output ("MinJobAge = 30 sec"): how long
    the controller keeps an ended job without accounting. None when absent or unreadable; 0.0
    means ended jobs are never purged."""
    value = (config_value(show_config, "MinJobAge") or "").split()
    return float(whole(value[0]) or 0) if value and whole(value[0]) is not None else None


def poll_ceiling_s(min_job_age: float | None) -> float | None:
    """The longest poll interval that still sees every ended task before the controller forgets it
    (MinJobAge x POLL_SHARE_OF_MIN_JOB_AGE, at least 1 s); None when MinJobAge is unknown or 0
    (never purged)."""
    if not min_job_age:
        return None
    return max(1.0, min_job_age * POLL_SHARE_OF_MIN_JOB_AGE)


def poll_bounds(poll_min_s: float, poll_max_s: float, ceiling: float | None) -> tuple[float, float]:
    """(first, longest) poll interval in seconds: the contract's poll_min_s and poll_max_s, both
    clamped to `ceiling` (`poll_ceiling_s`) when one is known."""
    if ceiling is None:
        return poll_min_s, poll_max_s
    return min(poll_min_s, ceiling), min(poll_max_s, ceiling)


def split_arrays(tasks: int, max_size: int) -> list[range]:
    """The fewest consecutive slices of `tasks` task positions that each fit one array of at most
    `max_size` tasks (indices 0..max_size-1), as equal as possible: split_arrays(1200, 1001) ->
    [range(0, 600), range(600, 1200)]. [] for no task. Raises ValueError for max_size < 1."""
    if max_size < 1:
        raise ValueError(f"max_size must be >= 1, not {max_size}")
    if tasks <= 0:
        return []
    parts = math.ceil(tasks / max_size)
    bounds = [round(k * tasks / parts) for k in range(parts + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(parts)]


def time_limit_minutes(timeout_s: float, grace_s: float) -> int:
    """`sbatch --time` in whole minutes (Slurm's unit): the job's timeout plus the grace, rounded
    up, at least 1."""
    return max(1, math.ceil((timeout_s + grace_s) / 60.0))


def scheduler_says(record: TaskRecord) -> str:
    """The scheduler's account in a reason: "Slurm: OUT_OF_MEMORY (OutOfMemory)", "Slurm: CANCELLED"."""
    why = f" ({record.reason})" if record.reason not in ("", "None") else ""
    return f"Slurm: {record.state}{why}"


def compose_result(
    job_id: str,
    external_id: str,
    outcome: Mapping[str, Any] | None,
    record: TaskRecord | None,
    timeout_s: float,
    stdout_path: Path | None,
) -> JobResult:
    """The JobResult of an ended (or forgotten) task.

    outcome: the wrapper's outcome.json of this attempt (None: absent, or from an earlier attempt).
    record: the scheduler's terminal record (None: the scheduler forgot the task). With an outcome,
    its exit status decides, except that a task the scheduler ended from outside (TIMEOUT,
    OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, CANCELLED...) takes that state unless it had already
    ended with exit code 0. Without an outcome, only the scheduler's word is known: an outside end
    maps as above, a task pending for a reason that can never clear (`TaskRecord.never_starts`) is
    `unschedulable`, anything else (even COMPLETED) is `unknown`; with neither, the result is
    `unknown` and `rerun` (nothing is known of it). An outcome whose wrapper was sent SIGTERM with
    no scheduler record saying why is read by `signalled` (timeout or lost, never cancelled). A
    requeued task's reason says which attempt it was (the caller passes only the outcome of that
    attempt); `requeues` counts them (Restarts=, else the outcome's `restart`).
    """
    result = _compose(job_id, external_id, outcome, record, timeout_s, stdout_path)
    if outcome is None and record is None:
        result = replace(result, rerun=True)
    restarts = record.restarts if record is not None else int((outcome or {}).get("restart") or 0)
    result = replace(result, requeues=restarts)
    if record is not None and record.restarts:
        s = "s" if record.restarts > 1 else ""
        result = replace(result, reason=f"{result.reason} (attempt {record.restarts + 1}: requeued "
                                        f"{record.restarts} time{s})")
    return result


def _compose(
    job_id: str,
    external_id: str,
    outcome: Mapping[str, Any] | None,
    record: TaskRecord | None,
    timeout_s: float,
    stdout_path: Path | None,
) -> JobResult:
    word = record.base_state if record is not None else None
    outside = ENDED_FROM_OUTSIDE.get(word or "")
    if outcome is not None:
        return _from_outcome(job_id, external_id, outcome, record, outside, timeout_s, stdout_path)
    if record is None:
        reason = "the scheduler forgot the task and its wrapper left no outcome"
        state: JobState = "unknown"
    elif outside is not None:
        state, reason = outside, f"{scheduler_says(record)}; the wrapper left no outcome"
    elif record.never_starts:
        state, reason = "unschedulable", (f"the scheduler can never start it: {scheduler_says(record)} (check "
                                          "[compute] and [compute.slurm] against `scontrol show partition`)")
    else:
        state, reason = "unknown", f"the scheduler says {record.state} but the wrapper left no outcome"
    elapsed = record.run_time_s if record is not None else 0.0
    code = record.exit_code if record is not None and outside is None else None
    return JobResult(job_id, state, code, None, elapsed, 0.0, "", "", False, False, reason,
                     None, external_id, word)


def signalled(outcome: Mapping[str, Any], reason: str) -> tuple[JobState, str]:
    """The state of a task whose wrapper was sent SIGTERM when no terminal scheduler record says
    why (the controller forgot the task, or kept it FAILED): what the controller said when the
    signal came (the outcome's `scheduler`, asked by the wrapper then) decides. Reason TimeLimit
    is the walltime (`timeout`); anything else is `lost` (preemption, a node going down, a
    scancel): never `cancelled`, which only the run's own cancel makes (the executor knows its
    own)."""
    said = outcome.get("scheduler")
    word = str(said.get("reason", "")) if isinstance(said, Mapping) else ""
    if word == "TimeLimit":
        return "timeout", f"Slurm ended it at its walltime (TimeLimit, seen by the wrapper when SIGTERM came; {reason})"
    seen = (f"the controller said {said.get('state')} ({word})" if isinstance(said, Mapping)
            else "no word from the controller")
    return "lost", (f"ended by SIGTERM from outside the run (preemption, a node going down or another scancel; "
                    f"{seen}; {reason})")


def _from_outcome(
    job_id: str,
    external_id: str,
    outcome: Mapping[str, Any],
    record: TaskRecord | None,
    outside: JobState | None,
    timeout_s: float,
    stdout_path: Path | None,
) -> JobResult:
    word = record.base_state if record is not None else None
    status = outcome.get("status")
    ended_by = None
    if status is None:
        state: JobState = "failed"
        exit_code, sig, reason = None, None, str(outcome.get("error") or "the wrapper could not start the job")
    else:
        ended_by = {"timeout": "timeout", "signal": "cancel"}.get(outcome.get("ended_by") or "")
        state, exit_code, sig, reason = describe_end(int(status), ended_by, timeout_s, 0)
    if outside is not None and state != "ok" and record is not None:
        state, reason = outside, f"{scheduler_says(record)}; {reason}"
    elif ended_by == "cancel":  # SIGTERM from outside, and no scheduler record says who sent it
        state, reason = signalled(outcome, reason)
    return JobResult(
        job_id=job_id,
        state=state,
        exit_code=exit_code,
        signal=sig,
        elapsed_s=float(outcome.get("elapsed_s", 0.0)),
        cpu_s=float(outcome.get("cpu_s", 0.0)),
        stdout_tail=str(outcome.get("stdout_tail", "")),
        stderr_tail=str(outcome.get("stderr_tail", "")),
        stdout_truncated=bool(outcome.get("stdout_truncated", False)),
        stderr_truncated=bool(outcome.get("stderr_truncated", False)),
        reason=reason,
        stdout_path=stdout_path,
        external_id=external_id,
        scheduler_state=word,
    )
