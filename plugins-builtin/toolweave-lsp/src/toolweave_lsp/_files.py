"""Reading the files the tools show a server or the model: regular files only, opened
without waiting (``O_NONBLOCK``: a FIFO is refused, never waited on), checked with
``fstat`` on the opened descriptor, and read no further than :data:`MAX_FILE_BYTES`.

Everything here blocks on the file system: call it in a worker thread, never on the
event loop.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolweave.resources import Workspace

__all__ = ["MAX_FILE_BYTES", "FileRefused", "line_texts", "read_regular", "read_source"]

MAX_FILE_BYTES = 8 * 1024 * 1024
"""The largest file sent to a language server, or read for the lines of locations."""

_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class FileRefused(Exception):
    """The file is not one the tools read: ``str(exc)`` says why (``is a directory``,
    ``is not a regular file ...``, ``is over the limit ...``)."""


def read_regular(fd: int, limit: int = MAX_FILE_BYTES) -> bytes:
    """The content of the regular file open as ``fd``, at most ``limit`` bytes.

    Raises:
        FileRefused: It is a directory, not a regular file (a FIFO, socket or device),
            or holds more than ``limit`` bytes (even when it grew since it was looked at).
        OSError: Reading failed.
    """
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise FileRefused("is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("is not a regular file (a FIFO, socket or device)")
    over = f"is over the limit of {limit:,} bytes"
    if info.st_size > limit:
        raise FileRefused(over)
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    if left <= 0:
        raise FileRefused(over)
    return b"".join(chunks)


def read_source(workspace: Workspace, path: Path) -> str:
    """The text of the workspace file ``path`` (opened through the workspace, so no link
    leads out), with ``\\r\\n`` and ``\\r`` read as ``\\n``.

    Raises:
        FileRefused: As :func:`read_regular`.
        UnicodeDecodeError: It is not UTF-8.
        OSError: It cannot be opened or read.
        ToolError: ``permission_denied`` when it leads outside the workspace.
    """
    with workspace.open(path, _READ) as entry:
        assert entry.fd is not None
        data = read_regular(entry.fd)
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def line_texts(path: Path) -> list[str]:
    """The lines of the file ``path`` (a server's location, inside the workspace or a
    library's), ``[]`` when it is not a readable regular file within the limit."""
    try:
        fd = os.open(path, _READ)
    except (OSError, ValueError):
        return []
    try:
        data = read_regular(fd)
    except (OSError, FileRefused):
        return []
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").splitlines()
