"""The I/O of one running job: capped output files, stdin feeding, and waiting for the job's exit
without reaping it (so its pid and process group stay reserved while the kernel kills leftovers).
"""

from __future__ import annotations

import os
import select
import signal
import threading
from pathlib import Path

from ratchet.compute.base import TAIL_BYTES

READ_CHUNK_BYTES = 64 * 1024
"""Bytes read from a job's pipe at a time; the kernel's memory per job stays around this size."""


class CappedOutput:
    """One output stream of a job, written to `path` (created with O_EXCL|O_NOFOLLOW): at most
    `cap` bytes reach the file, the rest is read and dropped; the last TAIL_BYTES are kept.

    keep_end: when the stream outgrows `cap`, the file ends up holding its last `cap` bytes instead
    of its first (the end is kept in memory, at most `cap` bytes, and written over the file at
    `close`). `seen`: bytes the job wrote to the stream; `truncated`: seen > cap.
    """

    def __init__(self, path: Path, cap: int, keep_end: bool = False):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self.path = path
        self._fd = os.open(path, flags, 0o644)
        self._cap = max(0, cap)
        self.written = 0
        self.seen = 0
        self.truncated = False
        self._tail = bytearray()
        self._end = bytearray() if keep_end else None

    def feed(self, data: bytes) -> None:
        """Account for `data` read from the job: write what fits under the cap, keep the tail."""
        self.seen += len(data)
        room = self._cap - self.written
        if room > 0:
            view = memoryview(data)[:room]
            while view:
                view = view[os.write(self._fd, view) :]
            self.written += min(room, len(data))
        if len(data) > max(room, 0):
            self.truncated = True
        if self._end is not None:
            self._end += data
            del self._end[: max(0, len(self._end) - self._cap)]
        self._tail += data[-TAIL_BYTES:]
        del self._tail[:-TAIL_BYTES]

    def tail(self) -> str:
        """The last TAIL_BYTES bytes seen, decoded as UTF-8 with replacement."""
        return bytes(self._tail).decode("utf-8", "replace")

    def close(self) -> None:
        """Close the file (idempotent); with keep_end, a stream over the cap is first replaced by
        its last `cap` bytes."""
        if self._fd >= 0:
            if self._end is not None and self.truncated:
                os.ftruncate(self._fd, 0)
                view = memoryview(bytes(self._end))
                offset = 0
                while offset < len(view):
                    offset += os.pwrite(self._fd, view[offset:], offset)
                self.written = len(view)
            os.close(self._fd)
            self._fd = -1


class ExitWatch:
    """A descriptor that becomes readable when process `pid` exits, without reaping it: a pidfd
    (Linux >= 5.3), else a pipe written by a thread blocked in waitid(WNOWAIT)."""

    def __init__(self, pid: int):
        self.pid = pid
        self._pidfd: int | None = None
        self._pipe: tuple[int, int] | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
            self.fd = self._pidfd
        except (AttributeError, OSError):
            self._pipe = os.pipe()
            self.fd = self._pipe[0]
            threading.Thread(target=self._wait, daemon=True, name=f"ratchet-exit-{pid}").start()

    def _wait(self) -> None:
        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass
        assert self._pipe is not None
        os.write(self._pipe[1], b"x")

    def send(self, sig: int) -> None:
        """Signal the process itself (safe against pid reuse: it is not reaped before `close`)."""
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, OSError):
            pass

    def close(self) -> None:
        """Release the descriptors (call after reaping)."""
        if self._pidfd is not None:
            os.close(self._pidfd)
        if self._pipe is not None:
            os.close(self._pipe[0])
            os.close(self._pipe[1])
        self._pidfd = self._pipe = None


class JobIO:
    """Pumps one job's pipes: reads stdout/stderr into CappedOutput sinks, feeds stdin, and notes
    when the leader exits (`exited`) or the executor's wake pipe fires (`woken`)."""

    def __init__(
        self,
        outputs: dict[int, CappedOutput],
        stdin_fd: int | None,
        stdin_bytes: bytes | None,
        exit_watch: ExitWatch,
        wake_fd: int,
    ):
        self._poll = select.poll()
        self._outputs = dict(outputs)
        for fd in self._outputs:
            self._poll.register(fd, select.POLLIN)
        self._stdin_fd = stdin_fd
        self._stdin = memoryview(stdin_bytes or b"")
        if stdin_fd is not None:
            os.set_blocking(stdin_fd, False)
            self._poll.register(stdin_fd, select.POLLOUT)
        self._exit_fd = exit_watch.fd
        self._poll.register(self._exit_fd, select.POLLIN)
        self._wake_fd = wake_fd
        self._poll.register(wake_fd, select.POLLIN)
        self.exited = False
        self.woken = False

    @property
    def streams_open(self) -> bool:
        """True while stdout or stderr has not reached end of file."""
        return bool(self._outputs)

    def pump(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` seconds for activity and handle all of it once."""
        for fd, _ in self._poll.poll(max(0, int(timeout_s * 1000))):
            if fd in self._outputs:
                self._read(fd)
            elif fd == self._stdin_fd:
                self._write_stdin()
            elif fd == self._exit_fd:
                self.exited = True
                self._poll.unregister(fd)
            elif fd == self._wake_fd:
                self.woken = True
                self._poll.unregister(fd)

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        if data:
            self._outputs[fd].feed(data)
        else:
            self._poll.unregister(fd)
            del self._outputs[fd]

    def _write_stdin(self) -> None:
        assert self._stdin_fd is not None
        try:
            sent = os.write(self._stdin_fd, self._stdin[:READ_CHUNK_BYTES]) if self._stdin else 0
            self._stdin = self._stdin[sent:]
        except BlockingIOError:
            return
        except OSError:  # the job closed its stdin (EPIPE)
            self._stdin = memoryview(b"")
        if not self._stdin:
            self._poll.unregister(self._stdin_fd)
            os.close(self._stdin_fd)
            self._stdin_fd = None

    def close_stdin(self) -> None:
        """Stop feeding stdin (the job has ended)."""
        if self._stdin_fd is not None:
            self._poll.unregister(self._stdin_fd)
            os.close(self._stdin_fd)
            self._stdin_fd = None
