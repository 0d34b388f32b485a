"""The file system as the fs tools see it: every path confined to the workspace root.

Every tool acts through a :class:`~toolweave.resources.Location`: the path is walked
from a descriptor of the root without following links out, and the entry is then read,
written, renamed or removed relative to the descriptor of its directory, never looked up
by path again. A directory swapped for a link while a tool runs is therefore not
followed (the tool works in the directory it checked, or fails).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from toolweave import ErrorKind, Resources, ToolError, Workspace
from toolweave.errors import preview
from toolweave.resources import Location

__all__ = [
    "EntryType",
    "FileSystem",
    "encode",
    "entry_type",
    "filesystem",
    "not_regular",
    "os_error",
    "read_text",
    "remove_tree",
    "special_kind",
    "writing",
]

_READ = os.O_RDONLY | os.O_NONBLOCK
"""How files are opened for reading: a FIFO does not block the open (it is then
refused as not a regular file)."""

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

    def entry(
        self,
        path: str,
        *,
        follow_final_link: bool = True,
        create_parents: bool = False,
        check_link_target: bool = True,
    ) -> Location:
        """The entry ``path`` names, held by a descriptor of its directory; see
        :meth:`toolweave.Workspace.locate` (``check_link_target=False`` only to unlink
        or rename a link itself). Use it in a ``with`` block.

        Raises:
            ToolError: ``permission_denied`` outside the root, ``invalid_params`` for a
                path that cannot be one, or the tool error for a system error (a missing
                or non-directory parent, a loop of links).
        """
        try:
            return self.workspace.locate(
                path,
                follow_final_link=follow_final_link,
                create_parents=create_parents,
                check_link_target=check_link_target,
            )
        except OSError as exc:
            raise self._walk_error(exc, path) from None

    def open(self, path: str, flags: int = _READ) -> Location:
        """The entry ``path`` names, opened with ``flags`` (``loc.fd``), links inside the
        root followed; see :meth:`toolweave.Workspace.open`.

        Raises:
            ToolError: As :meth:`entry`; ``not_found`` when nothing is there.
        """
        try:
            return self.workspace.open(path, flags)
        except OSError as exc:
            raise self._walk_error(exc, path) from None

    def _walk_error(self, exc: OSError, path: str) -> ToolError:
        """The error of a walk that failed on the way. A path with ``..`` is shown as
        sent, not normalised (``sub/..`` is not ``.`` when ``sub`` is missing), with the
        missing name."""
        if ".." not in path.split("/") or len(path) > 1000:
            return os_error(exc, self.spell(path))
        asked = preview(self.workspace.relative(path))
        if isinstance(exc, FileNotFoundError) and isinstance(exc.filename, str):
            return ToolError(
                ErrorKind.NOT_FOUND,
                f"`{asked}` does not exist: there is no `{preview(exc.filename)}` on the way",
            )
        return os_error(exc, asked)

    def spell(self, path: str) -> str:
        """How a path a model sent is shown before it was found: normalised, relative to
        the root when it is inside, and cut to a bounded preview."""
        if len(path) > 1000:
            return preview(path)
        text = self.workspace.relative(os.path.normpath(os.path.join(self.root, path)))
        return preview(text)

    def inside(self, real: str | os.PathLike[str]) -> bool:
        """Whether an already resolved path lies in the root (or is the root)."""
        return self.workspace.contains(real)

    def show(self, real: str | os.PathLike[str]) -> str:
        """How a path inside the root is shown to the model: relative, with ``/``."""
        return self.workspace.relative(real)

    # -- writing --------------------------------------------------------------------

    def write_atomic(self, target: str | os.PathLike[str] | Location, data: bytes) -> bool:
        """Replace ``target`` with ``data`` in one step, creating parent directories.

        The data goes to a temporary file in the same directory, which then replaces
        the target (``os.replace``), so readers see the old or the new content, never
        a part. An existing file keeps its permission bits. Every step is relative to a
        descriptor of the target's directory, so no link swapped in on the way is
        followed.

        Args:
            target: A path inside the root (walked with links inside followed and
                missing parents created), or an entry already located.
            data: The new content.

        Returns:
            ``True`` when the file did not exist before.

        Raises:
            ToolError: ``permission_denied`` for a path outside the root;
                ``invalid_params`` for a directory.
            OSError: From the system.
        """
        if not isinstance(target, Location):
            with self.workspace.locate(target, create_parents=True) as located:
                return self.write_atomic(located, data)
        if target.is_root:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        where, name = target.dir_fd, target.name
        try:
            info = os.stat(name, dir_fd=where, follow_symlinks=False)
        except FileNotFoundError:
            mode: int | None = None
        else:
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o666, dir_fd=where)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                if self.fsync:
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=where, dst_dir_fd=where)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=where)
            raise
        return mode is None


_WRITERS: dict[tuple[int, int, str], tuple[threading.Lock, int]] = {}
"""The lock of each entry being written, by (device, inode of its directory, name), and
how many calls hold or wait for it."""
_WRITERS_GUARD = threading.Lock()


@contextlib.contextmanager
def writing(entry: Location) -> Iterator[None]:
    """Hold the lock of ``entry`` (shared by every session of this process) while its
    content is read, changed and written back, so that two calls at once change the
    file one after the other and neither writes back text the other has replaced. Open
    the file once the lock is held.

    The entry is named by its directory's identity and its name: every path to it, from
    any workspace, takes the same lock; an atomic replace (a new file under the name)
    keeps it.
    """
    info = os.fstat(entry.dir_fd)
    key = (info.st_dev, info.st_ino, entry.name)
    with _WRITERS_GUARD:
        lock, users = _WRITERS.get(key, (None, 0))
        if lock is None:
            lock = threading.Lock()
        _WRITERS[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _WRITERS_GUARD:
            users = _WRITERS[key][1] - 1
            if users:
                _WRITERS[key] = (lock, users)
            else:
                del _WRITERS[key]


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


def special_kind(mode: int) -> str:
    """What an entry that is neither a regular file, a directory nor a link is, from its
    mode: ``a FIFO (named pipe)``, ``a socket``, ``a character device``, ..."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a special file"


def not_regular(mode: int, shown: str) -> ToolError:
    """The refusal to read an entry that is neither a regular file nor a directory,
    naming what it is (``invalid_params``)."""
    return ToolError(
        ErrorKind.INVALID_PARAMS,
        f"`{shown}` is {special_kind(mode)}, not a regular file; it cannot be read",
    )


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
    if exc.errno == errno.ENXIO:  # what open(2) says of a socket
        return ToolError(
            ErrorKind.INVALID_PARAMS,
            f"`{shown}` is a socket (or a device with nothing behind it), not a file or "
            "a directory; it cannot be opened",
        )
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


def read_text(fd: int, shown: str) -> str:
    """The whole content of the regular UTF-8 text file open as ``fd``.

    Raises:
        ToolError: ``invalid_params`` for a directory, a special file, or a file that is
            binary or not UTF-8.
    """
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(info.st_mode, shown)
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read()
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


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(dir_fd: int, name: str) -> None:
    """Remove the directory ``name`` of ``dir_fd`` with everything in it.

    The walk goes through descriptors only: each directory is opened relative to its
    parent's descriptor with ``O_NOFOLLOW``, so a directory swapped for a link while the
    walk runs is removed as a link (the link itself), never entered. The walk keeps one
    descriptor per level and no recursion, so depth is bounded by the descriptor limit,
    not by Python's stack.

    Raises:
        OSError: From the system (the first entry that cannot be removed).
    """
    stack: list[tuple[int, str, int, list[str]]] = []

    def enter(parent: int, entry: str) -> None:
        try:
            fd = os.open(entry, _DIR, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(entry, dir_fd=parent)  # no longer a directory: remove the entry
            return
        try:
            with os.scandir(fd) as it:
                children = [child.name for child in it]
        except BaseException:
            os.close(fd)
            raise
        stack.append((parent, entry, fd, children))

    enter(dir_fd, name)
    try:
        while stack:
            parent, entry, fd, children = stack[-1]
            if not children:
                stack.pop()
                os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(entry, dir_fd=parent)
                continue
            child = children.pop()
            try:
                info = os.stat(child, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    enter(fd, child)
                else:
                    os.unlink(child, dir_fd=fd)
            except FileNotFoundError:
                continue  # gone meanwhile
    finally:
        for _, _, fd, _ in stack:
            os.close(fd)
