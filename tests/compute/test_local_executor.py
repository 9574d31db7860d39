"""The local executor with real processes, with and without the sandbox."""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import uuid
from pathlib import Path

import pytest
from jobkit import MODES, alive, pids_with_token, spec

from ratchet.compute.base import JobSpec
from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import resolve_mode

SPIN = "while True: pass\n"

IGNORE_TERM = """\
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open("ignore.pid", "w").write(str(os.getpid()))
time.sleep(1000)  # token: {token}
"""

SETSID = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    open("setsid.pid", "w").write(str(os.getpid()))
    time.sleep(1000)
    os._exit(0)
if sys.argv[1] == "wait":
    time.sleep(1000)
"""


def _write(work: Path, name: str, text: str) -> None:
    (work / name).write_text(text)


def test_results_report_exit_codes_tails_and_files(work, jobs_dir):
    specs = [spec("ok", "echo hello; echo warn >&2", work), spec("fails", "echo partial; exit 3", work)]
    results = LocalExecutor(jobs_dir, 2).run(specs)
    ok, fails = results
    assert (ok.state, ok.exit_code, ok.reason, ok.stdout_tail, ok.stderr_tail) == (
        "ok",
        0,
        "exit code 0",
        "hello\n",
        "warn\n",
    )
    assert (fails.state, fails.exit_code, fails.reason) == ("failed", 3, "exit code 3")
    assert (jobs_dir / "ok" / "stdout").read_text() == "hello\n"
    saved = json.loads((jobs_dir / "fails" / "result.json").read_text())
    assert saved["state"] == "failed" and saved["exit_code"] == 3 and saved["reason"] == "exit code 3"
    assert not (jobs_dir / "ok" / "scratch").exists()


def test_a_job_killed_by_a_signal_says_which(work, jobs_dir):
    argv = (sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    job = JobSpec(job_id="sig", argv=argv, workdir=work, env={"PATH": "/usr/bin:/bin"}, timeout_s=30)
    result = LocalExecutor(jobs_dir, 1).run([job])[0]
    assert (result.state, result.signal, result.exit_code) == ("killed", 9, None)
    assert result.reason == "killed by signal 9 (SIGKILL)"


def test_a_command_that_cannot_start_is_a_failure_not_unknown(work, jobs_dir):
    job = JobSpec(job_id="nope", argv=("/no/such/binary",), workdir=work, env={}, timeout_s=5)
    result = LocalExecutor(jobs_dir, 1).run([job])[0]
    assert result.state == "failed" and result.reason.startswith("could not start")


def test_stdin_bytes_reach_the_job_and_cpu_time_is_measured(work, jobs_dir):
    busy = (
        "python3 -c 'import sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
        "print(sys.stdin.read().upper())'"
    )
    result = LocalExecutor(jobs_dir, 1).run([spec("stdin", busy, work, stdin_bytes=b"abc" * 50000)])[0]
    assert result.state == "ok", result.stderr_tail
    assert (jobs_dir / "stdin" / "stdout").read_text().strip() == "ABC" * 50000
    assert result.cpu_s >= 0.25


@pytest.mark.parametrize("mode", MODES)
def test_timeouts_kill_spinners_term_ignorers_and_setsid_grandchildren(work, jobs_dir, mode):
    token = uuid.uuid4().hex
    _write(work, "spin.py", SPIN)
    _write(work, "ignore.py", IGNORE_TERM.format(token=token))
    _write(work, "setsid.py", SETSID)
    specs = [
        spec("spin", f"python3 spin.py {token}", work, timeout_s=1.0, mode=mode),
        spec("ignore", f"python3 ignore.py {token}", work, timeout_s=1.0, mode=mode),
        spec("setsid", f"python3 setsid.py wait {token}", work, timeout_s=1.0, mode=mode),
    ]
    results = LocalExecutor(jobs_dir, 3).run(specs)
    assert [r.state for r in results] == ["timeout"] * 3, [r.reason for r in results]
    assert all(r.reason.startswith("timed out after 1.0 s (killed") for r in results)
    assert (work / "ignore.pid").exists() and (work / "setsid.pid").exists()
    assert pids_with_token(token) == []
    if mode == "none":  # the pids written are host pids only without the PID namespace
        assert not alive(int((work / "ignore.pid").read_text()))
        assert not alive(int((work / "setsid.pid").read_text()))
        assert "descendant" in results[2].reason


CLEANUP = """\
import signal, sys, time
def stop(*_):
    open("cleaned", "w").write("yes")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
time.sleep(1000)
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_timed_out_job_gets_sigterm_and_time_to_clean_up(work, jobs_dir, mode):
    _write(work, "cleanup.py", CLEANUP)
    result = LocalExecutor(jobs_dir, 1).run(
        [spec("clean", "python3 cleanup.py", work, timeout_s=3.0, mode=mode)]
    )[0]
    assert result.state == "timeout"
    assert (work / "cleaned").read_text() == "yes"


@pytest.mark.parametrize("mode", MODES)
def test_processes_left_behind_by_a_finished_job_are_killed(work, jobs_dir, mode):
    token = uuid.uuid4().hex
    _write(work, "setsid.py", SETSID)
    result = LocalExecutor(jobs_dir, 1).run(
        [spec("daemon", f"python3 setsid.py exit {token}", work, mode=mode)]
    )[0]
    assert result.state == "ok", result.reason
    assert pids_with_token(token) == []


def _reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def test_100_mb_of_output_is_capped_on_disk_and_costs_no_memory(work, jobs_dir):
    cap = 1 << 20
    loud = (
        'python3 -c \'import sys\nb = b"x" * (1 << 20)\nfor _ in range(100): sys.stdout.buffer.write(b)\n'
        'sys.stdout.buffer.write(b"END")\''
    )
    _reset_peak_rss()
    before = _status_kb("VmRSS")
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = LocalExecutor(jobs_dir, 1).run([spec("loud", loud, work, output_cap_bytes=cap)])[0]
    growth_mb = (_status_kb("VmHWM") - before) / 1024
    assert result.state == "ok" and result.stdout_truncated and not result.stderr_truncated
    assert (jobs_dir / "loud" / "stdout").stat().st_size == cap
    assert result.stdout_tail.endswith("xxxEND")
    assert growth_mb < 30, f"the kernel's peak RSS grew by {growth_mb:.1f} MB while a job printed 100 MB"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 30 * 1024


def test_keep_end_leaves_the_last_bytes_of_an_output_over_its_cap_on_disk_and_counts_them_all(work, jobs_dir):
    cap = 64 * 1024
    loud = ("python3 -c 'import sys\nfor i in range(100000): print(i)\nprint(\"to stderr\", file=sys.stderr)'")
    printed = "".join(f"{i}\n" for i in range(100000)).encode()
    result = LocalExecutor(jobs_dir, 1, keep_end=True).run([spec("loud", loud, work, output_cap_bytes=cap)])[0]
    assert result.state == "ok" and result.stdout_truncated and not result.stderr_truncated
    assert (jobs_dir / "loud" / "stdout").read_bytes() == printed[-cap:]
    assert (result.stdout_bytes, result.stderr_bytes) == (len(printed), len(b"to stderr\n"))
    assert (jobs_dir / "loud" / "stderr").read_bytes() == b"to stderr\n"
    head = LocalExecutor(jobs_dir, 1).run([spec("loud", loud, work, output_cap_bytes=cap)])[0]
    assert (jobs_dir / "loud" / "stdout").read_bytes() == printed[:cap] and head.stdout_bytes == len(printed)


@pytest.mark.parametrize("mode", MODES)
def test_the_operators_secrets_never_reach_a_job(work, jobs_dir, monkeypatch, mode):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_very_secret")
    result = LocalExecutor(jobs_dir, 1).run([spec("env", "env", work, mode=mode)])[0]
    out = (jobs_dir / "env" / "stdout").read_text()
    assert result.state == "ok"
    assert "very-secret" not in out and "very_secret" not in out
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert names <= {
        "PATH",
        "LANG",
        "RATCHET_SEED",
        "RATCHET_JOB_ID",
        "RATCHET_VARIANT",
        "RATCHET_UNIT",
        "HOME",
        "TMPDIR",
        "PWD",
        "SHLVL",
        "_",
    }
    home = [line for line in out.splitlines() if line.startswith("HOME=")][0]
    assert home.endswith("/env/scratch")


def test_max_parallel_is_respected(work, jobs_dir):
    stamp = (
        "python3 -c 'import time, os\ns = time.time()\ntime.sleep(0.4)\n"
        'open(os.environ["RATCHET_JOB_ID"] + ".span", "w").write(f"{s} {time.time()}")\''
    )
    specs = [spec(f"p{i}", stamp, work) for i in range(6)]
    results = LocalExecutor(jobs_dir, 2).run(specs)
    assert all(r.state == "ok" for r in results)
    spans = [tuple(map(float, (work / f"p{i}.span").read_text().split())) for i in range(6)]
    overlap = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert overlap == 2, f"at most 2 jobs may run at once and 2 should: saw {overlap}"


def test_a_capped_group_runs_as_a_sliding_window_beside_other_jobs(work, jobs_dir):
    stamp = (
        "python3 -c 'import time, os\ns = time.time()\ntime.sleep(float(os.environ[\"NAP\"]))\n"
        'open(os.environ["RATCHET_JOB_ID"] + ".span", "w").write(f"{s} {time.time()}")\''
    )
    naps = {"g0": "0.3", "g1": "1.5", "g2": "0.3", "g3": "0.3", "free0": "1.0", "free1": "1.0"}
    specs = [spec(i, stamp, work, extra_env={"NAP": nap}, group="g" if i.startswith("g") else None,
                  group_max_parallel=2 if i.startswith("g") else None) for i, nap in naps.items()]
    results = LocalExecutor(jobs_dir, 4).run(specs)
    assert all(r.state == "ok" for r in results)
    spans = {i: tuple(map(float, (work / f"{i}.span").read_text().split())) for i in naps}
    group = [spans[i] for i in naps if i.startswith("g")]
    assert max(sum(1 for s, e in group if s <= t < e) for t, _ in group) == 2, group
    assert spans["g3"][1] < spans["g1"][1], "g2 and g3 start as g0 and g2 end, while g1 still runs"
    assert spans["free0"][0] < spans["g0"][1], "uncapped jobs run beside the group"


def test_cancel_kills_the_running_job_and_skips_pending_ones(work, jobs_dir):
    executor = LocalExecutor(jobs_dir, 1)
    started = threading.Event()
    out: list = []
    specs = [spec(f"c{i}", "sleep 1000", work) for i in range(3)]
    runner = threading.Thread(
        target=lambda: out.extend(executor.run(specs, on_submit=lambda j, p: started.set()))
    )
    runner.start()
    assert started.wait(10)
    executor.cancel()
    runner.join(15)
    assert not runner.is_alive()
    assert [r.state for r in out] == ["cancelled"] * 3
    assert out[0].reason.startswith("cancelled (killed") and out[1].reason == "not started"
    assert executor.run([spec("later", "true", work)])[0].reason == "not started"


def test_callbacks_run_on_the_calling_thread_and_pids_are_recorded(work, jobs_dir, tmp_path):
    pid_dir = tmp_path / "pids"
    calls = []

    def on_start(job_id: str, pid: str) -> None:
        record = json.loads((pid_dir / f"{job_id}.pid").read_text())
        calls.append(("start", job_id, threading.current_thread(), str(record["pid"]) == pid))

    def on_result(result) -> None:
        calls.append(("result", result.job_id, threading.current_thread(), True))

    LocalExecutor(jobs_dir, 2, pid_dir=pid_dir).run(
        [spec("a", "sleep 0.2", work), spec("b", "true", work)], on_submit=on_start, on_result=on_result
    )
    assert len(calls) == 4 and all(c[2] is threading.current_thread() and c[3] for c in calls)
    assert list(pid_dir.glob("*.pid")) == []


def test_a_rerun_replaces_the_jobs_directory(work, jobs_dir):
    executor = LocalExecutor(jobs_dir, 1)
    executor.run([spec("same", "echo first; touch $HOME/left", work)])
    executor.run([spec("same", "echo second; ls $HOME", work)])
    assert (jobs_dir / "same" / "stdout").read_text() == "second\n"


def test_bad_job_ids_are_refused(work, jobs_dir):
    from ratchet.core.errors import RatchetError

    for bad in ["../x", "a/b", "", ".."]:
        with pytest.raises(RatchetError) as err:
            LocalExecutor(jobs_dir, 1).run([spec(bad, "true", work)])
        assert err.value.code == "job.bad_id"
    with pytest.raises(RatchetError):
        LocalExecutor(jobs_dir, 1).run([spec("d", "true", work), spec("d", "true", work)])
    assert not os.path.exists(jobs_dir.parent / "x")


def test_cancel_from_a_signal_handler_stops_the_run(work, jobs_dir):
    import signal

    executor = LocalExecutor(jobs_dir, 2)
    previous = signal.signal(signal.SIGALRM, lambda *_: executor.cancel())
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        results = executor.run([spec(f"s{i}", "sleep 1000", work) for i in range(3)])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        executor.close()
    assert [r.state for r in results] == ["cancelled"] * 3
    assert [r.reason for r in results][2] == "not started"


def test_local_jobs_die_with_their_kernel_their_ids_are_pids_and_the_sandbox_is_probed_here(work, jobs_dir):
    with LocalExecutor(jobs_dir, 1) as executor:
        assert not executor.jobs_outlive_kernel and executor.external_ids_are_pids
        assert executor.probe_sandbox("none") == "none"
        assert executor.probe_sandbox("auto") == resolve_mode("auto")
        started: dict[str, str] = {}
        (result,) = executor.run([spec("pid", "true", work)], on_submit=started.__setitem__)
    assert result.state == "ok" and started["pid"].isdigit() and int(started["pid"]) > 1
