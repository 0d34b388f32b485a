"""Reading the files the tools show a server or the model: regular files only, opened
without waiting (``O_NONBLOCK``: a FIFO is refused, never waited on), checked with
``fstat`` on the opened descriptor, and read no further than :data:`MAX_FILE_BYTES`.

Everything here blocks on the file system: call it in a worker thread, never on the
event loop.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolweave.resources import FileRefused, Workspace, read_regular

__all__ = ["MAX_FILE_BYTES", "FileRefused", "line_texts", "read_source"]

MAX_FILE_BYTES = 8 * 1024 * 1024
"""The largest file sent to a language server, or read for the lines of locations."""

_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_source(workspace: Workspace, path: Path) -> str:
    """The text of the workspace file ``path`` (opened through the workspace, so no link
    leads out), with ``\\r\\n`` and ``\\r`` read as ``\\n``.

    Raises:
        FileRefused: A directory, not a regular file, or over :data:`MAX_FILE_BYTES`.
        UnicodeDecodeError: It is not UTF-8.
        OSError: It cannot be opened or read.
        ToolError: ``permission_denied`` when it leads outside the workspace.
    """
    data = workspace.read_bytes(path, MAX_FILE_BYTES)
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def line_texts(path: Path) -> list[str]:
    """The lines of the file ``path`` (a server's location, inside the workspace or a
    library's), ``[]`` when it is not a readable regular file within the limit."""
    try:
        fd = os.open(path, _READ)
    except (OSError, ValueError):
        return []
    try:
        data = read_regular(fd, MAX_FILE_BYTES)
    except (OSError, FileRefused):
        return []
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").splitlines()
