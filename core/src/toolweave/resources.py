"""A thread-safe, type-keyed container of the things tools need."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from toolweave.errors import MissingResourceError

__all__ = ["Environment", "Resources", "Workspace"]

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

    Attributes:
        root: The workspace root, absolute and with symbolic links resolved.
    """

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())


@dataclass(frozen=True, slots=True)
class Environment:
    """Environment variables that commands started by tools receive.

    Attributes:
        variables: The variables, as a read-only mapping.
    """

    variables: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
