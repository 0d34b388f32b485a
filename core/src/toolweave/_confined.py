"""Paths inside a folder, walked from its descriptor so that no link leads out.

Checking a path and then using it are two lookups: between them a directory on the way
can be swapped for a symbolic link to somewhere else, and the use follows the link the
check never saw. Here there is one lookup. The walk starts at a descriptor of the root
and opens each component relative to the descriptor of the one before with
``O_NOFOLLOW``; a link met on the way is read and its target walked the same way (from
the root when it is absolute), and ``..`` goes back to the descriptor it came from. The
result is an open descriptor of the directory that holds the entry, and every use
(open, stat, rename, unlink, mkdir) is relative to it, so a swap made after the walk
changes nothing: the descriptor still names the directory that was checked.

A walk that creates missing directories (``create_parents``) makes them only once the
whole path has been walked and found to stay inside: a missing directory is entered in
name only (it holds no links, and ``..`` leaves it again), so a path refused further on
(``new/dir/../../../out``) creates nothing. Directories made and then left by a failure
(a race, a system error) are removed again while they are empty.

What a descriptor cannot tell: a hard link inside the root to a file outside it is
the same file as the outside one; it is read and written like any file inside.

Linux (and other systems with ``openat``-style calls) only; where those calls are
missing every walk fails closed with ``unavailable``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from typing import Literal, final

from toolweave.errors import ErrorKind, ToolError, preview

__all__ = ["MAX_LINKS", "MAX_PATH_CHARS", "Location", "check_path", "real_path", "walk"]

MAX_PATH_CHARS = 4096
"""The longest path a walk accepts (Linux's ``PATH_MAX``), in characters."""

MAX_LINKS = 40
"""Symbolic links followed in one walk before it fails with ``ELOOP`` (as Linux does)."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_SUPPORTED = bool(
    _NOFOLLOW
    and _DIRECTORY
    and os.open in os.supports_dir_fd
    and os.readlink in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.stat in os.supports_follow_symlinks
)

Mode = Literal["keep", "link", "follow", "open"]


@final
class Location:
    """An entry of the root, held by an open descriptor of the directory it is in.

    Made by :meth:`toolweave.Workspace.locate` and :meth:`toolweave.Workspace.open`;
    use it in a ``with`` block (or call :meth:`close`). Everything done to the entry goes
    through :attr:`dir_fd` and :attr:`name` (``os.unlink(loc.name, dir_fd=loc.dir_fd)``),
    or through :attr:`fd` when the entry was opened, never through a path again.

    Attributes:
        dir_fd: Descriptor of the directory holding the entry; for the root itself, the
            root's own descriptor.
        name: The entry's name in that directory; ``""`` for the root itself.
        parts: The entry's real path below the root, one name per level (links
            resolved); empty for the root.
        fd: The entry opened (by :meth:`~toolweave.Workspace.open`), else ``None``.
    """

    __slots__ = ("dir_fd", "fd", "name", "parts")

    def __init__(self, dir_fd: int, name: str, parts: tuple[str, ...], fd: int | None = None):
        self.dir_fd = dir_fd
        self.name = name
        self.parts = parts
        self.fd = fd

    def __repr__(self) -> str:
        return f"Location({self.relative!r})"

    def __enter__(self) -> Location:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptors (twice is harmless)."""
        for fd in (self.fd, self.dir_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self.fd = None
        self.dir_fd = -1

    @property
    def is_root(self) -> bool:
        """Whether the entry is the root itself."""
        return not self.name

    @property
    def relative(self) -> str:
        """The entry's path below the root with ``/`` separators; ``"."`` for the root."""
        return "/".join(self.parts) or "."

    def lstat(self) -> os.stat_result:
        """The entry's status, a link's own (``lstat`` relative to :attr:`dir_fd`).

        Raises:
            OSError: As :func:`os.stat` (``FileNotFoundError`` when it does not exist).
        """
        if self.is_root:
            return os.stat(self.dir_fd)
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)

    def open(self, flags: int, mode: int = 0o666) -> int:
        """Open the entry itself, never through a link (``O_NOFOLLOW``); the caller
        closes the descriptor.

        Raises:
            OSError: As :func:`os.open`; ``ELOOP`` when the entry is now a link.
        """
        name = self.name or "."
        return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=self.dir_fd)


def real_path(path: str) -> str | None:
    """``os.path.realpath(path)``, or ``None`` when it runs into a loop of symbolic
    links: realpath then gives up and returns the rest unresolved (``loop/../out_link``
    gave ``out_link``, a link it never followed), which a second pass changes.

    Raises:
        OSError, ValueError: As :func:`os.path.realpath`.
    """
    # Repeated separators are one (POSIX), and are made one first: Python 3.11's
    # realpath loses the folder before them after a loop of links ("loop//src" gave
    # "/src").
    real = os.path.realpath(_SEPARATORS.sub(os.sep, path) if os.sep == "/" else path)
    return real if os.path.realpath(real) == real else None


_SEPARATORS = re.compile("//+")


def check_path(asked: str) -> None:
    """Refuse text that cannot be a path: longer than :data:`MAX_PATH_CHARS`, holding a
    NUL character, or a lone surrogate the file system encoding cannot write.

    Raises:
        ToolError: ``invalid_params`` naming the limit or the character.
    """
    if len(asked) > MAX_PATH_CHARS:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"the path `{preview(asked)}` is {len(asked)} characters long; the limit is "
            f"{MAX_PATH_CHARS}",
        )
    if "\x00" in asked:
        raise ToolError(
            ErrorKind.INVALID_PARAMS, f"the path {preview(asked)!r} contains a NUL character"
        )
    try:
        os.fsencode(asked)
    except UnicodeEncodeError as exc:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"the path {preview(asked)!r} holds a lone surrogate at position {exc.start}, "
            "which no file name can hold",
        ) from None


def _denied(asked: str, root: str, *, via_link: bool) -> ToolError:
    how = "leads" if via_link else "is"
    link = " through a symbolic link" if via_link else ""
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"`{preview(asked)}` {how} outside the workspace ({root}){link}; "
        "only paths inside the workspace can be used",
    )


def _names(text: str) -> list[str]:
    """The components of ``text``, ``""`` and ``"."`` left out."""
    return [p for p in text.split("/") if p not in ("", ".")]


def below_root(root: str, prefix: str, path: str) -> list[str] | None:
    """The components of ``path`` below ``root`` (``None``: it is not below it).

    A relative path is below the root as it is; an absolute one when it starts with the
    root, or when its real location does (the root spelled through a link elsewhere).
    Only the components are used afterwards, walked from the root's descriptor, so the
    look-up of an outside spelling cannot lead anywhere but inside.
    """
    if not path.startswith("/"):
        return _names(path)
    if path == root or path.startswith(prefix):
        return _names(path[len(prefix) :] if path != root else "")
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    if real == root or real.startswith(prefix):
        return _names(real[len(prefix) :] if real != root else "")
    return None


def _readlink(name: str, dir_fd: int) -> str | None:
    """The target of the link ``name``, or ``None`` when it is not (or no longer) one."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def walk(
    root: str,
    asked: str,
    *,
    mode: Mode,
    flags: int = os.O_RDONLY,
    create_parents: bool = False,
) -> Location:
    """Walk ``asked`` from the root's descriptor; see the module docstring.

    Args:
        root: The root, absolute, with links resolved.
        asked: Relative to the root, or absolute.
        mode: What to do with a link in the last component: ``keep`` it (the entry is
            the link; it must still lead inside), take it as the ``link`` it is
            whatever it leads to (for unlinking or renaming it, which never follow
            it), ``follow`` it, or ``open`` the entry with ``flags``, following links
            (the result's :attr:`Location.fd`).
        flags: The ``os.open`` flags of mode ``open`` (``O_NOFOLLOW`` is added).
        create_parents: Create missing directories on the way (modes other than
            ``open``), each relative to the descriptor of its parent. Nothing is
            created until the rest of the path is known to lead inside: a missing
            directory is first entered only in name (no link can be in it, and ``..``
            comes back out of it), and the directories still on the way when the walk
            ends are made then. A refused walk (or one that fails on the way) leaves
            nothing behind; a missing directory the path only passes through
            (``new/../file``) is not made at all.

    Returns:
        The entry, owning its descriptors.

    Raises:
        ToolError: ``permission_denied`` when the path, or a link on its way, leads
            outside the root; ``invalid_params`` for a path holding a NUL character or
            longer than :data:`MAX_PATH_CHARS`; ``unavailable`` where the system lacks
            the calls a confined walk needs.
        OSError: From the system: ``FileNotFoundError`` for a missing directory on the
            way (or, in mode ``open``, a missing entry), ``NotADirectoryError`` for a
            file on the way, ``ELOOP`` after :data:`MAX_LINKS` links.
    """
    if not _SUPPORTED:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "this system cannot open paths relative to a folder without following links, "
            "so paths cannot be confined to the workspace",
        )
    check_path(asked)
    prefix = root.rstrip("/") + "/"
    start = below_root(root, prefix, asked)
    if start is None:
        raise _denied(asked, root, via_link=False)
    # A path ending in "/", "." or ".." names a directory: its last link is followed.
    if mode in ("keep", "link") and os.path.basename(asked) in ("", ".", ".."):
        mode = "follow"
    pending = start[::-1]  # a stack: the next component is at the end
    stack = [os.open(root, _DIR_FLAGS)]
    names: list[str] = []
    links = 0
    via_link = False
    made = 0
    # Missing directories entered in name only (create_parents), below stack[-1]: they
    # are made once the walk has checked everything after them, so a refusal later on
    # the path creates nothing. ``creating`` is set when they are being made.
    virtual: list[str] = []
    creating = False
    created: list[tuple[int, str]] = []  # (parent descriptor, name): undone on failure

    def splice(target: str) -> None:
        nonlocal links, via_link
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), asked)
        via_link = True
        if target.startswith("/"):
            inside = below_root(root, prefix, target)
            if inside is None:
                raise _denied(asked, root, via_link=True)
            while len(stack) > 1:
                os.close(stack.pop())
            names.clear()
            pending.extend(inside[::-1])
        else:
            pending.extend(_names(target)[::-1])

    try:
        while pending or virtual:
            if virtual and (not pending or (pending[-1] != ".." and len(pending) == 1)):
                # The rest leads inside: make the missing directories, then go on.
                # With nothing after them (`new/sub/..`), the last is the entry itself,
                # which need not exist (as `new/`), so it is not made.
                pending.extend(virtual[::-1])
                virtual.clear()
                creating = True
                continue
            part = pending.pop()
            if virtual:  # inside a directory that does not exist yet
                if part == "..":
                    virtual.pop()
                else:
                    virtual.append(part)
                continue
            here = stack[-1]
            if part == "..":
                if not names:
                    if root == "/":
                        continue
                    raise _denied(asked, root, via_link=via_link)
                os.close(stack.pop())
                names.pop()
                continue
            if not pending and mode != "follow":
                if mode == "link":
                    return _result(stack, names, part)
                if mode == "keep":
                    target = _readlink(part, here)
                    if target is not None:
                        _check_link(root, names, part, asked)
                    return _result(stack, names, part)
                try:
                    fd = os.open(part, flags | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=here)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    target = _readlink(part, here)
                    if target is None:
                        raise
                    splice(target)
                    continue
                return _result(stack, names, part, fd)
            if not pending:  # mode "follow": the entry is this component, unless a link
                target = _readlink(part, here)
                if target is None:
                    return _result(stack, names, part)
                splice(target)
                continue
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=here)
            except FileNotFoundError:
                if not create_parents or made > MAX_PATH_CHARS:
                    raise
                if not creating:
                    virtual.append(part)  # made later, when the rest is known to be fine
                    continue
                made += 1
                try:
                    os.mkdir(part, 0o777, dir_fd=here)
                except FileExistsError:
                    pass
                else:
                    created.append((os.dup(here), part))
                pending.append(part)  # open what was made, still without following
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                target = _readlink(part, here)
                if target is None:
                    raise
                splice(target)
                continue
            stack.append(fd)
            names.append(part)
        # Nothing left: the entry is the directory on top of the stack.
        if not names:
            opened = os.dup(stack[0]) if mode == "open" else None
            return Location(stack.pop(), "", (), opened)
        top = stack.pop()
        names_t = tuple(names)
        if mode == "open":
            return Location(stack.pop(), names_t[-1], names_t, top)
        os.close(top)
        return Location(stack.pop(), names_t[-1], names_t)
    except BaseException:
        # Only a race (a directory swapped while the walk made the ones below it) or a
        # system error while making them gets here with directories made: remove them,
        # deepest first, where they are still empty.
        for parent, name in reversed(created):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=parent)
        raise
    finally:
        for fd in stack:
            os.close(fd)
        for parent, _ in created:
            os.close(parent)


def _result(stack: list[int], names: list[str], part: str, fd: int | None = None) -> Location:
    """The entry ``part`` of the directory on top of ``stack``, which it takes over."""
    return Location(stack.pop(), part, (*names, part), fd)


def _check_link(root: str, names: list[str], part: str, asked: str) -> None:
    """Refuse a link kept as the entry when it leads outside the root; one that dangles
    or loops inside is fine."""
    try:
        with walk(root, "/".join((*names, part)), mode="follow"):
            pass
    except ToolError as exc:
        if exc.kind is ErrorKind.PERMISSION_DENIED:
            raise _denied(asked, root, via_link=True) from None
        raise
    except OSError:
        pass
