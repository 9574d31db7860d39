"""Safe file writes for the run directory: exclusive temp files, fsync, atomic rename.

Files the kernel writes in places an agent can touch are written exclusively:
a temp file created with O_CREAT|O_EXCL|O_NOFOLLOW (a symlink or file planted at the temp name
makes the write fail instead of writing through it), fsynced, then renamed over the target
(rename replaces a planted symlink itself, never the file it points to).
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from pathlib import Path

FILE_MODE = 0o600
"""Permissions of every file the ledger writes: a run's evidence is its owner's alone."""

SHARED_FILE_MODE = 0o644
"""Permissions of a file written outside a run directory that others may read (.git/info/exclude)."""

PRIVATE_DIR_MODE = 0o700
"""Permissions of a run directory and its subdirectories."""

DIR_MODE = 0o755
"""Permissions of every directory the ledger creates."""


def fsync_dir(path: Path) -> None:
    """fsync the directory `path` so a file created or renamed in it survives a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd`, looping over short writes. Raises OSError."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def temp_name(path: Path) -> Path:
    """A fresh hidden temp name next to `path` (same directory, so a rename is atomic)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")


def write_temp(path: Path, data: bytes, mode: int = FILE_MODE) -> Path:
    """Write `data` to a new exclusive temp file (permissions `mode`) next to `path`, fsync it,
    return its path. Raises OSError (FileExistsError if the temp name exists, ELOOP for a symlink).
    """
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def write_exclusive(path: str | os.PathLike[str], data: bytes, mode: int = FILE_MODE) -> None:
    """Atomically replace the file at `path` with exactly `data` (permissions `mode`): the one
    atomic exclusive write of the kernel (run directory, job results, pid records, the cache).

    Exclusive temp (O_CREAT|O_EXCL|O_NOFOLLOW) + fsync + rename + fsync of the directory: a reader
    sees the old content or the new, never a mix, and a symlink at `path` is replaced, not followed.
    The parent directory must exist. Raises OSError.
    """
    target = Path(path)
    tmp = write_temp(target, data, mode)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def read_nofollow(path: str | os.PathLike[str]) -> bytes:
    """All bytes of the regular file at `path`, refusing to follow a symlink (OSError ELOOP).

    O_NONBLOCK keeps a FIFO planted at `path` from blocking the open; a non-regular file raises
    IsADirectoryError/OSError. FileIO.readall reads into one buffer sized by fstat: the file is
    copied once, not once into chunks and again to join them (~20 ms on a 34 MiB ledger).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.fspath(path)} is not a regular file")
        with io.FileIO(fd, "rb", closefd=False) as file:
            return file.readall()
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """Create `path` and its parents (mode 0o755); an existing directory is fine."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
