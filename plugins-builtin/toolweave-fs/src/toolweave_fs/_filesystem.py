"""The file system as the fs tools see it: every path confined to the workspace root."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Literal

from toolweave import ErrorKind, Resources, ToolError, Workspace

__all__ = [
    "EntryType",
    "FileSystem",
    "encode",
    "entry_type",
    "filesystem",
    "os_error",
    "read_text",
]

EntryType = Literal["file", "directory", "symlink", "other"]


class FileSystem:
    """Resolves the paths a model sends and keeps every one of them inside ``root``.

    A path is relative to the root or absolute. It is resolved first (``..`` and every
    symbolic link followed, also links in parent directories and, for a path that does
    not exist yet, in its nearest existing parent) and only then compared with the
    root, so no spelling and no link leads outside; the rules are those of
    :meth:`toolweave.Workspace.resolve`.

    The pack puts one into every session's resources (built from the session's
    :class:`~toolweave.Workspace`); a host that inserts its own instance, or a subclass,
    before the session starts is left alone.

    Args:
        root: The directory the tools may use; made absolute with links resolved.
        fsync: Flush written files to disk before they replace the old ones, so a
            crash leaves either the old or the new content, never an empty file.

    Attributes:
        workspace: The confinement every path goes through, over ``root``.
        fsync: As given.

    Example:
        >>> fs = FileSystem("/srv/project")
        >>> fs.resolve("src/../README.md")
        PosixPath('/srv/project/README.md')
    """

    __slots__ = ("fsync", "workspace")

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.workspace = Workspace(Path(root))
        self.fsync = fsync

    def __repr__(self) -> str:
        return f"FileSystem({str(self.workspace.root)!r})"

    @property
    def root(self) -> Path:
        """The root directory, absolute and with links resolved."""
        return self.workspace.root

    # -- confinement ----------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real location of ``path``, with every link followed.

        Raises:
            ToolError: ``permission_denied`` when it lies outside the root;
                ``invalid_params`` when the path cannot be a path (a NUL byte).
        """
        return self.workspace.resolve(path)

    def locate(self, path: str) -> Path:
        """The directory entry ``path`` names, for tools that act on the entry itself.

        Links in the parent directories are followed, a link in the last component is
        not (deleting or moving a link acts on the link), but it must still lead inside
        the root.

        Raises:
            ToolError: As :meth:`resolve`.
        """
        return self.workspace.resolve(path, follow_final_link=False)

    def inside(self, real: str | os.PathLike[str]) -> bool:
        """Whether an already resolved path lies in the root (or is the root)."""
        return self.workspace.contains(real)

    def show(self, real: str | os.PathLike[str]) -> str:
        """How a path inside the root is shown to the model: relative, with ``/``."""
        return self.workspace.relative(real)

    # -- writing --------------------------------------------------------------------

    def write_atomic(self, target: Path, data: bytes) -> bool:
        """Replace ``target`` with ``data`` in one step, creating parent directories.

        The data goes to a temporary file in the same directory, which then replaces
        the target (``os.replace``), so readers see the old or the new content, never
        a part. An existing file keeps its permission bits.

        Args:
            target: A resolved path inside the root (from :meth:`resolve`).
            data: The new content.

        Returns:
            ``True`` when the file did not exist before.
        """
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = None
        tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                if self.fsync:
                    fh.flush()
                    os.fsync(fh.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return mode is None


def filesystem(resources: Resources) -> FileSystem:
    """The session's :class:`FileSystem`: the one in ``resources``, else a new one over
    the session's workspace, stored there for the next call."""
    found = resources.get(FileSystem)
    if found is not None:
        return found
    return resources.get_or_default(
        FileSystem, lambda: FileSystem(resources.require(Workspace).root)
    )


def entry_type(mode: int) -> EntryType:
    """The kind of a directory entry from its ``lstat`` mode."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def os_error(exc: OSError, shown: str) -> ToolError:
    """Turn an operating-system error about the path ``shown`` into a tool error."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(ErrorKind.NOT_FOUND, f"`{shown}` does not exist")
    if isinstance(exc, IsADirectoryError):
        return ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is a directory, not a file")
    if isinstance(exc, NotADirectoryError):
        return ToolError(
            ErrorKind.INVALID_PARAMS, f"a parent of `{shown}` is a file, not a directory"
        )
    if isinstance(exc, FileExistsError):
        return ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` already exists")
    if isinstance(exc, PermissionError):
        return ToolError(
            ErrorKind.PERMISSION_DENIED, f"the operating system denied access to `{shown}`"
        )
    if exc.errno == errno.ELOOP:
        return ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is a loop of symbolic links")
    reason = exc.strerror or str(exc)
    return ToolError(ErrorKind.EXECUTION_ERROR, f"`{shown}`: {reason}")


def encode(text: str, field: str) -> bytes:
    """``text`` as UTF-8; text that cannot be (a lone surrogate) is ``invalid_params``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"`{field}` holds a character that is not valid Unicode at position {exc.start}",
        ) from None


def read_text(real: Path, shown: str) -> str:
    """The whole content of a regular UTF-8 text file.

    Raises:
        ToolError: ``not_found`` when missing; ``invalid_params`` for a directory, a
            special file, or a file that is binary or not UTF-8.
    """
    try:
        info = os.stat(real)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is not a regular file")
        data = real.read_bytes()
    except OSError as exc:
        raise os_error(exc, shown) from None
    try:
        if b"\x00" in data:
            raise ValueError
        return data.decode("utf-8")
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_PARAMS, f"`{shown}` is a binary file (or not UTF-8 text)"
        ) from None
