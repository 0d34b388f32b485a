"""The state store interface and the in-memory store."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import ClassVar, Protocol, final, runtime_checkable

from pydantic import BaseModel

__all__ = ["MemoryStateStore", "StateStore", "state_key"]


@runtime_checkable
class StateStore(Protocol):
    """Where sessions keep their runtime state between processes.

    Values are JSON text keyed by ``(session_id, key)``; a key names one state model
    (see :func:`state_key`). The methods block: a session loads once, on the first
    access to its state, and saves from a worker thread, so a store may do disk or
    network I/O. Implementations must be safe to call from several threads. A store
    whose methods never block may say so with a class attribute ``blocking = False``;
    its saves then run in the event loop.
    """

    def load(self, session_id: str) -> dict[str, str]:
        """Every stored value of ``session_id``, by key (empty for a new session)."""
        ...

    def save(self, session_id: str, changes: Mapping[str, str | None]) -> None:
        """Apply ``changes`` atomically: a value replaces the key's value, ``None``
        deletes the key. Either every change is stored or none is."""
        ...

    def close(self) -> None:
        """Release the store's resources; it is not used afterwards."""
        ...


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
    outlive their process. Sessions of one process sharing it see one another's state."""

    blocking: ClassVar[bool] = False
    """Saves are quick dictionary updates, done in the event loop."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def load(self, session_id: str) -> dict[str, str]:
        """See :meth:`StateStore.load`."""
        with self._lock:
            return dict(self._data.get(session_id, {}))

    def save(self, session_id: str, changes: Mapping[str, str | None]) -> None:
        """See :meth:`StateStore.save`."""
        with self._lock:
            values = self._data.setdefault(session_id, {})
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"<MemoryStateStore sessions={len(self._data)}>"
