"""Where a search starts: the folder or file a call names, opened through the
workspace's confined walk and held by descriptors from then on."""

from __future__ import annotations

import os
import stat
from typing import final

from toolweave import ErrorKind, ToolError, Workspace
from toolweave.errors import preview

from toolweave_search._fdwalk import DIR_FLAGS

__all__ = ["Start"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@final
class Start:
    """The opened start of a search, and the workspace root's descriptor.

    Use it in a ``with`` block. Every later access of either engine goes through these
    descriptors (a folder swapped for a link after the walk is never followed).

    Attributes:
        root_fd: The workspace root, open.
        fd: The folder or file searched, open (walked from the root; links on the way
            that stay inside are followed, as :meth:`toolweave.Workspace.open` does).
        parts: Its real path below the root, one name per level (empty: the root).
        is_file: Whether it is a regular file (else a folder).
    """

    __slots__ = ("fd", "is_file", "parts", "root_fd")

    def __init__(self, workspace: Workspace, path: str) -> None:
        """Open ``path`` (relative to the root, ``""`` for the root).

        Raises:
            ToolError: ``not_found`` when it does not exist, ``invalid_params`` when it
                is neither a folder nor a regular file, and as
                :meth:`toolweave.Workspace.open` (``permission_denied`` outside).
        """
        try:
            location = workspace.open(path, os.O_RDONLY | _NONBLOCK)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(
                ErrorKind.NOT_FOUND, f"`{preview(path)}` does not exist in the workspace"
            ) from None
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"`{preview(path)}` cannot be opened: {exc.strerror}"
            ) from None
        with location:
            assert location.fd is not None
            self.fd = os.dup(location.fd)
            self.parts = location.parts
        mode = os.fstat(self.fd).st_mode
        self.is_file = stat.S_ISREG(mode)
        if not (self.is_file or stat.S_ISDIR(mode)):
            os.close(self.fd)
            raise ToolError(
                ErrorKind.INVALID_PARAMS, f"`{preview(path)}` is neither a folder nor a file"
            )
        self.root_fd = os.open(workspace.root, DIR_FLAGS)

    def below(self, fd: int, parts: tuple[str, ...]) -> Start:
        """A start for the folder open as ``fd`` (which it takes over) at ``parts``
        below the root, with its own descriptor of the root."""
        inner = object.__new__(Start)
        inner.fd = fd
        inner.parts = parts
        inner.is_file = False
        inner.root_fd = os.dup(self.root_fd)
        return inner

    def __enter__(self) -> Start:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close both descriptors (twice is harmless)."""
        for fd in (self.fd, self.root_fd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.root_fd = -1

    @property
    def folder(self) -> str:
        """The real path below the root, ``/`` separators, ``""`` for the root."""
        return "/".join(self.parts)
