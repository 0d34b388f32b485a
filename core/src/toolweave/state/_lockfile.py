"""An exclusive lock between processes on a small side file (``state.db.lock``).

The SQLite store holds it only while it opens, creates, migrates or moves aside its
database file, so two processes never decide about one file at the same time. SQLite's
own locks cannot serve here: a file that is not a database has none, and closing any
descriptor of the database file would drop the locks SQLite holds on it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exclusive"]

_POLL = 0.005
_NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
"""Opening a symbolic link fails (``ELOOP``) instead of reaching its target (POSIX)."""


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def exclusive(path: Path, timeout: float) -> Iterator[None]:
    """Hold the lock of ``path`` (created when missing) for the ``with`` block.

    A lock file this process may not write is locked through a read-only descriptor;
    where it may neither create nor read one (a read-only folder), no lock is taken:
    such a process cannot create, migrate or move aside the database either. A lock
    file that is a symbolic link is never followed.

    Raises:
        TimeoutError: Another process held it for ``timeout`` seconds.
        OSError: The lock file is a symbolic link (``ELOOP``), or cannot be opened for
            another reason than permissions.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno not in _NOT_WRITABLE:
            raise
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError as again:
            if again.errno not in {*_NOT_WRITABLE, errno.ENOENT}:
                raise
            yield
            return
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{path} stayed locked by another process for {timeout:g} s")
            time.sleep(_POLL)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
