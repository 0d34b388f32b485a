"""A thread-safe, type-keyed container of the things tools need."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar, overload

from toolweave._confined import MAX_PATH_CHARS, Location, check_path, real_path, walk
from toolweave.errors import ErrorKind, MissingResourceError, ToolError, preview

__all__ = [
    "MAX_PATH_CHARS",
    "SAFE_VARIABLES",
    "Environment",
    "FileRefused",
    "Location",
    "Resources",
    "Workspace",
    "read_regular",
    "safe_environ",
]

T = TypeVar("T")
_MISSING: Any = object()


class Resources:
    """Maps a type to one value of that type.

    Tools read their collaborators (terminal, file system, workspace, environment,
    notifier, their effective params) through their call context, which looks them up
    here. A container may have a parent: lookups fall back to it, writes never do, so a
    session can layer its own values over values shared by every session.

    Reads take no lock (a dict lookup is atomic); writes and ``get_or_default`` do.

    Example:
        >>> from pathlib import Path
        >>> res = Resources()
        >>> res.insert(Path("/tmp"), Path)  # without a key: under type(value), PosixPath
        >>> res.require(Path)
        PosixPath('/tmp')
    """

    __slots__ = ("_lock", "_parent", "_values")

    def __init__(self, parent: Resources | None = None) -> None:
        self._values: dict[type[Any], Any] = {}
        self._parent = parent
        self._lock = threading.RLock()

    def child(self) -> Resources:
        """A new container layered over this one."""
        return Resources(self)

    @overload
    def insert(self, value: T) -> None: ...
    @overload
    def insert(self, value: T, key: type[T]) -> None: ...

    def insert(self, value: Any, key: type[Any] | None = None) -> None:
        """Store ``value`` under ``key`` (default: its exact type, ``type(value)``),
        replacing any old value. Lookups match the key exactly, never a base class."""
        with self._lock:
            self._values[type(value) if key is None else key] = value

    def remove(self, key: type[Any]) -> None:
        """Remove the value stored here under ``key`` (the parent is untouched)."""
        with self._lock:
            self._values.pop(key, None)

    def get(self, key: type[T]) -> T | None:
        """The value for ``key``, or ``None`` when there is none."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            return self._parent.get(key) if self._parent is not None else None
        return value  # type: ignore[no-any-return]

    def require(self, key: type[T]) -> T:
        """The value for ``key``.

        Raises:
            MissingResourceError: No value was stored for ``key``; the message names it.
        """
        value = self._values.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[no-any-return]
        if self._parent is not None:
            return self._parent.require(key)
        raise MissingResourceError(key)

    def get_or_default(self, key: type[T], default: Callable[[], T]) -> T:
        """The value for ``key``; when missing, store ``default()`` here and return it.

        Concurrent callers get the same value: ``default`` runs at most once per key.
        """
        found = self.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self.get(key)
            if found is None:
                found = default()
                self._values[key] = found
            return found

    def __contains__(self, key: type[Any]) -> bool:
        return key in self._values or (self._parent is not None and key in self._parent)

    def __iter__(self) -> Iterator[type[Any]]:
        seen = set(self._values)
        yield from self._values
        if self._parent is not None:
            yield from (k for k in self._parent if k not in seen)

    def __repr__(self) -> str:
        names = ", ".join(k.__qualname__ for k in self)
        return f"Resources({names})"


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folder a session works in; file and command tools stay inside it.

    :meth:`resolve` turns a path a model sent into a real location inside the root:
    relative to the root or absolute, resolved first (``..`` and every symbolic link
    followed, also links in parent directories and, for a path that does not exist
    yet, in its nearest existing parent) and only then compared with the root, so no
    spelling and no link leads outside. :meth:`relative` shows such a location to the
    model again.

    :meth:`resolve` is a check: what it returns is looked up again by whoever uses it,
    and a directory on the way can be swapped for a link in between. To act on a path,
    use :meth:`locate` or :meth:`open`: they walk it from a descriptor of the root
    without following links out and return a :class:`Location` that every later call
    goes through (``os.unlink(loc.name, dir_fd=loc.dir_fd)``), so nothing swapped after
    the check is followed. A hard link to a file outside cannot be told from a file
    inside by any of them.

    Attributes:
        root: The workspace root, absolute and with symbolic links resolved.

    Example:
        >>> ws = Workspace(Path("/srv/project"))
        >>> ws.resolve("src/../README.md")
        PosixPath('/srv/project/README.md')
        >>> ws.relative(ws.resolve("/srv/project/src/app.py"))
        'src/app.py'
    """

    root: Path
    _text: str = field(init=False, repr=False, compare=False)
    """The root as a string (``os.path`` on strings is several times cheaper than
    :mod:`pathlib` on a call's path)."""
    _prefix: str = field(init=False, repr=False, compare=False)
    """The root with one trailing separator: what every path inside starts with."""

    def __post_init__(self) -> None:
        text = os.path.realpath(self.root)
        object.__setattr__(self, "root", Path(text))
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_prefix", text.rstrip(os.sep) + os.sep)

    def resolve(
        self,
        path: str | os.PathLike[str],
        *,
        must_exist: bool = False,
        follow_final_link: bool = True,
    ) -> Path:
        """The location inside the root that ``path`` names.

        Args:
            path: Relative to the root, or absolute; ``""`` and ``"."`` name the root.
            must_exist: Fail with ``not_found`` when nothing is there.
            follow_final_link: Follow a symbolic link in the last component (the
                default: the location is where the link leads). ``False`` is for tools
                that act on the entry itself, such as deleting or moving a link: the
                result is the link, in its real parent directory, and what it leads to
                must still be inside the root.

        Returns:
            An absolute path inside the root (or the root itself).

        Raises:
            ToolError: ``permission_denied`` when the path, or a link on its way, leads
                outside the root; ``not_found`` (with ``must_exist``) when nothing is
                there; ``invalid_params`` when the text cannot be a path (a NUL byte).
        """
        asked = os.fspath(path)
        check_path(asked)
        joined = os.path.join(self._text, asked)
        if not follow_final_link:
            parent, name = os.path.split(joined)
            if name not in ("", ".", ".."):
                entry = os.path.join(self._inside(parent, asked), name)
                if os.path.islink(entry):
                    self._inside(entry, asked)
                if must_exist and not os.path.lexists(entry):
                    raise self._missing(asked)
                return Path(entry)
        real = self._inside(joined, asked)
        if must_exist and not os.path.exists(real):
            raise self._missing(asked)
        return Path(real)

    def locate(
        self,
        path: str | os.PathLike[str],
        *,
        follow_final_link: bool = True,
        create_parents: bool = False,
        check_link_target: bool = True,
    ) -> Location:
        """The entry ``path`` names, held by a descriptor of its directory.

        The path is walked from a descriptor of the root, one component at a time,
        never following a link the walk has not read and checked; a link on the way is
        followed by walking its target the same way. Use the result in a ``with`` block
        and act on the entry through it (``loc.dir_fd`` and ``loc.name``), so that a
        directory swapped for a link after this call is not followed.

        Args:
            path: Relative to the root, or absolute; ``""`` and ``"."`` name the root.
            follow_final_link: Follow a link in the last component (the default).
                ``False`` is for acting on the entry itself (deleting or moving a link):
                the entry is the link, and what it leads to must still be inside
                (unless ``check_link_target`` is ``False``).
            create_parents: Create missing directories on the way, each inside the
                descriptor of its parent.
            check_link_target: With ``follow_final_link=False``, refuse a link in the
                last component that leads outside (the default). ``False`` takes the
                link as the entry whatever it leads to: only for unlinking or renaming
                the link itself (``os.unlink``, ``os.replace`` relative to
                ``loc.dir_fd``), which never follow it; never for reading, writing or
                listing through it. Links on the way are checked all the same.

        Returns:
            The entry (which need not exist), owning an open descriptor.

        Raises:
            ToolError: ``permission_denied`` when the path, or a link on its way, leads
                outside the root; ``invalid_params`` for a NUL character or a path over
                :data:`MAX_PATH_CHARS` characters.
            OSError: ``FileNotFoundError`` when a directory on the way is missing (and
                not created), ``NotADirectoryError`` when one is a file, ``ELOOP`` for
                too many links.
        """
        return walk(
            self._text,
            os.fspath(path),
            mode="follow" if follow_final_link else "keep" if check_link_target else "link",
            create_parents=create_parents,
        )

    def open(self, path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> Location:
        """Open the entry ``path`` names, following links that stay inside the root.

        As :meth:`locate`, and the entry itself is opened with ``flags`` (and
        ``O_NOFOLLOW``, a link in the last component being walked like any other), so
        what is opened is what was checked. The descriptor is ``loc.fd``.

        Args:
            path: Relative to the root, or absolute; ``""`` and ``"."`` name the root.
            flags: As :func:`os.open`; add ``os.O_NONBLOCK`` when reading something
                that might be a FIFO.

        Returns:
            The opened entry; closing it closes both descriptors.

        Raises:
            ToolError: As :meth:`locate`.
            OSError: As :func:`os.open`, e.g. ``FileNotFoundError`` when it is missing.
        """
        return walk(self._text, os.fspath(path), mode="open", flags=flags)

    def read_bytes(
        self, path: str | os.PathLike[str], limit: int, *, truncate: bool = False
    ) -> bytes:
        """The content of the regular file ``path`` names (links inside the root
        followed, as :meth:`open`), read as :func:`read_regular` reads it: opened
        without waiting (a FIFO is refused, never waited on), at most ``limit`` bytes.
        Blocking: call it on a worker thread.

        Raises:
            FileRefused: A directory, a FIFO, socket or device, or (unless
                ``truncate``) more than ``limit`` bytes.
            ToolError: As :meth:`locate`.
            OSError: As :func:`os.open` (``FileNotFoundError`` when it is missing).
        """
        with self.open(path, _READ_NOW) as entry:
            assert entry.fd is not None
            return read_regular(entry.fd, limit, truncate=truncate)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """How a location inside the root is shown to the model: relative to the root,
        with ``/`` separators, ``"."`` for the root itself. A location outside the root
        is returned as it is."""
        text = os.fspath(path)
        if text == self._text:
            return "."
        if text.startswith(self._prefix):
            text = text[len(self._prefix) :]
        return text.replace(os.sep, "/") if os.sep != "/" else text

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether an absolute, already resolved path is the root or lies below it."""
        text = os.fspath(path)
        return text == self._text or text.startswith(self._prefix)

    def _inside(self, joined: str, asked: str) -> str:
        """``joined`` with every link followed, or ``permission_denied`` outside."""
        try:
            real = real_path(joined)
        except (OSError, ValueError) as exc:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"the path `{preview(asked)}` cannot be resolved: {preview(exc)}",
            ) from exc
        if real is None:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"the path `{preview(asked)}` cannot be resolved: it runs into a loop of "
                "symbolic links",
            )
        if real == self._text or real.startswith(self._prefix):
            return real
        how = "leads" if self.contains(os.path.normpath(joined)) else "is"
        link = " through a symbolic link" if how == "leads" else ""
        raise ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"`{preview(asked)}` {how} outside the workspace ({self._text}){link}; "
            "only paths inside the workspace can be used",
        )

    def _missing(self, asked: str) -> ToolError:
        return ToolError(ErrorKind.NOT_FOUND, f"`{preview(asked)}` does not exist in the workspace")


SAFE_VARIABLES: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "TMPDIR",
    "TZ",
)
"""Variables of the host's environment that commands get by default (``fnmatch``
patterns, case-sensitive): where programs are, who and where the user is, language,
terminal, temp folder, time zone. Nothing that usually holds a credential."""


_READ_NOW = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Opening a file to read it without waiting: a FIFO with no writer does not block."""


class FileRefused(ValueError):
    """A file :func:`read_regular` does not read. ``str(exc)`` completes a sentence
    about the file (``f"{name} {exc}"``): ``is a directory, not a file``, ``is not a
    regular file (a FIFO, socket or device)``, ``is over the limit of 1,024 bytes``.

    Attributes:
        reason: ``"directory"``, ``"special"`` or ``"too_large"``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_regular(fd: int, limit: int, *, truncate: bool = False) -> bytes:
    """The content of the regular file open as ``fd``, at most ``limit`` bytes: what a
    tool reads of a file a model named, which may be a FIFO, a device such as
    ``/dev/zero``, or a file that grows while it is read. Open it without waiting
    (``os.O_NONBLOCK``, as :meth:`Workspace.read_bytes` does). Blocking: call it on a
    worker thread.

    Args:
        fd: The open file (read from where its offset is).
        limit: The most bytes returned.
        truncate: Return the first ``limit`` bytes of a larger file instead of
            refusing it.

    Raises:
        FileRefused: A directory, or not a regular file (checked on ``fd`` itself, so
            nothing swapped in after a look by path is read); without ``truncate``, a
            file over ``limit`` bytes (also one that grew past it while read).
        OSError: Reading failed.
    """
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise FileRefused("directory", "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("special", "is not a regular file (a FIFO, socket or device)")
    over = FileRefused("too_large", f"is over the limit of {limit:,} bytes")
    if info.st_size > limit and not truncate:
        raise over
    chunks: list[bytes] = []
    left = limit if truncate else limit + 1  # one byte more tells a file that grew
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    if left <= 0 and not truncate:
        raise over
    return b"".join(chunks)


def safe_environ(passthrough: Iterable[str] = ()) -> dict[str, str]:
    """The variables of this process's environment that match :data:`SAFE_VARIABLES`
    or one of the ``passthrough`` names or patterns."""
    patterns = (*SAFE_VARIABLES, *passthrough)
    return {
        name: value
        for name, value in os.environ.items()
        if any(fnmatchcase(name, pattern) for pattern in patterns)
    }


@dataclass(frozen=True, slots=True)
class Environment:
    """Environment variables that commands started by tools receive.

    ``Environment()`` holds only the allow-listed variables of this process
    (:data:`SAFE_VARIABLES`): the host's secrets (API keys, tokens) never reach a
    command unless the host passes them. ``Environment(os.environ)`` (or
    :meth:`everything`) passes everything, an explicit choice.

    Attributes:
        variables: The variables, as a read-only mapping.
    """

    variables: Mapping[str, str] = field(default_factory=safe_environ)

    @classmethod
    def everything(cls) -> Environment:
        """This process's whole environment, secrets included (an explicit opt-in)."""
        return cls(dict(os.environ))
