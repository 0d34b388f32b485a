"""Reading below a directory descriptor, never through a link.

Every open here is relative to the descriptor of the directory that holds the entry,
with ``O_NOFOLLOW``: a directory swapped for a link to somewhere else fails to open
(``ELOOP`` or ``ENOTDIR``) instead of being followed, and what a descriptor names
stays what was checked however the tree changes afterwards. Symbolic links are never
followed here at all: the search tools skip them.

No toolweave import: the Python engine's worker process uses this module.
"""

from __future__ import annotations

import os
import stat

__all__ = ["DIR_FLAGS", "Below", "open_dir", "read_fd", "read_file"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
"""Flags that open a directory, and never a link to one."""

_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
"""Flags that open a file, never a link, and never wait on a FIFO."""


def open_dir(name: str, dir_fd: int) -> int | None:
    """The directory ``name`` of the directory open as ``dir_fd``, opened; ``None``
    when it is missing, not a directory, a link, or cannot be opened."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def read_fd(fd: int, max_bytes: int) -> bytes | None:
    """The content of the regular file open as ``fd``; ``None`` when it is something
    else or larger than ``max_bytes``."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)


def read_file(name: str, dir_fd: int, max_bytes: int) -> bytes | None:
    """The content of the regular file ``name`` of the directory open as ``dir_fd``;
    ``None`` when it is missing, a link, not a regular file, unreadable, or larger than
    ``max_bytes``."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return read_fd(fd, max_bytes)
    except OSError:
        return None
    finally:
        os.close(fd)


class Below:
    """Files below a directory descriptor, reached one component at a time without
    following links.

    The directories on the way to the last path asked for stay open, so paths in sorted
    order (as both engines list them) open each directory once. Close it after use (or
    use it in a ``with`` block); the base descriptor stays the caller's.
    """

    __slots__ = ("_base", "_names", "_open")

    def __init__(self, base_fd: int) -> None:
        self._base = base_fd
        self._names: list[str] = []
        self._open: list[int] = []

    def __enter__(self) -> Below:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the directories held open."""
        while self._open:
            os.close(self._open.pop())
        self._names.clear()

    def _folder(self, folders: list[str]) -> int | None:
        """The descriptor of ``folders`` below the base, or ``None`` (missing, a link)."""
        keep = 0
        while keep < min(len(folders), len(self._names)) and folders[keep] == self._names[keep]:
            keep += 1
        while len(self._open) > keep:
            os.close(self._open.pop())
            self._names.pop()
        for name in folders[keep:]:
            fd = open_dir(name, self._open[-1] if self._open else self._base)
            if fd is None:
                return None
            self._open.append(fd)
            self._names.append(name)
        return self._open[-1] if self._open else self._base

    def locate(self, rel: str) -> tuple[int, str] | None:
        """The descriptor of the directory holding ``rel`` (``/`` separators, below the
        base) and its last name; ``None`` when a directory on the way is missing or a
        link."""
        *folders, name = rel.split("/")
        if not name or any(part in ("", ".", "..") for part in folders) or name in (".", ".."):
            return None
        fd = self._folder(folders)
        return None if fd is None else (fd, name)

    def stat_file(self, rel: str) -> os.stat_result | None:
        """The status of the regular file ``rel``; ``None`` when it is not one (a link,
        a folder, missing) or a directory on the way is a link."""
        found = self.locate(rel)
        if found is None:
            return None
        try:
            info = os.stat(found[1], dir_fd=found[0], follow_symlinks=False)
        except OSError:
            return None
        return info if stat.S_ISREG(info.st_mode) else None

    def open_file(self, rel: str) -> int | None:
        """The regular file ``rel`` opened for reading (the caller closes it); ``None``
        when it is not one or a directory on the way is a link."""
        found = self.locate(rel)
        if found is None:
            return None
        try:
            fd = os.open(found[1], _FILE_FLAGS, dir_fd=found[0])
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return fd
