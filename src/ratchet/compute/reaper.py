"""The per-job shim that keeps every process of a job in reach (Linux), whatever it does to its
environment, its session or its parent.

The local executor starts a job without the sandbox as `python -I -S reaper.py [--cgroup DIR] --
ARGV...` instead of ARGV. The shim

1. moves itself into the job's cgroup DIR when one is given (cgroup v2: every process the job starts
   stays in it, and writing `1` to its `cgroup.kill` kills them all at once);
2. makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER): a descendant orphaned by its
   parent — a daemon, an `env -i ... setsid` grandchild that dropped Ratchet's marker — is
   re-parented to the shim instead of to init, so it stays a descendant of the job's leader, where
   the kernel's process scan (`pids.job_processes`) finds it;
3. spawns ARGV (stdin, stdout, stderr and the environment are passed through unchanged), forwards
   SIGTERM, SIGINT and SIGHUP to it, and reaps every process re-parented to it;
4. when ARGV's process ends by itself, SIGKILLs whatever the job left behind (round after round, as
   killed parents hand their children to the shim) and reaps it; when it ends after a forwarded
   signal (the kernel is stopping the job), waits for the other processes to end within the
   kernel's grace (the kernel SIGKILLs them after it); then exits as ARGV did: the same exit code,
   or killed by the same signal. A process that cannot be started exits SPAWN_FAILED_EXIT
   with the reason on stderr.

It imports only the standard library and runs with `-I -S` (no site, no user paths, no PYTHON*
variables), so the job's environment cannot change what it does.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
"""prctl option number (linux/prctl.h)."""

SPAWN_FAILED_EXIT = 127
"""Exit code of the shim when ARGV cannot be started (as a shell's "command not found")."""

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals the shim passes on to the job's process instead of dying from them."""

MAX_SWEEP_ROUNDS = 1000
"""Rounds of SIGKILL-and-reap over the shim's children after the job ended (each round kills every
current child; a fork bomb could otherwise keep the shim busy forever)."""


def argv_for(argv: list[str] | tuple[str, ...], python: str, cgroup: str | None = None) -> list[str]:
    """The command line running `argv` under this shim with the interpreter `python`; `cgroup`:
    the job's cgroup v2 directory (None: none)."""
    return [python, "-I", "-S", os.path.abspath(__file__), *(["--cgroup", cgroup] if cgroup else []), "--", *argv]


def _subreaper() -> None:
    """prctl(PR_SET_CHILD_SUBREAPER, 1) through `_ctypes` (importing `ctypes` itself costs each
    job about 10-20 ms of interpreter start), `ctypes` where that low-level call is missing."""
    try:
        import _ctypes

        dlopen = vars(_ctypes)["dlopen"]  # untyped here: typeshed wants a path, None opens our own symbols
        own = dlopen(None, os.RTLD_NOW)
        _ctypes.call_function(_ctypes.dlsym(own, "prctl"), (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
        return
    except (ImportError, AttributeError, OSError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass  # not Linux: the kernel's scan of descendants, groups and markers still applies


def _join_cgroup(path: str) -> None:
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError as exc:
        print(f"ratchet-reaper: not in cgroup {path}: {exc}", file=sys.stderr)


def _children(me: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def _sweep(me: int) -> None:
    """SIGKILL and reap every child of the shim until none is left (orphans arrive as their
    parents die)."""
    try:
        os.waitpid(-1, os.WNOHANG)  # reaps one that has already ended, if any
    except ChildProcessError:
        return  # no child left, the usual case: decided without scanning /proc
    for _ in range(MAX_SWEEP_ROUNDS):
        for pid in _children(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _wait_all() -> None:
    """Reap children until none is left (the kernel SIGKILLs them after the grace)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _exit_like(status: int) -> None:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    sig = -code
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the job may have dumped core; the shim never does
    try:
        signal.signal(sig, signal.SIG_DFL)  # refused for SIGKILL and SIGSTOP, which need no reset
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal that does not kill (e.g. SIGCONT): still report it as a shell would


def main(args: list[str]) -> None:
    """Run the shim on its command line (see the module docstring); never returns."""
    cgroup = None
    if args[:1] == ["--cgroup"]:
        cgroup, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: reaper.py [--cgroup DIR] -- ARGV...", file=sys.stderr)
        os._exit(2)
    if cgroup:
        _join_cgroup(cgroup)
    _subreaper()
    child: list[int] = []
    stopping: list[int] = []

    def forward(signum: int, frame: object) -> None:
        stopping.append(signum)
        for pid in child:
            try:
                os.kill(pid, signum)
            except OSError:
                pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        child.append(os.posix_spawnp(args[0], args, os.environ))
    except OSError as exc:
        print(f"ratchet: could not start {args[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        os._exit(SPAWN_FAILED_EXIT)
    me = os.getpid()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # cannot happen while the job's process is unreaped; never hang
            os._exit(SPAWN_FAILED_EXIT)
        if pid == child[0]:
            break
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    if stopping or (os.WIFSIGNALED(status) and os.WTERMSIG(status) in FORWARDED):
        _wait_all()  # the job is being stopped: its other processes got the signal too and have the grace
    else:
        _sweep(me)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
