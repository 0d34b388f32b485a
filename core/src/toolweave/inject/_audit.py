"""The selection log in the registry center's audit store: entries of type
``selection``, queued and written by one background thread per center.

The center's public API writes two types of audit entries (``call`` and ``change``);
this module adds the third for the injector without changing the center:
:func:`append_entries` writes :class:`~toolweave.center.AuditEntry` rows of any type to
the store the center uses (its SQLite file or Redis stream), and :class:`SelectionLog`
queues them off the turn's path. ``Center.audit(type="selection")`` and ``toolweave
audit`` read them back like any other entry.

Note:
    Writing goes through the stores' own write paths (``SQLiteCenterStore``'s
    transaction, ``RedisCenterStore``'s audit stream); a store of another kind gets a
    warning and the entries go to the ``toolweave`` logger instead. The center should
    grow a public ``CenterStore.append_audit(entries)`` so this module can go.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any, final

from toolweave.center import AuditEntry, Center, CenterError, CenterStore, SQLiteCenterStore

__all__ = ["SelectionLog", "append_entries", "selection_log"]

logger = logging.getLogger("toolweave")

_COLUMNS = (
    "at, type, session, role, tool, version, digest, outcome, error_kind, duration_ms, "
    "actor, before, after, reason"
)
_BUFFER = 10_000
"""Entries kept while the store cannot be written; older ones are dropped and counted."""
_POLL = 0.25
"""Seconds between two writes of the queue."""


def _dump(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _row(e: AuditEntry) -> tuple[Any, ...]:
    before, after = _dump(e.before), _dump(e.after)
    return (
        e.at, e.type, e.session, e.role, e.tool, e.version, e.digest, e.outcome,
        e.error_kind, e.duration_ms, e.actor, before, after, e.reason,
    )  # fmt: skip


def append_entries(store: CenterStore, entries: Sequence[AuditEntry]) -> None:
    """Append audit entries of any type to ``store`` in one transaction (all or none).

    Raises:
        CenterError: The store refuses the write.
        TypeError: The store is neither SQLite nor Redis.
    """
    if not entries:
        return
    if isinstance(store, SQLiteCenterStore):
        rows = [_row(e) for e in entries]
        with store._write() as conn:  # the store's own transaction and error mapping
            conn.executemany(f"INSERT INTO audit ({_COLUMNS}) VALUES ({', '.join('?' * 14)})", rows)
        return
    try:
        from toolweave.center._redis import RedisCenterStore
    except ImportError:  # pragma: no cover - the redis extra is missing
        RedisCenterStore = None  # type: ignore[assignment,misc]
    if RedisCenterStore is not None and isinstance(store, RedisCenterStore):
        redis_store = store

        async def write() -> None:  # all of the batch or none of it (MULTI/EXEC)
            async with redis_store._r.pipeline(transaction=True) as pipe:
                for entry in entries:
                    redis_store._add_audit(pipe, entry)
                await pipe.execute()

        redis_store._run(write(), "the audit")
        return
    raise TypeError(f"no way to append audit entries to {type(store).__name__}")


@final
class SelectionLog:
    """The queue of one center's selection entries and the thread that writes them.

    Entries are written every quarter second, on :meth:`flush`, and at exit; while the
    store refuses them they stay queued (up to 10,000; beyond, the oldest are dropped
    and counted in :attr:`dropped`).
    """

    def __init__(self, center: Center) -> None:
        self._center = weakref.ref(center)
        self._store = center.store
        self._pending: deque[AuditEntry] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._error = ""
        self._unsupported = False
        self.dropped = 0
        """Entries dropped because the queue was full."""

    def append(self, entry: AuditEntry) -> None:
        """Queue ``entry``; never blocks, never raises."""
        pending = self._pending
        pending.append(entry)
        if len(pending) > _BUFFER:
            pending.popleft()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.error("the selection log is full: %d entries dropped", self.dropped)
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="toolweave-selection-log", daemon=True
                    )
                    self._thread.start()

    @property
    def pending(self) -> int:
        """Entries not written yet."""
        return len(self._pending)

    def _run(self) -> None:
        while True:
            self._wake.wait(_POLL)
            self._wake.clear()
            if not self.flush():
                center = self._center()
                if center is None or center._closed:
                    return

    def flush(self) -> bool:
        """Write the queued entries now; ``False`` when the store refused them (they
        stay queued) or is closed."""
        with self._lock:
            pending = self._pending
            while pending:
                batch = list(pending)[:1000]
                try:
                    append_entries(self._store, batch)
                except TypeError:
                    if not self._unsupported:
                        self._unsupported = True
                        logger.warning(
                            "the center store %s cannot keep selections; they are logged",
                            self._store.describe(),
                        )
                    for entry in batch:
                        logger.info("selection %s", _dump(entry.to_dict()))
                except CenterError as exc:
                    if str(exc) != self._error:
                        logger.error("writing the selection log failed (kept queued): %s", exc)
                    self._error = str(exc)
                    return False
                for _ in batch:
                    pending.popleft()
                self._error = ""
            return True


_logs: weakref.WeakKeyDictionary[Center, SelectionLog] = weakref.WeakKeyDictionary()
_logs_lock = threading.Lock()


def selection_log(center: Center) -> SelectionLog:
    """The selection log of ``center`` (one per center, shared by its injectors)."""
    with _logs_lock:
        found = _logs.get(center)
        if found is None:
            found = _logs[center] = SelectionLog(center)
        return found


@atexit.register
def _flush_all() -> None:
    # Registered after the center's own atexit hook, so it runs before the centers close.
    for log in list(_logs.values()):
        with contextlib.suppress(Exception):  # the interpreter is going away
            log.flush()
