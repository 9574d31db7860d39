"""The sandbox with real bwrap: what a job can write, read, see and reach."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

import pytest
from jobkit import needs_bwrap, spec

from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import default_python_prefixes, probe_bwrap, resolve_mode, wrap_argv
from ratchet.core.errors import SandboxError

pytestmark = needs_bwrap


def _run(jobs_dir: Path, job) -> tuple[str, str]:
    result = LocalExecutor(jobs_dir, 1).run([job])[0]
    return (jobs_dir / job.job_id / "stdout").read_text(), result.state


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with a secret file, holding the run's jobs under `.ratchet/`."""
    path = tmp_path / "project"
    (path / ".ratchet").mkdir(parents=True)
    (path / "secret.txt").write_text("project secret\n")
    return path


@pytest.fixture
def home_secret():
    """A secret file in the operator's real home directory (removed afterwards)."""
    path = Path(os.path.expanduser("~")) / f".ratchet-test-secret-{uuid.uuid4().hex}"
    path.write_text("operator secret\n")
    yield path
    path.unlink()


def test_a_job_writes_only_its_checkout_and_scratch(work, jobs_dir, project, tmp_path):
    outside = tmp_path / "outside.txt"
    command = (
        f"echo in > in.txt; echo s > $HOME/s.txt; echo t > /tmp/t.txt; "
        f"for p in {outside} {project}/pwned /usr/pwned /etc/pwned {jobs_dir}/pwned; do "
        f"(echo x > $p) 2>/dev/null && echo WROTE $p; done; echo done"
    )
    out, state = _run(jobs_dir, spec("write", command, work, mode="bwrap"))
    assert state == "ok" and out.strip().endswith("done")
    assert "WROTE /usr" not in out and "WROTE /etc" not in out, out  # read-only system directories
    assert (work / "in.txt").exists()
    # anything else the job wrote landed in its private tmpfs, never on the host
    assert not outside.exists() and not (project / "pwned").exists() and not (jobs_dir / "pwned").exists()
    assert not Path("/tmp/t.txt").exists() and not Path("/usr/pwned").exists()


def test_a_read_only_root_leaves_only_the_checkout_and_scratch_writable(work, jobs_dir, tmp_path):
    from dataclasses import replace

    outside = tmp_path / "outside.txt"
    command = (
        f"echo in > in.txt; echo s > $HOME/s.txt && echo HOME-OK; "
        f"for p in {outside} /tmp/t.txt /pwned {jobs_dir}/pwned; do "
        f"(echo x > $p) 2>/dev/null && echo WROTE $p; done; echo done"
    )
    job = spec("ro", command, work, mode="bwrap")
    job = replace(job, sandbox=replace(job.sandbox, read_only_root=True))
    out, state = _run(jobs_dir, job)
    assert state == "ok" and out.strip().endswith("done") and "HOME-OK" in out, out
    assert "WROTE" not in out, f"a write outside the checkout and scratch succeeded inside the sandbox: {out}"
    assert (work / "in.txt").exists()


def test_a_job_cannot_read_the_operators_home_the_project_or_other_jobs_files(
    work, jobs_dir, project, home_secret
):
    LocalExecutor(jobs_dir, 1).run([spec("other", "echo other-output", work)])
    command = (
        f"for p in {home_secret} {project}/secret.txt $HOME/../stdout {jobs_dir}/other/stdout; do "
        f"cat $p >/dev/null 2>&1 && echo READ $p; done; "
        f"ls -a {home_secret.parent} {project} {jobs_dir}; echo done"
    )
    out, state = _run(jobs_dir, spec("read", command, work, mode="bwrap"))
    assert state == "ok" and "READ" not in out, out
    assert home_secret.name not in out and "secret.txt" not in out and "other" not in out, out


def test_a_job_cannot_see_the_kernels_environment_through_proc(work, jobs_dir, monkeypatch):
    monkeypatch.setenv("RATCHET_TEST_SECRET", "s3cr3t-value")
    command = (
        "cat /proc/1/environ; echo; for f in /proc/[0-9]*/environ; do cat $f; echo; done; "
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; echo PIDS $(ls -d /proc/[0-9]* | wc -l)"
    )
    out, state = _run(jobs_dir, spec("proc", command, work, mode="bwrap"))
    assert state == "ok"
    assert "s3cr3t-value" not in out and "RATCHET_TEST_SECRET" not in out
    assert "bin/pytest" not in out  # no process of the host is visible
    assert int(out.rsplit("PIDS ", 1)[1]) < 10, out
    assert "RATCHET_JOB_ID=proc" in out  # bwrap itself (pid 1) runs with the job's environment


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 (ephemeral port) answering b"hello" to each connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.sendall(b"hello")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


CONNECT = (
    'python3 -c \'import socket\ntry:\n    s = socket.create_connection(("127.0.0.1", {port}), timeout=3)\n'
    '    print("GOT", s.recv(5).decode())\nexcept OSError as e:\n    print("REFUSED", e)\''
)


@pytest.mark.parametrize("network, expected", [(False, "REFUSED"), (True, "GOT hello")])
def test_network_only_when_asked(work, jobs_dir, listener, network, expected):
    out, state = _run(
        jobs_dir, spec("net", CONNECT.format(port=listener), work, mode="bwrap", network=network)
    )
    assert state == "ok" and out.startswith(expected), out


def test_the_python_in_use_works_inside_without_binding_the_home(work, jobs_dir):
    out, state = _run(
        jobs_dir, spec("py", "python3 -c 'import sys, json; print(sys.version_info[:2])'", work, mode="bwrap")
    )
    assert state == "ok", out
    home = os.path.realpath(os.path.expanduser("~"))
    assert all(p != home and not home.startswith(p + "/") for p in default_python_prefixes())


def test_wrap_argv_binds_workdir_and_scratch_individually_after_tmp(tmp_path):
    work, scratch = tmp_path / "w", tmp_path / "s"
    argv = wrap_argv(["true"], workdir=work, scratch=scratch, network=False, env={"A": "1"})
    assert argv.index("--tmpfs") < argv.index(str(work.resolve()))
    assert ["--bind", str(work.resolve()), str(work.resolve())] == argv[
        argv.index(str(work.resolve())) - 1 :
    ][:3]
    assert "--share-net" not in argv and "--unshare-all" in argv and "--clearenv" in argv
    assert argv[-2:] == ["--", "true"] and ["--setenv", "A", "1"] == argv[argv.index("--setenv") :][:3]
    assert str(tmp_path) not in [a for a in argv if a not in (str(work.resolve()), str(scratch.resolve()))]


def test_mode_resolution(tmp_path):
    assert probe_bwrap().available
    assert (
        resolve_mode("auto") == "bwrap"
        and resolve_mode("bwrap") == "bwrap"
        and resolve_mode("none") == "none"
    )
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    status = probe_bwrap(str(broken))
    assert not status.available and "No permissions" in status.reason
    assert resolve_mode("auto", bwrap=str(broken)) == "none"
    with pytest.raises(SandboxError) as err:
        resolve_mode("bwrap", bwrap=str(broken))
    assert err.value.code == "sandbox.unavailable" and "No permissions" in err.value.message
    with pytest.raises(SandboxError) as err:
        resolve_mode("docker")  # type: ignore[arg-type]
    assert err.value.code == "sandbox.bad_mode"
