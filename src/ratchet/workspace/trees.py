"""Tree entries and the filesystem side of `git.py`: writing a tree's blobs into a directory and
reading a directory's files back, without following symlinks and without git's filters.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ratchet.core.errors import GitError

SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"
EXEC_MODE = "100755"
FILE_MODE = "100644"
"""Git's modes of a tree entry: a symlink, a submodule (gitlink), an executable and a plain file."""

FD_BATCH = 128
"""Files hashed per `git hash-object` process (each one holds an open descriptor meanwhile)."""

IGNORED_EVERYWHERE = (".git",)
IGNORED_AT_TOP = (".ratchet-sys",)


@dataclass(frozen=True)
class TreeEntry:
    """One non-directory entry of a tree: git mode ("100644", "100755", "120000", "160000"),
    object type ("blob" or "commit"), object hash, and the path from the tree's root."""

    mode: str
    type: str
    oid: str
    path: str


def parse_ls_tree(out: bytes) -> list[TreeEntry]:
    """Entries of `git ls-tree -r -z` output."""
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split(" ")
        entries.append(TreeEntry(mode, kind, oid, path.decode("utf-8", "surrogateescape")))
    return entries


def _rule(rule: str) -> str:
    rule = rule.strip()
    while rule.startswith("./"):
        rule = rule[2:]
    return rule.rstrip("/")


def excluded(path: str, rules: Iterable[str]) -> bool:
    """True when `path` equals a rule or lies under one (a rule is a file or a directory prefix,
    with or without a trailing slash). Empty rules match nothing."""
    for raw in rules:
        rule = _rule(raw)
        if rule and (path == rule or path.startswith(rule + "/")):
            return True
    return False


def check_path(path: str) -> str:
    """`path` if it is a safe relative repository path; raises GitError `git.unsafe_path` for an
    absolute path, an empty, `.`, `..` or `.git` component, or a NUL byte."""
    parts = path.split("/")
    if (
        not path
        or "\0" in path
        or path.startswith("/")
        or any(p in ("", ".", "..") or p.lower() == ".git" for p in parts)
    ):
        raise GitError("git.unsafe_path", f"{path!r} is not a safe repository path")
    return path


def write_entries(cat: CatFile, entries: Sequence[TreeEntry], dest: Path) -> None:
    """Write each entry's blob under `dest` (files first is the caller's order: symlinks must come
    last so no file write passes through one). Files are created with O_EXCL|O_NOFOLLOW."""
    for entry in entries:
        target = dest / check_path(entry.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        header = cat.request(entry.oid)
        if header is None or header[1] != "blob":
            raise GitError("git.missing_object", f"blob {entry.oid} of {entry.path} is missing")
        if entry.mode == SYMLINK_MODE:
            os.symlink(os.fsdecode(cat.read_all(header[2])), target)
            continue
        mode = 0o755 if entry.mode == EXEC_MODE else 0o644
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, mode)
        try:
            cat.copy_to(fd, header[2])
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


HashPaths = Callable[..., list[str]]
HashBlobs = Callable[[Sequence[bytes]], list[str]]


def scan_dir(src: Path, hash_paths: HashPaths, hash_blobs: HashBlobs) -> list[TreeEntry]:
    """Entries for every regular file and symlink under `src`, hashed into the object store.

    Directories are walked through descriptors (O_DIRECTORY|O_NOFOLLOW) and files opened with
    O_NOFOLLOW|O_NONBLOCK, so neither a symlink swapped in nor a FIFO planted in `src` is followed
    or blocks; git reads each file through `/dev/fd/N`. Other file types are skipped.
    """
    files: list[tuple[str, int, str]] = []
    links: list[tuple[str, bytes]] = []
    entries: list[TreeEntry] = []
    root_fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for item in _walk(root_fd, ""):
            if isinstance(item[1], bytes):
                links.append(item)
            else:
                files.append(item)
                if len(files) >= FD_BATCH:
                    entries += _hash_files(files, hash_paths)
                    files = []
        entries += _hash_files(files, hash_paths)
    finally:
        for _, fd, _ in files:
            os.close(fd)
        os.close(root_fd)
    oids = hash_blobs([target for _, target in links])
    entries += [
        TreeEntry(SYMLINK_MODE, "blob", oid, path) for (path, _), oid in zip(links, oids, strict=True)
    ]
    return entries


def _walk(dir_fd: int, prefix: str) -> Iterable[tuple[str, int, str] | tuple[str, bytes]]:
    with os.scandir(dir_fd) as it:
        names = sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it)
    for name, is_dir, is_link in names:
        if name in IGNORED_EVERYWHERE or (not prefix and name in IGNORED_AT_TOP):
            continue
        path = f"{prefix}{name}"
        if is_link:
            yield path, os.fsencode(os.readlink(name, dir_fd=dir_fd))
        elif is_dir:
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            try:
                yield from _walk(sub, path + "/")
            finally:
                os.close(sub)
        else:
            opened = _open_regular(name, dir_fd)
            if opened is not None:
                yield path, opened[0], opened[1]


def _open_regular(name: str, dir_fd: int) -> tuple[int, str] | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None  # vanished, or a symlink swapped in after the listing
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, EXEC_MODE if st.st_mode & stat.S_IXUSR else FILE_MODE


def _hash_files(files: list[tuple[str, int, str]], hash_paths: HashPaths) -> list[TreeEntry]:
    if not files:
        return []
    fds = [fd for _, fd, _ in files]
    try:
        oids = hash_paths([f"/dev/fd/{fd}" for fd in fds], pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
        files_copy = list(files)
        files.clear()
    return [TreeEntry(mode, "blob", oid, path) for (path, _, mode), oid in zip(files_copy, oids, strict=True)]


class CatFile:
    """A running `git cat-file --batch`: `request(name)` then `read_all(size)` or `copy_to(fd, size)`."""

    def __init__(self, proc: subprocess.Popen[bytes]):
        self._proc = proc

    def request(self, name: str) -> tuple[str, str, int] | None:
        """Ask for object `name`; returns (oid, type, size) or None when it is missing. The object's
        bytes must then be consumed with `read_all` or `copy_to` before the next request."""
        assert self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode("utf-8", "surrogateescape").rstrip("\n")
        parts = header.split(" ")
        if len(parts) != 3 or not parts[2].isdigit():
            if header.endswith((" missing", " ambiguous")):
                return None
            raise GitError("git.cat_file", f"unexpected answer from git cat-file: {header!r}")
        return parts[0], parts[1], int(parts[2])

    def read_all(self, size: int) -> bytes:
        """The `size` bytes of the requested object."""
        assert self._proc.stdout
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        return data

    def copy_to(self, fd: int, size: int, chunk: int = 1 << 20) -> None:
        """Write the `size` bytes of the requested object to file descriptor `fd`, in chunks."""
        assert self._proc.stdout
        left = size
        while left:
            data = self._proc.stdout.read(min(chunk, left))
            if not data:
                raise GitError("git.cat_file", "git cat-file ended early")
            _write_all(fd, data)
            left -= len(data)
        self._proc.stdout.read(1)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
