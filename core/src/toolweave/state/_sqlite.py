"""The embedded state store: one SQLite file per workspace (``.toolweave/state.db``)."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import final

__all__ = ["SCHEMA_VERSION", "SQLiteStateStore", "default_state_path"]

logger = logging.getLogger("toolweave")

SCHEMA_VERSION = 1
"""The layout this code reads and writes (``PRAGMA user_version``)."""

APPLICATION_ID = 0x54574541
"""Marks the file as a toolweave state store (``PRAGMA application_id``, "TWEA")."""

_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS state (
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (session_id, key)
) WITHOUT ROWID
"""

_UPSERT = (
    "INSERT INTO state (session_id, key, value, updated) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, "
    "updated = excluded.updated"
)


class _Unusable(Exception):
    """The file is a database, but not one this code can use."""


def _is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` means the file is unusable (as opposed to locked, read-only, ...)."""
    if isinstance(exc, _Unusable):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _DAMAGE_CODES
    return type(exc) is sqlite3.DatabaseError


def _close_quietly(holder: list[sqlite3.Connection | None]) -> None:
    conn = holder[0]
    holder[0] = None
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()


def default_state_path(workspace: Path) -> Path:
    """Where a workspace's state lives: ``<workspace>/.toolweave/state.db``."""
    return workspace / ".toolweave" / "state.db"


_shared: weakref.WeakValueDictionary[Path, SQLiteStateStore] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


@final
class SQLiteStateStore:
    """State in one SQLite file (stdlib ``sqlite3``), in WAL mode.

    Each :meth:`save` is one transaction (``BEGIN IMMEDIATE`` … ``COMMIT``), so
    processes sharing the file never see half a save. ``synchronous=NORMAL``: a commit
    survives a crash of the process; the last commits may be lost on power loss.

    A file that is not a SQLite database, is damaged, or has a schema version this code
    does not know is moved aside (renamed ``state.db.corrupt-<UTC time>``, with its
    ``-wal``/``-shm`` files) with a warning in the ``toolweave`` log, and the store
    starts empty; the host never crashes on it. Errors that are not about the file's
    content (a read-only folder, a lock held too long) are raised.

    Args:
        path: The database file; its folder is created when missing.
        busy_timeout: Seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._holder: list[sqlite3.Connection | None] = [None]
        self._finalizer = weakref.finalize(self, _close_quietly, self._holder)
        self._prepare_folder()
        try:
            self._holder[0] = self._connect()
        except Exception as exc:
            if not _is_damage(exc):
                raise
            self._quarantine(str(exc))
            self._holder[0] = self._connect()

    @classmethod
    def shared(cls, path: str | Path) -> SQLiteStateStore:
        """The store of ``path`` shared by every session of this process that uses it."""
        key = Path(path).absolute()
        with _shared_lock:
            store = _shared.get(key)
            if store is None or store._holder[0] is None:
                store = cls(key)
                _shared[key] = store
            return store

    def __repr__(self) -> str:
        return f"<SQLiteStateStore {str(self.path)!r}>"

    # -- opening ------------------------------------------------------------------

    def _prepare_folder(self) -> None:
        folder = self.path.parent
        if folder.name == ".toolweave" and not folder.exists():
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by toolweave: runtime state, not source.\n*\n")
        else:
            folder.mkdir(parents=True, exist_ok=True)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            check_same_thread=False,
            isolation_level=None,
        )
        try:
            self._check_or_create(conn)
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("SELECT 1 FROM state LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_or_create(self, conn: sqlite3.Connection) -> None:
        app_id, version = self._header(conn)
        if app_id == 0 and version == 0:
            conn.execute("BEGIN IMMEDIATE")
            try:
                app_id, version = self._header(conn)  # another process may have won
                if app_id == 0 and version == 0:
                    (tables,) = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                    if tables:
                        raise _Unusable("it holds tables of another application")
                    conn.execute(_SCHEMA)
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    app_id, version = APPLICATION_ID, SCHEMA_VERSION
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        if app_id != APPLICATION_ID:
            raise _Unusable(f"it is not a toolweave state store (application id {app_id:#x})")
        if version != SCHEMA_VERSION:
            raise _Unusable(
                f"unknown schema version {version} (this toolweave reads version {SCHEMA_VERSION})"
            )

    @staticmethod
    def _header(conn: sqlite3.Connection) -> tuple[int, int]:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        return int(app_id), int(version)

    def _quarantine(self, reason: str) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            if source.exists():
                os.replace(source, f"{target}{suffix}")
        logger.warning(
            "state store %s is unusable (%s); moved it to %s and starting with empty state",
            self.path,
            reason,
            target,
        )
        return target

    def _recover(self, reason: str) -> sqlite3.Connection:
        _close_quietly(self._holder)
        self._quarantine(reason)
        conn = self._connect()
        self._holder[0] = conn
        return conn

    def _conn(self) -> sqlite3.Connection:
        conn = self._holder[0]
        if conn is None:
            raise sqlite3.ProgrammingError(f"state store {self.path} is closed")
        return conn

    # -- the interface --------------------------------------------------------------

    def load(self, session_id: str) -> dict[str, str]:
        """See :meth:`~toolweave.state.StateStore.load`."""
        with self._lock:
            try:
                rows = (
                    self._conn()
                    .execute("SELECT key, value FROM state WHERE session_id = ?", (session_id,))
                    .fetchall()
                )
            except sqlite3.DatabaseError as exc:
                if not _is_damage(exc):
                    raise
                self._recover(str(exc))
                return {}
        return {str(k): str(v) for k, v in rows}

    def save(self, session_id: str, changes: Mapping[str, str | None]) -> None:
        """See :meth:`~toolweave.state.StateStore.save`. One transaction; a damaged file is
        moved aside and the changes are written to a fresh one."""
        if not changes:
            return
        now = time.time()
        upserts = [(session_id, k, v, now) for k, v in changes.items() if v is not None]
        deletes = [(session_id, k) for k, v in changes.items() if v is None]
        with self._lock:
            conn = self._conn()
            for attempt in (1, 2):
                try:
                    self._write(conn, upserts, deletes)
                    return
                except sqlite3.DatabaseError as exc:
                    if attempt == 2 or not _is_damage(exc):
                        raise
                    conn = self._recover(str(exc))

    @staticmethod
    def _write(
        conn: sqlite3.Connection,
        upserts: list[tuple[str, str, str, float]],
        deletes: list[tuple[str, str]],
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if upserts:
                conn.executemany(_UPSERT, upserts)
            if deletes:
                conn.executemany("DELETE FROM state WHERE session_id = ? AND key = ?", deletes)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            _close_quietly(self._holder)
