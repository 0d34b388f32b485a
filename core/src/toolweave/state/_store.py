"""The state store interface, its conflict error, and the in-memory store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import ClassVar, NamedTuple, Protocol, final, runtime_checkable

from pydantic import BaseModel

from toolweave.errors import StateConflict

__all__ = [
    "MemoryStateStore",
    "StateConflict",
    "StateStore",
    "StoredState",
    "state_key",
    "store_revision",
]


class StoredState(NamedTuple):
    """One stored value and its version."""

    value: str
    """The JSON text."""
    version: int
    """Counts the writes of the key (1 for the first); a key that is not stored has
    version 0. It never goes back, not even when the key is deleted and written again."""


@runtime_checkable
class StateStore(Protocol):
    """Where sessions keep their runtime state between processes.

    Values are JSON text keyed by ``(session_id, key)``; a key names one state model
    (see :func:`state_key`). Every stored key has a version (see :class:`StoredState`).

    **The guarantee** every store gives: a :meth:`save` with ``expected`` versions is a
    compare-and-set over all its keys at once: it stores every change only when every
    named key still has the expected version, and otherwise stores nothing and raises
    :class:`StateConflict`. So a writer that read a key at version *v* and saves with
    ``expected={key: v}`` never overwrites a write it has not seen, whichever process
    or host made it. (SQLite does this in one ``BEGIN IMMEDIATE`` transaction; a Redis
    store would use ``WATCH``/``MULTI`` or one Lua script.)

    The methods block: a session reads on the first access to a model in a call and
    saves from a worker thread, so a store may do disk or network I/O. Implementations
    must be safe to call from several threads. A store whose methods never block may say
    so with a class attribute ``blocking = False``; its saves then run in the event loop.

    A store may also offer ``revision()``: a cheap hashable value that equals an
    earlier one only if nothing was written to the store in between, by this process
    or another (SQLite: ``PRAGMA data_version`` with a count of its own saves). A
    session then reads a key again after a call only when the revision moved; without
    it, the first access after a call reads the key's version.
    """

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        """The stored values of ``session_id`` (only ``keys``, when given), by key; keys
        that are not stored are left out. One consistent read."""
        ...

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        """Apply ``changes`` atomically and return the new version of each changed key.

        A value replaces the key's value, ``None`` deletes the key; either every change
        is stored or none is. A key named in ``expected`` is changed only if its version
        is still the expected one (0: not stored); keys of ``changes`` not named there
        are written unconditionally.

        Raises:
            StateConflict: A key's version differs from the expected one; nothing was
                stored.
        """
        ...

    def close(self) -> None:
        """Release the store's resources; it is not used afterwards."""
        ...


def store_revision(store: object) -> Callable[[], Hashable] | None:
    """The store's ``revision`` method (see :class:`StateStore`), if it has one."""
    method = getattr(store, "revision", None)
    return method if callable(method) else None


def state_key(model: type[BaseModel]) -> str:
    """The key a state model is stored under.

    A model may name its key with a class variable (``state_key: ClassVar[str] =
    "plan.todos"``), which keeps stored state when the class moves; the default is
    ``module:QualifiedName``.
    """
    declared = getattr(model, "state_key", None)
    if isinstance(declared, str) and declared:
        return declared
    return f"{model.__module__}:{model.__qualname__}"


@final
class MemoryStateStore:
    """A store that keeps state in memory: for tests and for sessions that should not
    outlive their process. Sessions of one process sharing it see one another's state.

    It keeps the versions and the compare-and-set of :class:`StateStore` exactly as the
    SQLite store does.
    """

    blocking: ClassVar[bool] = False
    """Saves are quick dictionary updates, done in the event loop."""

    def __init__(self) -> None:
        # session -> key -> (value, or None once deleted; version)
        self._data: dict[str, dict[str, tuple[str | None, int]]] = {}
        self._lock = threading.Lock()
        self._writes = 0

    def revision(self) -> int:
        """Counts the saves (see :class:`StateStore`)."""
        return self._writes

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        """See :meth:`StateStore.load`."""
        with self._lock:
            values = self._data.get(session_id, {})
            wanted = values if keys is None else keys
            out: dict[str, StoredState] = {}
            for key in wanted:
                found = values.get(key)
                if found is not None and found[0] is not None:
                    out[key] = StoredState(found[0], found[1])
            return out

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        """See :meth:`StateStore.save`."""
        with self._lock:
            values = self._data.setdefault(session_id, {})
            if expected:
                conflicts: dict[str, StoredState | None] = {}
                for key, version in expected.items():
                    value, current = values.get(key, (None, 0))
                    live = current if value is not None else 0
                    if live != version:
                        conflicts[key] = None if value is None else StoredState(value, current)
                if conflicts:
                    raise StateConflict(session_id, conflicts)
            versions: dict[str, int] = {}
            self._writes += 1
            for key, value in changes.items():
                old, current = values.get(key, (None, 0))
                if value is None and old is None:
                    versions[key] = 0
                    continue
                values[key] = (value, current + 1)
                versions[key] = current + 1 if value is not None else 0
            return versions

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"<MemoryStateStore sessions={len(self._data)}>"
