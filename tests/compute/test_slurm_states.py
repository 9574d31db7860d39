"""Reading Slurm's replies (pure): `scontrol -o show job` records, array index ranges, walltimes,
and how a wrapper outcome and a scheduler record become one JobResult. The records below are
replies recorded from the one-node test cluster (scripts/slurm-cluster.sh), trimmed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ratchet.compute.slurm_states import (
    TaskRecord,
    compose_result,
    expand_hostlist,
    expand_indices,
    index_ranges,
    max_array_size,
    min_job_age_s,
    parse_array_id,
    parse_duration_hms,
    parse_show_job,
    poll_bounds,
    poll_ceiling_s,
    split_arrays,
    time_limit_minutes,
    unavailable_nodes,
)
from ratchet.compute.slurm_tasks import EARLY_POLLS, max_poll_rounds

OOM_REPLY = (
    "JobId=2 ArrayJobId=1 ArrayTaskId=0 JobName=t.sh UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=OUT_OF_MEMORY Reason=OutOfMemory "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:125 RunTime=00:00:01 "
    "TimeLimit=UNLIMITED TimeMin=N/A Partition=debug NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 "
    "TRES=cpu=1,mem=100M,node=1,billing=1 Command=/tmp/t.sh WorkDir=/tmp StdOut=/tmp/slurmt-1_0.out Power= "
    "TresPerNode=gres:gpu:2\n"
)
ARRAY_REPLY = (
    "JobId=1010 ArrayJobId=1010 ArrayTaskId=5-999%8 ArrayTaskThrottle=8 JobState=PENDING "
    "Reason=JobArrayTaskLimit Restarts=0 ExitCode=0:0 RunTime=00:00:00\n"
    "JobId=1014 ArrayJobId=1010 ArrayTaskId=4 JobState=RUNNING Reason=None Restarts=0 ExitCode=0:0 "
    "RunTime=00:00:03\n"
    "JobId=1013 ArrayJobId=1010 ArrayTaskId=3 JobState=TIMEOUT Reason=TimeLimit Restarts=0 ExitCode=0:15 "
    "RunTime=00:01:02\n"
    "JobId=1012 ArrayJobId=1010 ArrayTaskId=2 JobState=PENDING Reason=BeginTime Restarts=1 ExitCode=0:0 "
    "RunTime=00:00:00\n"
    "JobId=1011 ArrayJobId=1010 ArrayTaskId=1 JobState=CANCELLED Reason=None Restarts=0 ExitCode=0:15 "
    "RunTime=1-02:03:04\n"
)

OK_OUTCOME = {"status": 0, "ended_by": None, "elapsed_s": 1.5, "cpu_s": 0.2, "stdout_tail": "hi\n",
              "stderr_tail": "", "stdout_truncated": False, "stderr_truncated": False, "restart": 0}
KILLED_OUTCOME = {**OK_OUTCOME, "status": 9, "stdout_tail": ""}  # wait status of a SIGKILL


def record(state: str, reason: str = "None", restarts: int = 0, code: int = 0) -> TaskRecord:
    return TaskRecord(0, "2", state, reason, code, 0, restarts, 7.0)


def test_recorded_oom_reply_parses_to_its_task():
    records = parse_show_job(OOM_REPLY)
    assert list(records) == [0]
    task = records[0]
    assert (task.state, task.reason, task.exit_code, task.exit_signal) == ("OUT_OF_MEMORY", "OutOfMemory", 0, 125)
    assert task.terminal and task.slurm_job_id == "2"


def test_pending_aggregate_record_stands_for_each_of_its_indices():
    records = parse_show_job(ARRAY_REPLY)
    assert sorted(records) == list(range(1, 1000))
    assert records[999].state == "PENDING" and records[999].slurm_job_id is None
    assert not records[4].terminal, "a RUNNING 0:0 record is not a result"
    assert records[3].terminal and records[3].base_state == "TIMEOUT"
    assert records[2].restarts == 1
    assert records[1].run_time_s == 93784.0


def test_index_ranges_and_sbatch_ids():
    assert expand_indices("0-3%2") == [0, 1, 2, 3]
    assert expand_indices("1,4-5,9") == [1, 4, 5, 9]
    assert parse_array_id("1234\n") == "1234"
    assert parse_array_id("1234;cluster\n") == "1234"
    with pytest.raises(ValueError):
        parse_array_id("sbatch: error: Batch job submission failed")


def test_walltime_is_whole_minutes_rounded_up_with_the_grace():
    assert time_limit_minutes(1, 0) == 1
    assert time_limit_minutes(60, 0) == 1
    assert time_limit_minutes(61, 0) == 2
    assert time_limit_minutes(300, 60) == 6
    assert parse_duration_hms("01:02:03") == 3723.0
    assert parse_duration_hms("garbage") == 0.0


@pytest.mark.parametrize(
    "word, state",
    [("OUT_OF_MEMORY", "oom"), ("TIMEOUT", "timeout"), ("NODE_FAIL", "lost"), ("PREEMPTED", "lost"),
     ("CANCELLED", "cancelled"), ("BOOT_FAIL", "lost")],
)
def test_scheduler_end_wins_over_a_killed_wrapper_outcome_and_keeps_its_word(word, state):
    result = compose_result("j", "1_0", KILLED_OUTCOME, record(word, "Why"), 30.0, None)
    assert result.state == state
    assert result.scheduler_state == word
    assert word in result.reason and result.external_id == "1_0"


def test_a_job_that_exited_zero_stays_ok_whatever_the_scheduler_did_after():
    result = compose_result("j", "1_0", OK_OUTCOME, record("CANCELLED"), 30.0, None)
    assert result.state == "ok" and result.scheduler_state == "CANCELLED"


def test_wrapper_outcome_decides_a_task_that_ended_by_itself():
    failed = compose_result("j", "1_0", {**OK_OUTCOME, "status": 3 << 8}, record("FAILED", code=3), 30.0, None)
    assert (failed.state, failed.exit_code, failed.reason) == ("failed", 3, "exit code 3")
    timed = compose_result("j", "1_0", {**KILLED_OUTCOME, "ended_by": "timeout"}, record("FAILED"), 2.0, None)
    assert timed.state == "timeout" and timed.scheduler_state == "FAILED"


def test_forgotten_task_without_outcome_is_unknown_never_success():
    result = compose_result("j", "1_0", None, None, 30.0, None)
    assert result.state == "unknown" and result.scheduler_state is None


def test_completed_without_outcome_is_unknown():
    result = compose_result("j", "1_0", None, record("COMPLETED"), 30.0, None)
    assert result.state == "unknown" and result.scheduler_state == "COMPLETED"


def test_scheduler_end_without_outcome_maps_to_its_state():
    result = compose_result("j", "1_0", None, record("NODE_FAIL", "NodeDown"), 30.0, None)
    assert result.state == "lost" and "NodeDown" in result.reason


def test_forgotten_task_with_outcome_is_read_from_the_file():
    result = compose_result("j", "1_0", OK_OUTCOME, None, 30.0, None)
    assert result.state == "ok" and result.stdout_tail == "hi\n" and result.scheduler_state is None


def test_poll_round_bound_grows_with_time_not_with_tasks():
    assert max_poll_rounds(0.0, 0.5, 15.0) == 11 + EARLY_POLLS
    assert max_poll_rounds(150.0, 0.5, 15.0) == 21 + EARLY_POLLS
    assert max_poll_rounds(10.0, 1.0, 1.0) == 12 + EARLY_POLLS


def test_requeued_task_says_which_attempt_it_was():
    result = compose_result("j", "1_0", {**OK_OUTCOME, "restart": 2}, record("COMPLETED", restarts=2), 30.0, None)
    assert result.state == "ok" and result.reason == "exit code 0 (attempt 3: requeued 2 times)"


@pytest.mark.parametrize("reason", ["PartitionNodeLimit", "BadConstraints", "PartitionConfig",
                                    "QOSMaxCpuPerJobLimit", "AssocMaxWallDurationPerJobLimit"])
def test_a_task_pending_for_a_reason_that_never_clears_is_unschedulable(reason):
    pending = record("PENDING", reason)
    assert pending.never_starts and not pending.terminal
    result = compose_result("j", "1_0", None, pending, 30.0, None)
    assert result.state == "unschedulable" and reason in result.reason and result.scheduler_state == "PENDING"


@pytest.mark.parametrize("reason", ["Resources", "Priority", "JobArrayTaskLimit", "ReqNodeNotAvail", "BeginTime"])
def test_a_task_waiting_for_a_reason_that_may_clear_keeps_waiting(reason):
    assert not record("PENDING", reason).never_starts


def test_a_look_is_split_into_the_fewest_arrays_that_fit():
    assert split_arrays(1200, 1001) == [range(0, 600), range(600, 1200)]
    assert split_arrays(1001, 1001) == [range(0, 1001)]
    assert split_arrays(5, 2) == [range(0, 2), range(2, 3), range(3, 5)]
    assert split_arrays(0, 10) == []
    for n, size in [(1, 1), (7, 3), (2003, 1001), (10001, 10001)]:
        parts = split_arrays(n, size)
        assert len(parts) == -(-n // size) and all(len(p) <= size for p in parts)
        assert [i for p in parts for i in p] == list(range(n))


def test_max_array_size_is_read_from_scontrol_show_config():
    config = "Configuration data as of ...\nMaxArraySize            = 1001\nMaxJobCount             = 10000\n"
    assert max_array_size(config) == 1001
    assert max_array_size("MaxJobCount = 5\n") is None


SIGNALLED_OUTCOME = {**OK_OUTCOME, "status": 15 << 8, "ended_by": "signal"}  # the wrapper stopped it on SIGTERM


def test_a_forgotten_task_stopped_at_its_walltime_is_timeout_from_what_the_wrapper_heard():
    outcome = {**SIGNALLED_OUTCOME, "scheduler": {"state": "COMPLETING", "reason": "TimeLimit"}}
    result = compose_result("j", "1_0", outcome, None, 300.0, None)
    assert result.state == "timeout" and "TimeLimit" in result.reason and not result.rerun


@pytest.mark.parametrize("said", [None, {"state": "COMPLETING", "reason": "None"}])
def test_a_task_sigtermed_from_outside_is_lost_never_cancelled(said):
    for rec in (None, record("FAILED", code=143)):  # forgotten, or kept FAILED (the wrapper exited 143)
        result = compose_result("j", "1_0", {**SIGNALLED_OUTCOME, "scheduler": said}, rec, 300.0, None)
        assert result.state == "lost" and "SIGTERM from outside the run" in result.reason, result


def test_a_task_with_neither_outcome_nor_record_is_unknown_and_to_be_run_again():
    assert compose_result("j", "1_0", None, None, 30.0, None).rerun
    assert not compose_result("j", "1_0", None, record("COMPLETED"), 30.0, None).rerun
    assert not compose_result("j", "1_0", OK_OUTCOME, None, 30.0, None).rerun


def test_requeues_come_from_the_record_else_the_outcome():
    assert compose_result("j", "1_0", {**OK_OUTCOME, "restart": 2}, record("COMPLETED", restarts=2), 30.0,
                          None).requeues == 2
    assert compose_result("j", "1_0", {**OK_OUTCOME, "restart": 1}, None, 30.0, None).requeues == 1
    assert compose_result("j", "1_0", OK_OUTCOME, record("COMPLETED"), 30.0, None).requeues == 0


def test_a_required_node_that_does_not_exist_never_starts_one_that_is_down_may():
    reason = "ReqNodeNotAvail,_UnavailableNodes:ghost[1-2]"
    assert unavailable_nodes(reason) == ["ghost1", "ghost2"]
    assert not record("PENDING", reason).never_starts  # down or missing: only the executor knows the nodes
    missing = replace(record("PENDING", reason), nodes_missing=True)
    result = compose_result("j", "1_0", None, missing, 30.0, None)
    assert missing.never_starts and result.state == "unschedulable" and "ReqNodeNotAvail" in result.reason
    assert unavailable_nodes("Resources") == [] and unavailable_nodes("ReqNodeNotAvail,_UnavailableNodes:") == []
    assert expand_hostlist("n[1-3,7],gpu[01-02],login") == ["n1", "n2", "n3", "n7", "gpu01", "gpu02", "login"]


def test_polls_are_kept_below_half_the_clusters_min_job_age():
    config = "MaxArraySize            = 1001\nMinJobAge               = 30 sec\n"
    assert min_job_age_s(config) == 30.0 and min_job_age_s("MaxArraySize = 5\n") is None
    assert poll_ceiling_s(30.0) == 15.0 and poll_ceiling_s(0.0) is None and poll_ceiling_s(None) is None
    assert poll_bounds(0.5, 150.0, 15.0) == (0.5, 15.0)
    assert poll_bounds(100.0, 150.0, 15.0) == (15.0, 15.0)
    assert poll_bounds(0.5, 150.0, None) == (0.5, 150.0)


def test_array_indices_are_written_as_slurm_ranges():
    assert index_ranges({5, 0, 1, 2}) == "0-2,5" and index_ranges([3]) == "3" and index_ranges([]) == ""
