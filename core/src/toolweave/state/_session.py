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
* Such a reload replaces what the live instance holds, so it also drops what other
  calls still running changed in it and did not save yet: every reload counts in
  :attr:`StateSlot.resets`, each call remembers the count when it first uses a slot
  (``persist(..., seen=...)``), and a call whose slot was reloaded meanwhile saves
  nothing and gets the conflict too (its changed slots are reloaded in turn). A check
  at the start of a call that loads another writer's state counts as a reload only
  when a call holding the model's lock (which may have read it, not yet written) is
  under way.
* :meth:`SessionState.update` is a read-modify-write that cannot lose updates: under
  the model's lock it reloads, applies a function and saves, and on a conflict reloads
  and applies the function again.

What another version of a model stored (a newer pack in another process, on the same
session id) is never lost by a save of this one:

* Top-level fields the model does not know are kept: each save writes them back
  beside the model's own fields.
* A stored value the model cannot read (it does not validate, or it has fields the
  model does not know below the top level, which a save could not put back) is copied
  to a backup key, ``<key>.unreadable-<UTC time>`` (``<key>.unknown-fields-<UTC
  time>`` for the second case), in the same compare-and-set transaction as the first
  save that replaces it; the session meanwhile starts from the model's defaults (or
  from what it could read) and a warning names the backup key. A session that never
  saves the key writes nothing, so a process that can read the value goes on seeing it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, final

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from toolweave.errors import UsageError, describe_exception
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


def _backup_key(key: str, why: str) -> str:
    """The key that keeps a stored value of ``key`` this session cannot read back:
    ``<key>.<why>-<UTC time>`` (to the microsecond, so two never share one)."""
    return f"{key}.{why}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}"


def _input_names(model: type[BaseModel]) -> set[str]:
    """The top-level names a model reads or writes: field names, aliases, computed
    fields."""
    names: set[str] = set(model.model_computed_fields)
    for name, info in model.model_fields.items():
        names.add(name)
        for alias in (info.alias, info.validation_alias, info.serialization_alias):
            if isinstance(alias, str):
                names.add(alias)
            elif alias is not None:  # AliasChoices / AliasPath: their first steps
                for choice in getattr(alias, "choices", [alias]):
                    path = choice if isinstance(choice, str) else getattr(choice, "path", ())
                    first = path if isinstance(path, str) else (path[0] if path else None)
                    if isinstance(first, str):
                        names.add(first)
    return names


def _unknown_fields(model: type[BaseModel], stored: str, dumped: str) -> tuple[str | None, bool]:
    """What of ``stored`` the model's dump ``dumped`` (of what it read from it) lacks.

    Returns:
        The top-level members the model does not know, as JSON members to write back
        (``None``: none), and whether the model also dropped object members below the
        top level (which a save cannot put back).
    """
    try:
        before = json.loads(stored)
        after = json.loads(dumped)
        if not (isinstance(before, dict) and isinstance(after, dict)):
            return None, _dropped(before, after)
        known = _input_names(model)
        extra = {k: v for k, v in before.items() if k not in after and k not in known}
        deeper = any(_dropped(v, after[k]) for k, v in before.items() if k in after)
    except (ValueError, RecursionError):  # not JSON to Python (what pydantic read is)
        return None, False
    if not extra:
        return None, deeper
    members = ",".join(
        json.dumps(k, ensure_ascii=False)
        + ":"
        + json.dumps(v, ensure_ascii=False, separators=(",", ":"))
        for k, v in extra.items()
    )
    return members, deeper


def _dropped(before: Any, after: Any) -> bool:
    """Whether object members of ``before`` are missing from ``after`` (the same value as
    read and dumped by a model), at any depth."""
    if isinstance(before, dict) and isinstance(after, dict):
        return any(k not in after or _dropped(v, after[k]) for k, v in before.items())
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return any(_dropped(b, a) for b, a in zip(before, after, strict=True))
    return False


def _with_fields(data: str, members: str) -> str:
    """The JSON object ``data`` with the JSON ``members`` added."""
    if not (data.startswith("{") and data.endswith("}")):
        return data
    return "{" + members + "}" if data == "{}" else data[:-1] + "," + members + "}"


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
        resets: How often the live instance was reloaded in place while calls that had
            used it may still have been running (see the module's docstring).
        extra: The top-level fields of the stored value the model does not know, as
            JSON members (``"a":1,"b":[2]``) written back with every save (``None``:
            none).
        backup: The backup key and the stored text it keeps, written with the next save
            of the slot (``None``: nothing to keep; see the module's docstring).
    """

    __slots__ = (
        "backup",
        "check",
        "extra",
        "key",
        "model",
        "resets",
        "revision",
        "saved",
        "value",
        "version",
    )

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
        self.resets = 0
        self.extra: str | None = None
        self.backup: tuple[str, str] | None = None


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
        "_keeping",
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
        self._keeping = False
        """Some slot keeps what another version of its model stored (see the module's
        docstring): saves look for it only then."""

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
        """A slot for what the store holds (``None``: the model's defaults).

        What the model cannot read back is kept (see the module's docstring): unknown
        top-level fields in :attr:`StateSlot.extra`, a value it cannot read whole as a
        :attr:`StateSlot.backup` to write with the slot's next save.
        """
        value: BaseModel | None = None
        saved = ""
        extra: str | None = None
        backup: tuple[str, str] | None = None
        if stored is not None:
            try:
                value = model.model_validate_json(stored.value)
            except Exception as exc:  # a ValidationError, or a validator's own error
                problems = (
                    f"{exc.error_count()} problems"
                    if isinstance(exc, ValidationError)
                    else describe_exception(exc)
                )
                backup = (_backup_key(key, "unreadable"), stored.value)
                logger.warning(
                    "stored state %r of session %s does not fit %s (%s); starting from its "
                    "defaults. What is stored is kept under %r when the session first saves "
                    "this state",
                    key,
                    self.session_id,
                    model.__qualname__,
                    problems,
                    backup[0],
                )
            else:
                saved = value.model_dump_json()
                if saved != stored.value:  # not what this model writes: it may know less
                    extra, deeper = _unknown_fields(model, stored.value, saved)
                    if deeper:
                        backup = (_backup_key(key, "unknown-fields"), stored.value)
                        logger.warning(
                            "stored state %r of session %s has fields %s does not know "
                            "inside its values (written by a newer version of it?); they "
                            "are kept under %r when the session first saves this state",
                            key,
                            self.session_id,
                            model.__qualname__,
                            backup[0],
                        )
                    elif extra is not None:
                        logger.info(
                            "stored state %r of session %s has fields %s does not know "
                            "(written by a newer version of it?); every save keeps them",
                            key,
                            self.session_id,
                            model.__qualname__,
                        )
        if value is None:
            try:
                value = model()
            except ValidationError as exc:
                raise UsageError(
                    f"state model {model.__qualname__} needs defaults for every field"
                ) from exc
            saved = value.model_dump_json()
        slot = StateSlot(key, model, value, saved, stored.version if stored is not None else 0)
        if extra is not None or backup is not None:
            slot.extra = extra
            slot.backup = backup
            self._keeping = True
        return slot

    def _reset(self, slot: StateSlot, stored: StoredState | None) -> None:
        """Make ``slot`` hold what the store holds, keeping its live instance."""
        fresh = self._decode(slot.model, slot.key, stored)
        try:
            slot.value.__setstate__(fresh.value.__getstate__())
        except Exception:  # pragma: no cover - a model that refuses it: a new instance
            slot.value = fresh.value
        slot.saved = fresh.saved
        slot.version = fresh.version
        slot.extra = fresh.extra
        slot.backup = fresh.backup

    def _refresh(self, slot: StateSlot, held: Collection[str] | None = None) -> None:
        """Load what another writer stored for ``slot`` since it was read, unless the
        slot holds a change not saved yet (that change's save will conflict). Nothing is
        read when the store's revision has not moved since the slot was read.

        ``held``: the keys whose locks the caller holds. When the model's lock is held
        by another call (which may have read the instance and not written yet), the
        reload counts in :attr:`StateSlot.resets`, so that call's save fails.
        """
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
        if held is None or slot.key not in held:
            lock = self._locks.get(slot.key)
            if lock is not None and lock.value == 0:
                slot.resets += 1

    def slot(self, model: type[BaseModel], held: Collection[str] | None = None) -> StateSlot:
        """The slot of ``model``, loading it on first access (and checking it against
        the store on the first access after a call used it).

        ``held``: the keys of the state locks the caller holds (a call's; see
        :meth:`_refresh`).

        Raises:
            UsageError: ``model`` is not a pydantic model, or has required fields and
                nothing is stored for it.
        """
        slot = self._slots.get(model)
        if slot is not None:
            if slot.check:
                slot.check = False
                self._refresh(slot, held)
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

    def replace(self, value: BaseModel, held: Collection[str] | None = None) -> StateSlot:
        """Make ``value`` the live instance of its model (``held``: as for :meth:`slot`)."""
        slot = self.slot(type(value), held)
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

    async def persist(
        self, slots: Iterable[StateSlot], *, seen: Mapping[type[BaseModel], int] | None = None
    ) -> StateConflict | None:
        """Save the ``slots`` whose JSON changed, in one compare-and-set transaction;
        shielded from cancellation.

        A failing store is logged; the live state is kept. When another writer changed
        one of the keys since it was read, nothing is saved: the changed slots are
        reloaded from the store (their live instances now hold the other writer's
        data), a warning is logged and the conflict is returned.

        Args:
            slots: The slots to save.
            seen: For a call: each model's :attr:`StateSlot.resets` when the call first
                used it. When one moved since (another save reloaded the model while the
                call ran, dropping what the call had changed in it), nothing is saved,
                the changed slots are reloaded and the conflict is returned.

        Returns:
            The conflict, or ``None`` when the changes were saved (or there were none,
            or the store failed).
        """
        return await self._persist(list(slots), announce=True, seen=seen)

    async def _persist(
        self,
        slots: list[StateSlot],
        *,
        announce: bool,
        seen: Mapping[type[BaseModel], int] | None = None,
    ) -> StateConflict | None:
        try:
            for slot in slots:
                if slot.value.model_dump_json() != slot.saved or (
                    seen is not None and seen.get(slot.model, slot.resets) != slot.resets
                ):
                    break
            else:
                return None
            with anyio.CancelScope(shield=True):
                if self._persist_lock is None:
                    self._persist_lock = anyio.Lock()
                async with self._persist_lock:
                    return await self._save(slots, announce, seen)
            return None  # pragma: no cover - a shielded scope is never cancelled
        finally:
            for slot in slots:
                slot.check = True

    async def _save(
        self,
        slots: list[StateSlot],
        announce: bool,
        seen: Mapping[type[BaseModel], int] | None,
    ) -> StateConflict | None:
        changed: list[tuple[StateSlot, str]] = []
        for slot in slots:
            data = slot.value.model_dump_json()
            if data != slot.saved:
                changed.append((slot, data))
        if seen is not None:
            wiped = [s for s in slots if seen.get(s.model, s.resets) != s.resets]
            if wiped:  # reloaded under the call: what it changed may be gone
                return await self._dropped(wiped, [s for s, _ in changed], announce)
        if not changed:
            return None
        changes: dict[str, str | None] = {s.key: d for s, d in changed}
        expected = {s.key: s.version for s, _ in changed}
        kept = (
            [s for s, _ in changed if s.extra is not None or s.backup is not None]
            if self._keeping
            else ()
        )
        for slot in kept:  # what another version of the model stored (module docstring)
            if slot.extra is not None:
                changes[slot.key] = _with_fields(changes[slot.key] or "", slot.extra)
            if slot.backup is not None:
                changes[slot.backup[0]] = slot.backup[1]
                expected[slot.backup[0]] = 0
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
            slots = [s for s, _ in changed]
            self._reload(slots, await self._load([s.key for s in slots]))
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
        for slot in kept:
            if slot.backup is not None:
                logger.warning(
                    "state %r of session %s was replaced; what was stored is kept under %r",
                    slot.key,
                    self.session_id,
                    slot.backup[0],
                )
                slot.backup = None
        return None

    async def _load(self, keys: list[str]) -> dict[str, StoredState] | None:
        """What the store holds for ``keys`` (``None``: reading failed, logged)."""
        store = self.store
        try:
            if getattr(store, "blocking", True):
                return await anyio.to_thread.run_sync(store.load, self.session_id, keys)
            return store.load(self.session_id, keys)
        except Exception:
            logger.exception("reloading the state of session %s failed", self.session_id)
            return None

    def _reload(self, slots: list[StateSlot], now: Mapping[str, StoredState] | None) -> None:
        """Make ``slots`` hold ``now`` (what the store holds; ``None``: it could not be
        read, they are left as they are), in place. Each counts the reload in
        :attr:`StateSlot.resets`: calls still running that had used them lost what they
        changed in them and did not save yet, and their saves fail."""
        if now is None:
            return
        for slot in slots:
            self._reset(slot, now.get(slot.key))
            slot.revision = None
            slot.resets += 1

    async def _dropped(
        self, wiped: list[StateSlot], changed: list[StateSlot], announce: bool
    ) -> StateConflict:
        """The save of a call whose ``wiped`` slots another save reloaded while it ran:
        nothing is saved, its ``changed`` slots are reloaded (what they hold may be what
        is left of its change), and the call gets a conflict."""
        keys = {s.key: s for s in (*wiped, *changed)}
        now = await self._load(list(keys))
        self._reload(changed, now)
        conflict = StateConflict(self.session_id, {s.key: (now or {}).get(s.key) for s in wiped})
        if announce:
            logger.warning(
                "%s; another save of the session reloaded it while a call that used it ran, "
                "dropping the call's change",
                conflict,
            )
        return conflict

    def _save_failed(self, exc: Exception) -> None:
        """Log a failed save: with its traceback the first time, and again only when it
        fails otherwise (a full disk or a missing folder fails every save until mended;
        the repeats go to the debug log)."""
        what = describe_exception(exc)
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
                    self._refresh(slot, (slot.key,))
                seen: dict[type[BaseModel], int] = {model: slot.resets}
                current: Any = slot.value
                result = change(current)
                if result is not None and result is not current:
                    if type(result) is not model:
                        raise UsageError(
                            f"update of {model.__qualname__} returned a {type(result).__qualname__}"
                        )
                    slot.value = result
                conflict = await self._persist([slot], announce=False, seen=seen)
                if conflict is None:
                    value: Any = slot.value
                    return value  # type: ignore[no-any-return]
        assert conflict is not None
        raise conflict

    def __repr__(self) -> str:
        keys = ", ".join(s.key for s in self._slots.values())
        return f"<SessionState {self.session_id} [{keys}]>"
