"""The runtime state of one session: model instances, their stored form, their locks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, final

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from toolweave.errors import UsageError
from toolweave.state._store import MemoryStateStore, StateStore, state_key

__all__ = ["SessionState", "StateSlot"]

logger = logging.getLogger("toolweave")

M = TypeVar("M", bound=BaseModel)


@final
class StateSlot:
    """One state model of a session: its live instance and what the store holds.

    Attributes:
        key: The store key (see :func:`~toolweave.state.state_key`).
        model: The pydantic model.
        value: The live instance that tools read and mutate.
        saved: The JSON the store holds for it (the fingerprint compared after a call).
    """

    __slots__ = ("key", "model", "saved", "value")

    def __init__(self, key: str, model: type[BaseModel], value: BaseModel, saved: str) -> None:
        self.key = key
        self.model = model
        self.value = value
        self.saved = saved


@final
class SessionState:
    """The state models of one session, loaded from a store on first use.

    The store is opened and the session's values are read once, the first time any
    state is asked for, so sessions that never use state touch no file. Each model's
    instance is validated on first access; stored data that no longer fits the model is
    logged and replaced by the model's defaults.

    After a call, :meth:`persist` dumps the models the call touched and saves the ones
    whose JSON changed, in one store transaction, from a worker thread. Saves of a
    session are serialised and each dumps the models when it runs, so a later save
    never writes older data than an earlier one.

    Args:
        session_id: The session's id, the first half of every store key.
        open_store: Returns the store; called once, on first use. If it raises, the
            failure is logged and state lives in memory only.
    """

    __slots__ = (
        "_lock_of",
        "_locks",
        "_locks_of",
        "_open_store",
        "_persist_lock",
        "_raw",
        "_slots",
        "_store",
        "session_id",
    )

    def __init__(self, session_id: str, open_store: Callable[[], StateStore]) -> None:
        self.session_id = session_id
        self._open_store = open_store
        self._store: StateStore | None = None
        self._raw: dict[str, str] | None = None
        self._slots: dict[type[BaseModel], StateSlot] = {}
        self._locks: dict[str, anyio.Semaphore] = {}
        self._lock_of: dict[type[BaseModel], tuple[str, anyio.Semaphore]] = {}
        self._locks_of: dict[
            tuple[type[BaseModel], ...], tuple[tuple[str, anyio.Semaphore], ...]
        ] = {}
        self._persist_lock: anyio.Lock | None = None

    @property
    def store(self) -> StateStore:
        """The store (opened on first use)."""
        if self._store is None:
            try:
                self._store = self._open_store()
            except Exception as exc:
                logger.warning(
                    "the state store could not be opened (%s: %s); session %s keeps its "
                    "state in memory only",
                    type(exc).__name__,
                    exc,
                    self.session_id,
                )
                self._store = MemoryStateStore()
        return self._store

    def _stored(self) -> dict[str, str]:
        raw = self._raw
        if raw is None:
            try:
                raw = self.store.load(self.session_id)
            except Exception as exc:
                logger.warning(
                    "state of session %s could not be loaded (%s: %s); starting empty",
                    self.session_id,
                    type(exc).__name__,
                    exc,
                )
                raw = {}
            self._raw = raw
        return raw

    def slot(self, model: type[BaseModel]) -> StateSlot:
        """The slot of ``model``, loading it on first access.

        Raises:
            UsageError: ``model`` is not a pydantic model, or has required fields and
                nothing is stored for it.
        """
        slot = self._slots.get(model)
        if slot is not None:
            return slot
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UsageError(f"state must be a pydantic model class, got {model!r}")
        key = state_key(model)
        stored = self._stored().get(key)
        value: BaseModel | None = None
        if stored is not None:
            try:
                value = model.model_validate_json(stored)
            except ValidationError as exc:
                logger.warning(
                    "stored state %r of session %s does not fit %s (%d problems); "
                    "starting from its defaults",
                    key,
                    self.session_id,
                    model.__qualname__,
                    exc.error_count(),
                )
                stored = None
        if value is None:
            try:
                value = model()
            except ValidationError as exc:
                raise UsageError(
                    f"state model {model.__qualname__} needs defaults for every field"
                ) from exc
        slot = StateSlot(
            key, model, value, stored if stored is not None else value.model_dump_json()
        )
        self._slots[model] = slot
        return slot

    def get(self, model: type[M]) -> M:
        """The session's live instance of ``model``."""
        value: Any = self.slot(model).value
        return value  # type: ignore[no-any-return]

    def replace(self, value: BaseModel) -> StateSlot:
        """Make ``value`` the live instance of its model."""
        slot = self.slot(type(value))
        slot.value = value
        return slot

    def lock(self, model: type[BaseModel]) -> tuple[str, anyio.Semaphore]:
        """The key of ``model`` and the lock that serialises calls of tools declaring it.

        A semaphore rather than a lock: a stream may release it from another task.
        """
        found = self._lock_of.get(model)
        if found is None:
            key = state_key(model)
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = anyio.Semaphore(1)
            found = self._lock_of[model] = (key, lock)
        return found

    def locks(self, models: tuple[type[BaseModel], ...]) -> tuple[tuple[str, anyio.Semaphore], ...]:
        """The keys and locks of ``models``, one per key, sorted by key: every call
        takes the locks it needs in this one order, so two calls never wait on each
        other crosswise."""
        found = self._locks_of.get(models)
        if found is None:
            by_key = dict(self.lock(model) for model in models)
            found = self._locks_of[models] = tuple(sorted(by_key.items()))
        return found

    async def persist(self, slots: Iterable[StateSlot]) -> None:
        """Save the ``slots`` whose JSON changed, in one transaction; shielded from
        cancellation. A failing store is logged; the live state is kept."""
        slots = list(slots)
        if all(slot.value.model_dump_json() == slot.saved for slot in slots):
            return
        with anyio.CancelScope(shield=True):
            if self._persist_lock is None:
                self._persist_lock = anyio.Lock()
            async with self._persist_lock:
                changed: list[tuple[StateSlot, str]] = []
                for slot in slots:
                    data = slot.value.model_dump_json()
                    if data != slot.saved:
                        changed.append((slot, data))
                if not changed:
                    return
                changes: dict[str, str | None] = {s.key: d for s, d in changed}
                store = self.store
                try:
                    if getattr(store, "blocking", True):
                        await anyio.to_thread.run_sync(store.save, self.session_id, changes)
                    else:
                        store.save(self.session_id, changes)
                except Exception:
                    logger.exception(
                        "saving the state of session %s failed; it is kept in memory",
                        self.session_id,
                    )
                    return
                for slot, data in changed:
                    slot.saved = data

    async def persist_all(self) -> None:
        """Save every loaded model that changed (for changes made outside calls)."""
        await self.persist(list(self._slots.values()))

    def __repr__(self) -> str:
        keys = ", ".join(s.key for s in self._slots.values())
        return f"<SessionState {self.session_id} [{keys}]>"
