"""The runtime state of one session: model instances, their stored form, their locks.

How a session keeps its state right when other processes (or other sessions of this
process) write the same session id:

* Every slot remembers the store version of the JSON it was loaded from.
* After a call that used a slot (when :meth:`SessionState.persist` ran for it), the slot
  is marked; its next access, the first one of the next call, reads the key's version
  and, if another writer changed it meanwhile and the slot holds no unsaved change,
  loads the stored value into the live instance (in place, so references to it stay
  valid). A call that holds the model's lock therefore starts from the latest state.
  When the store offers a ``revision()`` (see :class:`~toolweave.state.StateStore`)
  that has not moved since the slot was read, nothing was written anywhere meanwhile
  and the key is not read again.
* :meth:`SessionState.persist` saves with a compare-and-set on those versions. If
  another writer saved the key after it was read, nothing is saved: the slots are
  reloaded from the store (the other writer's update is kept, the call's change is
  dropped), a warning is logged, and ``persist`` returns the
  :class:`~toolweave.state.StateConflict`.
* :meth:`SessionState.update` is a read-modify-write that cannot lose updates: under
  the model's lock it reloads, applies a function and saves, and on a conflict reloads
  and applies the function again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar, final

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from toolweave.errors import UsageError
from toolweave.state._store import (
    MemoryStateStore,
    StateConflict,
    StateStore,
    StoredState,
    state_key,
    store_revision,
)

__all__ = ["SessionState", "StateSlot"]

logger = logging.getLogger("toolweave")

M = TypeVar("M", bound=BaseModel)


@final
class _Failed:
    """What :meth:`SessionState._read` returns when the store could not be read."""


_FAILED: Final = _Failed()

UPDATE_ATTEMPTS = 100
"""How often :meth:`SessionState.update` applies its function before giving up."""


@final
class StateSlot:
    """One state model of a session: its live instance and what the store holds.

    Attributes:
        key: The store key (see :func:`~toolweave.state.state_key`).
        model: The pydantic model.
        value: The live instance that tools read and mutate.
        saved: The JSON the store holds for it (the fingerprint compared after a call).
        version: The store version of ``saved`` (0: nothing stored).
        check: Compare ``version`` with the store on the next access (set after each
            call that used the slot).
        revision: The store's revision taken before ``saved`` was read (``None``: unknown,
            or the store has none).
    """

    __slots__ = ("check", "key", "model", "revision", "saved", "value", "version")

    def __init__(
        self, key: str, model: type[BaseModel], value: BaseModel, saved: str, version: int = 0
    ) -> None:
        self.key = key
        self.model = model
        self.value = value
        self.saved = saved
        self.version = version
        self.check = False
        self.revision: Any = None


@final
class SessionState:
    """The state models of one session, each loaded from a store on first use.

    The store is opened the first time any state is asked for, so sessions that never
    use state touch no file. A model's instance is read and validated on its first
    access; stored data that no longer fits the model is logged and replaced by the
    model's defaults. After a call that used a model, its next access first checks
    that no other writer changed it (see the module's docstring).

    After a call, :meth:`persist` dumps the models the call touched and saves the ones
    whose JSON changed, in one compare-and-set store transaction, from a worker thread.
    Saves of a session are serialised and each dumps the models when it runs, so a
    later save never writes older data than an earlier one.

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
        "_revision",
        "_save_failure",
        "_slots",
        "_store",
        "session_id",
    )

    def __init__(self, session_id: str, open_store: Callable[[], StateStore]) -> None:
        self.session_id = session_id
        self._open_store = open_store
        self._store: StateStore | None = None
        self._slots: dict[type[BaseModel], StateSlot] = {}
        self._locks: dict[str, anyio.Semaphore] = {}
        self._lock_of: dict[type[BaseModel], tuple[str, anyio.Semaphore]] = {}
        self._locks_of: dict[
            tuple[type[BaseModel], ...], tuple[tuple[str, anyio.Semaphore], ...]
        ] = {}
        self._persist_lock: anyio.Lock | None = None
        self._revision: Callable[[], Any] | None = None
        self._save_failure: str | None = None

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
            self._revision = store_revision(self._store)
        return self._store

    def _current_revision(self) -> Any:
        """The store's revision now (``None``: it has none, or it failed)."""
        if self._store is None:
            self._store = self.store  # opens it, and finds its revision
        revision = self._revision
        if revision is None:
            return None
        try:
            return revision()
        except Exception:
            return None  # the read that follows reports the problem

    def _read(self, key: str) -> StoredState | _Failed | None:
        """What the store holds for ``key`` (``None``: nothing), or ``_FAILED``."""
        try:
            return self.store.load(self.session_id, (key,)).get(key)
        except Exception as exc:
            logger.warning(
                "state %r of session %s could not be read (%s: %s)",
                key,
                self.session_id,
                type(exc).__name__,
                exc,
            )
            return _FAILED

    def _decode(self, model: type[BaseModel], key: str, stored: StoredState | None) -> StateSlot:
        """A slot for what the store holds (``None``: the model's defaults)."""
        value: BaseModel | None = None
        if stored is not None:
            try:
                value = model.model_validate_json(stored.value)
            except ValidationError as exc:
                logger.warning(
                    "stored state %r of session %s does not fit %s (%d problems); "
                    "starting from its defaults",
                    key,
                    self.session_id,
                    model.__qualname__,
                    exc.error_count(),
                )
        if value is None:
            try:
                value = model()
            except ValidationError as exc:
                raise UsageError(
                    f"state model {model.__qualname__} needs defaults for every field"
                ) from exc
            saved = value.model_dump_json()
        else:
            assert stored is not None
            saved = stored.value
        return StateSlot(key, model, value, saved, stored.version if stored is not None else 0)

    def _reset(self, slot: StateSlot, stored: StoredState | None) -> None:
        """Make ``slot`` hold what the store holds, keeping its live instance."""
        fresh = self._decode(slot.model, slot.key, stored)
        try:
            slot.value.__setstate__(fresh.value.__getstate__())
        except Exception:  # pragma: no cover - a model that refuses it: a new instance
            slot.value = fresh.value
        slot.saved = fresh.saved
        slot.version = fresh.version

    def _refresh(self, slot: StateSlot) -> None:
        """Load what another writer stored for ``slot`` since it was read, unless the
        slot holds a change not saved yet (that change's save will conflict). Nothing is
        read when the store's revision has not moved since the slot was read."""
        revision = self._current_revision()
        if revision is not None and revision == slot.revision:
            return
        stored = self._read(slot.key)
        if isinstance(stored, _Failed):
            return
        if (stored.version if stored is not None else 0) == slot.version:
            slot.revision = revision
            return
        if slot.value.model_dump_json() != slot.saved:
            return
        self._reset(slot, stored)
        slot.revision = revision

    def slot(self, model: type[BaseModel]) -> StateSlot:
        """The slot of ``model``, loading it on first access (and checking it against
        the store on the first access after a call used it).

        Raises:
            UsageError: ``model`` is not a pydantic model, or has required fields and
                nothing is stored for it.
        """
        slot = self._slots.get(model)
        if slot is not None:
            if slot.check:
                slot.check = False
                self._refresh(slot)
            return slot
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UsageError(f"state must be a pydantic model class, got {model!r}")
        key = state_key(model)
        revision = self._current_revision()
        stored = self._read(key)
        failed = isinstance(stored, _Failed)
        slot = self._decode(model, key, None if isinstance(stored, _Failed) else stored)
        if not failed:
            slot.revision = revision
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

    async def persist(self, slots: Iterable[StateSlot]) -> StateConflict | None:
        """Save the ``slots`` whose JSON changed, in one compare-and-set transaction;
        shielded from cancellation.

        A failing store is logged; the live state is kept. When another writer changed
        one of the keys since it was read, nothing is saved: the changed slots are
        reloaded from the store (their live instances now hold the other writer's
        data), a warning is logged and the conflict is returned.

        Returns:
            The conflict, or ``None`` when the changes were saved (or there were none,
            or the store failed).
        """
        return await self._persist(list(slots), announce=True)

    async def _persist(self, slots: list[StateSlot], *, announce: bool) -> StateConflict | None:
        try:
            if all(slot.value.model_dump_json() == slot.saved for slot in slots):
                return None
            with anyio.CancelScope(shield=True):
                if self._persist_lock is None:
                    self._persist_lock = anyio.Lock()
                async with self._persist_lock:
                    return await self._save(slots, announce)
            return None  # pragma: no cover - a shielded scope is never cancelled
        finally:
            for slot in slots:
                slot.check = True

    async def _save(self, slots: list[StateSlot], announce: bool) -> StateConflict | None:
        changed: list[tuple[StateSlot, str]] = []
        for slot in slots:
            data = slot.value.model_dump_json()
            if data != slot.saved:
                changed.append((slot, data))
        if not changed:
            return None
        changes: dict[str, str | None] = {s.key: d for s, d in changed}
        expected = {s.key: s.version for s, _ in changed}
        store = self.store
        blocking = getattr(store, "blocking", True)
        try:
            if blocking:
                versions = await anyio.to_thread.run_sync(
                    lambda: store.save(self.session_id, changes, expected=expected)
                )
            else:
                versions = store.save(self.session_id, changes, expected=expected)
        except StateConflict as conflict:
            if announce:
                logger.warning(
                    "%s; the session reloaded it and its unsaved change was dropped", conflict
                )
            try:
                keys = [s.key for s, _ in changed]
                if blocking:
                    now = await anyio.to_thread.run_sync(store.load, self.session_id, keys)
                else:
                    now = store.load(self.session_id, keys)
            except Exception:
                logger.exception("reloading the state of session %s failed", self.session_id)
                return conflict
            for slot, _ in changed:
                self._reset(slot, now.get(slot.key))
                slot.revision = None
            return conflict
        except Exception as exc:
            self._save_failed(exc)
            return None
        if self._save_failure is not None:
            self._save_failure = None
            logger.warning(
                "saving the state of session %s works again",
                self.session_id,
            )
        for slot, data in changed:
            slot.saved = data
            slot.version = versions.get(slot.key, slot.version + 1)
            slot.revision = None  # the save moved the revision; read the key next time
        return None

    def _save_failed(self, exc: Exception) -> None:
        """Log a failed save: with its traceback the first time, and again only when it
        fails otherwise (a full disk or a missing folder fails every save until mended;
        the repeats go to the debug log)."""
        what = f"{type(exc).__name__}: {exc}"
        if what == self._save_failure:
            logger.debug(
                "saving the state of session %s failed again (%s); it is kept in memory",
                self.session_id,
                what,
            )
            return
        self._save_failure = what
        logger.error(
            "saving the state of session %s failed; it is kept in memory",
            self.session_id,
            exc_info=exc,
        )

    async def persist_all(self) -> StateConflict | None:
        """Save every loaded model that changed (for changes made outside calls); see
        :meth:`persist`."""
        return await self.persist(list(self._slots.values()))

    async def update(
        self,
        model: type[M],
        change: Callable[[M], M | None],
        *,
        attempts: int = UPDATE_ATTEMPTS,
    ) -> M:
        """Change ``model``'s state with ``change`` and save it, losing no other writer's
        update, whichever process made it.

        Holds the model's lock (so the session's calls of tools declaring it wait),
        reloads the model if another writer changed it, calls ``change`` with the live
        instance (it mutates it, or returns a new instance), and saves with a
        compare-and-set. On a conflict it reloads and calls ``change`` again, so
        ``change`` may run more than once and should only compute the new state.

        Args:
            model: The state model.
            change: Mutates the instance it gets, or returns its replacement.
            attempts: How often to apply ``change`` before giving up.

        Returns:
            The saved instance (kept in memory only when the store fails, which is
            logged as for :meth:`persist`).

        Raises:
            StateConflict: Other writers won ``attempts`` times in a row.
            UsageError: ``change`` returned an instance of another class.
        """
        _, lock = self.lock(model)
        conflict: StateConflict | None = None
        async with lock:
            for _ in range(max(1, attempts)):
                slot = self._slots.get(model)
                if slot is None:
                    slot = self.slot(model)
                else:
                    slot.check = False
                    self._refresh(slot)
                current: Any = slot.value
                result = change(current)
                if result is not None and result is not current:
                    if type(result) is not model:
                        raise UsageError(
                            f"update of {model.__qualname__} returned a {type(result).__qualname__}"
                        )
                    slot.value = result
                conflict = await self._persist([slot], announce=False)
                if conflict is None:
                    value: Any = slot.value
                    return value  # type: ignore[no-any-return]
        assert conflict is not None
        raise conflict

    def __repr__(self) -> str:
        keys = ", ".join(s.key for s in self._slots.values())
        return f"<SessionState {self.session_id} [{keys}]>"
