"""The channel folder (`.ratchet-sys/` of an agent's workspace) as the kernel touches it.

The agent owns this folder and may plant anything in it: symlinks, FIFOs, hard links, directories
where files belong. So the kernel:
- opens the channel as a directory descriptor with O_NOFOLLOW (a symlinked channel is refused) and
  reaches everything below it through descriptors, never through a path string;
- opens requests and markers with O_NONBLOCK|O_NOFOLLOW and checks S_ISREG after opening (a FIFO
  planted in place of a request would block a plain open; a symlink could point anywhere);
- writes through an unguessable temporary name opened O_CREAT|O_EXCL|O_NOFOLLOW and a rename over
  the destination, so it never opens (nor truncates) an existing inode: a hard link planted at a
  destination is replaced, not written through; it never sets times (`utime`);
- removes every request it read, valid or not, so a bad one is never read twice.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from ratchet.agents.command.limits import CHANNEL_DIR
from ratchet.core.errors import RatchetError

WRITE_TRIES = 8
"""Temporary names tried by `Channel.write` before giving up (each is 128 random bits)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ChannelError(RatchetError):
    """The channel or a file in it cannot be used; codes start with `channel.`. The message is
    shown to the agent at its next wake (or recorded as why its attempt ended)."""


def random_tokens() -> Iterator[str]:
    """Unguessable suffixes for temporary names (128 bits each)."""
    while True:
        yield secrets.token_hex(16)


def _check_name(name: str) -> str:
    if not name or "/" in name or "\0" in name or name in (".", ".."):
        raise ChannelError("channel.bad_name", f"{name!r} is not a file name")
    return name


def _remove(name: str, dir_fd: int) -> None:
    """Remove `name` whatever it is (file, symlink, FIFO, directory tree), never following a link."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    except (IsADirectoryError, PermissionError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.EISDIR, errno.EPERM, errno.EACCES):
            raise
        shutil.rmtree(name, dir_fd=dir_fd)


class Channel:
    """The channel folder of `workspace`, held open as a directory descriptor; a context manager.

    Paths are tuples of names below the channel (`("requests", "0001-a.json")`). Raises
    ChannelError `channel.symlink` when the channel (or the workspace) is a symlink,
    `channel.not_a_directory` when it is something else; a missing channel is created.
    tokens: suffixes for temporary names (default: random, see `random_tokens`).
    """

    def __init__(self, workspace: Path, tokens: Iterator[str] | None = None):
        self.tokens = tokens if tokens is not None else random_tokens()
        try:
            top = os.open(workspace, _DIR_FLAGS)
        except OSError as exc:
            raise ChannelError("channel.no_workspace", f"the workspace {workspace} cannot be opened: {exc}") from exc
        try:
            self.fd = _open_dir(top, CHANNEL_DIR, create=True, replace=False)
        finally:
            os.close(top)

    def close(self) -> None:
        """Release the channel's descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parent(self, path: Sequence[str], create: bool) -> int:
        """A new descriptor of the directory holding `path[-1]` (subdirectories created when
        `create`; a symlink or file planted where a subdirectory belongs is replaced by one)."""
        fd = os.dup(self.fd)
        for name in path[:-1]:
            try:
                sub = _open_dir(fd, _check_name(name), create=create, replace=create)
            finally:
                os.close(fd)
            fd = sub
        return fd

    def ensure_dir(self, path: Sequence[str]) -> None:
        """Make the directory `path` (and its parents) a real directory below the channel; a
        symlink or file planted on the way is replaced, never followed."""
        os.close(self._parent([*path, "."], create=True))

    def read(self, path: Sequence[str], cap: int) -> bytes:
        """The bytes of the regular file at `path`. Raises ChannelError `channel.missing`,
        `channel.not_regular` (a FIFO, a symlink, a directory, a socket...), `channel.too_large`
        (more than `cap` bytes: not read further)."""
        where = "/".join(path)
        try:
            parent = self._parent(path, create=False)
        except (OSError, ChannelError) as exc:
            raise ChannelError("channel.missing", f"{where} cannot be reached: {exc}") from exc
        try:
            fd = os.open(_check_name(path[-1]), _READ_FLAGS, dir_fd=parent)
        except FileNotFoundError as exc:
            raise ChannelError("channel.missing", f"{where} does not exist") from exc
        except OSError as exc:  # ELOOP: a symlink; ENXIO: a socket
            raise ChannelError("channel.not_regular", f"{where} is not a regular file ({exc.strerror})") from exc
        finally:
            os.close(parent)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ChannelError("channel.not_regular", f"{where} is not a regular file (a FIFO or device?)")
            data = _read_upto(fd, cap + 1)
        finally:
            os.close(fd)
        if len(data) > cap:
            raise ChannelError("channel.too_large", f"{where} is larger than {cap} bytes")
        return data

    def listdir(self, path: Sequence[str]) -> list[str]:
        """Names in the directory `path` (sorted; empty when it does not exist or is not a directory)."""
        try:
            fd = self._parent([*path, "."], create=False)
        except (OSError, ChannelError):
            return []
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def remove(self, path: Sequence[str]) -> None:
        """Remove whatever is at `path` (never following a link); nothing when absent."""
        try:
            parent = self._parent(path, create=False)
        except (OSError, ChannelError):
            return
        try:
            _remove(_check_name(path[-1]), parent)
        finally:
            os.close(parent)

    def write(self, path: Sequence[str], data: bytes, mode: int = 0o644) -> None:
        """Put `data` at `path` through a fresh temporary file and a rename (see the module
        docstring); a directory planted at `path` is removed first. Raises ChannelError
        `channel.write_failed`."""
        parent = self._parent(path, create=True)
        try:
            name = _check_name(path[-1])
            tmp = self._create_temp(parent, name, data, mode)
            try:
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError:
                _remove(name, parent)
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        finally:
            os.close(parent)

    def _create_temp(self, parent: int, name: str, data: bytes, mode: int) -> str:
        for _, token in zip(range(WRITE_TRIES), self.tokens, strict=False):
            tmp = f".{name}.{token}.tmp"
            try:
                fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=parent)
            except FileExistsError:
                continue  # something (a planted hard link) already holds this name: never reuse it
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            return tmp
        raise ChannelError("channel.write_failed", f"no free temporary name for {name} after {WRITE_TRIES} tries")


def _open_dir(parent: int, name: str, create: bool, replace: bool) -> int:
    """A descriptor of directory `name` under `parent`, opened without following a symlink.
    create: make it when missing. replace: remove a non-directory planted there and make it."""
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
            os.mkdir(name, 0o755, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if not replace:
                # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR on Linux: ask lstat which it was
                link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
                what = "a symlink" if link else "not a directory"
                code = "channel.symlink" if link else "channel.not_a_directory"
                raise ChannelError(code, f"{name} is {what}; the channel is refused",
                                   hint="the channel folder must be a plain directory") from exc
            _remove(name, parent)
            os.mkdir(name, 0o755, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _read_upto(fd: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
