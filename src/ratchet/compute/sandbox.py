"""The sandbox: bubblewrap (`bwrap`) with an allow-list of mounts.

A sandboxed job sees: the system directories (/usr, /bin, /lib*, /sbin, /etc), the Python in use and
the `read_only` paths of its SandboxSpec (the installs of its own programs: `job_programs.py`),
read-only; its checkout and its scratch directory, writable, each bound on its own path (never a
parent: the job directories live under the project's `.ratchet/`); a private /tmp (read-only with the
rest of the root for a command agent's legs: `read_only_root`); a fresh /proc in
a new PID namespace (no other process's environment is visible, and killing bwrap kills every
process inside, including ones that called `setsid`); a minimal /dev; no network unless asked; no
capabilities. The project directory, `.ratchet/` and the operator's home are not visible.
bwrap itself must be started with the allow-listed environment (see `LocalExecutor`): inside the
new PID namespace bwrap is pid 1 and /proc/1/environ shows bwrap's own environment.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ratchet.compute.base import SandboxMode, SandboxSetting
from ratchet.core.errors import SandboxError

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Bound read-only when they exist (a symlink such as /bin -> usr/bin is recreated as a symlink)."""

PROBE_TIMEOUT_S = 20.0
"""Seconds the one-time bwrap probe may take before bwrap is declared unusable."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether bwrap works here: available, the bwrap path (None when not found), and a reason a
    user can read ("bwrap 0.8.0 works", "bwrap not found on PATH", bwrap's own error)."""

    available: bool
    path: str | None
    reason: str


def find_bwrap() -> str | None:
    """Path of the bwrap executable (PATH, then /usr/bin/bwrap), or None."""
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


@functools.lru_cache(maxsize=8)
def probe_bwrap(bwrap: str | None = None) -> SandboxStatus:
    """Run a real sandboxed Python once per process (with the mounts a job gets) and report whether
    bwrap works. bwrap: the executable to probe (default `find_bwrap()`). Cached per `bwrap`."""
    path = bwrap or find_bwrap()
    if path is None:
        return SandboxStatus(False, None, "bwrap not found on PATH (install bubblewrap)")
    with tempfile.TemporaryDirectory(prefix="ratchet-probe-") as tmp:
        work, scratch = Path(tmp) / "work", Path(tmp) / "scratch"
        work.mkdir()
        scratch.mkdir()
        env = {"PATH": "/usr/bin:/bin"}
        argv = wrap_argv(
            [sys.executable, "-c", "pass"], workdir=work, scratch=scratch, network=False, env=env, bwrap=path
        )
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, path, f"bwrap did not run: {exc}")
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        return SandboxStatus(False, path, f"bwrap does not work here: {message}")
    return SandboxStatus(True, path, f"{_version(path)} works")


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "bwrap"
    return out.decode("utf-8", "replace").strip() or "bwrap"


def resolve_mode(mode: SandboxSetting, bwrap: str | None = None) -> SandboxMode:
    """The sandbox a job will actually run under: "bwrap" when bwrap works and `mode` is auto or
    bwrap; "none" for mode none, or auto without a working bwrap. bwrap: see `probe_bwrap`.
    Raises SandboxError `sandbox.unavailable` (with bwrap's reason) when mode is bwrap and it does
    not work; `sandbox.bad_mode` for another value."""
    if mode == "none":
        return "none"
    if mode not in ("auto", "bwrap"):
        raise SandboxError("sandbox.bad_mode", f"sandbox.mode is {mode!r}", hint="use auto, bwrap or none")
    status = probe_bwrap(bwrap)
    if status.available:
        return "bwrap"
    if mode == "bwrap":
        raise SandboxError(
            "sandbox.unavailable",
            f"sandbox.mode is bwrap but the sandbox does not work: {status.reason}",
            hint='install bubblewrap and allow unprivileged user namespaces, or set sandbox.mode = "auto"',
        )
    return "none"


def default_python_prefixes() -> list[str]:
    """The directories of the Python in use: sys.prefix, sys.base_prefix, sys.exec_prefix,
    sys.base_exec_prefix and the install holding the real sys.executable (e.g.
    /root/.pyenv/versions/3.11.7). Never `/`, nor the operator's home or one of its parents."""
    real = Path(os.path.realpath(sys.executable))
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, str(real.parent.parent)]
    home = os.path.realpath(os.path.expanduser("~"))
    found: list[str] = []
    for raw in candidates:
        path = os.path.realpath(raw)
        if path == "/" or home == path or home.startswith(path.rstrip("/") + "/"):
            continue
        if path not in found and os.path.isdir(path):
            found.append(path)
    return found


def visible_paths(read_only: Sequence[str] = ()) -> list[str]:
    """The host paths a sandboxed job sees read-only (besides its checkout and scratch directory):
    the system directories that exist, the Python in use (`default_python_prefixes`) and the
    existing `read_only` paths (`sandbox.read_only`)."""
    found = [p for p in SYSTEM_DIRS if os.path.lexists(p)]
    found += [p for p in [*default_python_prefixes(), *read_only] if os.path.exists(p)]
    return list(dict.fromkeys(found))


def _covered(path: str, binds: Iterable[str]) -> bool:
    return any(path == b or path.startswith(b.rstrip("/") + "/") for b in binds)


def wrap_argv(
    argv: Sequence[str],
    *,
    workdir: Path,
    scratch: Path,
    network: bool,
    env: Mapping[str, str],
    python_prefixes: Sequence[str] | None = None,
    bwrap: str | None = None,
    read_only: Sequence[str] = (),
    devices: Sequence[str] = (),
    read_only_root: bool = False,
) -> list[str]:
    """The bwrap command line running `argv` in the sandbox, in `workdir`, with exactly `env`.

    workdir, scratch: bound writable on their own (absolute, resolved) paths. network: share the
    host's network (else a private, empty network namespace). python_prefixes: read-only Python dirs
    (default `default_python_prefixes()`). read_only: extra absolute paths bound read-only
    (`sandbox.read_only`; one that does not exist is skipped). The mount order matters: /tmp is a
    tmpfs mounted before the binds, so a checkout that lives under /tmp stays visible.
    (default `default_python_prefixes()`). devices: device nodes bound into the minimal /dev (a GPU
    job's `/dev/nvidia*`; missing ones are skipped). The mount order matters: /tmp is a tmpfs mounted before the
    binds, so a checkout that lives under /tmp stays visible. read_only_root: no tmpfs on /tmp, and
    the sandbox's root (with /tmp and the directories bwrap made to hold the binds) remounted
    read-only once every mount is in place: only `workdir`, `scratch` (and /dev) stay writable.
    """
    args = [bwrap or find_bwrap() or "bwrap"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dir", "/tmp"] if read_only_root else ["--tmpfs", "/tmp"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for device in devices:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    bound = [p for p in SYSTEM_DIRS if os.path.isdir(p)]
    prefixes = default_python_prefixes() if python_prefixes is None else python_prefixes
    for prefix in prefixes:
        if not _covered(prefix, bound):
            args += ["--ro-bind", prefix, prefix]
            bound.append(prefix)
    for path in read_only:
        if not _covered(path, bound):
            args += ["--ro-bind-try", path, path]
    work, scr = str(Path(workdir).resolve()), str(Path(scratch).resolve())
    args += ["--bind", work, work, "--bind", scr, scr]
    args += ["--remount-ro", "/"] if read_only_root else []
    args += ["--unshare-all"] + (["--share-net"] if network else [])
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "ratchet"]
    args += ["--chdir", work, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--", *argv]
