"""The embedded state store: one SQLite file per workspace (``.toolweave/state.db``)."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TypeVar, final

from toolweave.state._lockfile import exclusive
from toolweave.state._store import StateConflict, StoredState
from toolweave.state._workspace import FOLDER, make_folder, workspace_file

__all__ = ["SCHEMA_VERSION", "SQLiteStateStore", "default_state_path"]

T = TypeVar("T")

logger = logging.getLogger("toolweave")

SCHEMA_VERSION = 2
"""The layout this code reads and writes (``PRAGMA user_version``). Version 1 had no
``version`` column; it is migrated in place when opened."""

APPLICATION_ID = 0x54574541
"""Marks the file as a toolweave state store (``PRAGMA application_id``, "TWEA")."""

_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_READ_ONLY_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN})
"""What opening a file this process may only read gives (WAL needs its ``-shm`` file)."""

_TABLE = """
CREATE TABLE {name} (
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT,
    version INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (session_id, key)
) WITHOUT ROWID
"""
"""``value`` is NULL for a deleted key: the row keeps its version, which never goes back."""

_V1_COLUMNS = frozenset({"session_id", "key", "value", "updated"})
_COLUMNS = _V1_COLUMNS | {"version"}

_UPSERT = (
    "INSERT INTO state (session_id, key, value, version, updated) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, "
    "version = excluded.version, updated = excluded.updated"
)


class _Unusable(Exception):
    """The file is a database, but not one of ours (or not one this code can use)."""


class _NewerStore(Exception):
    """The file is ours, written by a newer toolweave: never moved aside, not opened."""


class _Moved(Exception):
    """The path no longer names the file the connection has open (deleted or replaced)."""


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (``None``: there is none)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


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


def _is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` means the file (or its folder) may not be written."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and (
        code is not None and (code & 0xFF) in _READ_ONLY_CODES
    )


def _close_quietly(*holders: list[sqlite3.Connection | None]) -> None:
    for holder in holders:
        conn = holder[0]
        holder[0] = None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def default_state_path(workspace: Path) -> Path:
    """Where a workspace's state lives: ``<workspace>/.toolweave/state.db``."""
    return workspace / FOLDER / "state.db"


_shared: weakref.WeakValueDictionary[Path, SQLiteStateStore] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()
_recent: OrderedDict[Path, SQLiteStateStore] = OrderedDict()
"""The stores :meth:`SQLiteStateStore.shared` handed out last, kept open after their
sessions end: a host that makes a session per conversation opens its file once."""
_RECENT_MAX = 8
_of_workspace: weakref.WeakValueDictionary[str, SQLiteStateStore] = weakref.WeakValueDictionary()
"""Absolute workspace paths → the store :meth:`SQLiteStateStore.of_workspace` gave."""


def _handed_out(store: SQLiteStateStore) -> SQLiteStateStore:
    """``store``, made the most recent of the stores kept open (called with
    ``_shared_lock`` held)."""
    _recent[store.path] = store
    _recent.move_to_end(store.path)
    if len(_recent) > _RECENT_MAX:
        _recent.popitem(last=False)
    return store


@final
class SQLiteStateStore:
    """State in one SQLite file (stdlib ``sqlite3``), in WAL mode.

    Each :meth:`save` is one transaction (``BEGIN IMMEDIATE`` … ``COMMIT``) that checks
    the expected versions and writes, so processes sharing the file never see half a
    save and never overwrite one another's writes unseen (see
    :class:`~toolweave.state.StateStore`). ``synchronous=NORMAL``: a commit survives a
    crash of the process; the last commits may be lost on power loss.

    Opening, creating, migrating and moving aside happen while holding a lock file
    (``state.db.lock`` beside the database), so a process never judges a file another
    one is creating. A file that is not a SQLite database, is damaged, or belongs to
    another application is moved aside (renamed ``state.db.corrupt-<UTC time>``, with
    its ``-wal``/``-shm`` files) with a warning in the ``toolweave`` log, and the store
    starts empty; the host never crashes on it. A file of ours that a newer toolweave
    wrote is left alone and not opened (an error is raised; a session then keeps its
    state in memory). Errors that are not about the file's content (a lock held too
    long, a full disk) are raised.

    A store this process may only read (its file or folder read-only) is opened
    read-only, as it is when opened: it is read, and each save first tries to open it
    for writing again, failing (the session keeps the state in memory) while it cannot.

    A missing file is created by the first save, not before: reading a store that
    holds nothing yet (a session's first calls in a new workspace) creates nothing.

    A file deleted or replaced (another file renamed over it) while open is not written
    any more: each save, once it holds the write lock, checks that :attr:`path` still
    names the open file (and its ``-wal`` and ``-shm`` files the ones SQLite has open),
    and otherwise closes the connection and opens the files there now (creating them)
    with a warning in the log, then saves there, compared with what that file holds.
    Reads do not check (three ``stat`` calls would double the cost of the read after
    every call): until the next save they may show what the old file held.

    Reads (:meth:`load`, :meth:`revision`) have a connection and a lock of their own, so
    they never wait for a save, which may wait up to ``busy_timeout`` for another
    process's write lock (a session reads on the event loop; in WAL mode readers do not
    wait for writers). Both connections are opened together and replaced together (a
    file moved or damaged); only a read that finds the file damaged waits for a save
    under way before moving it aside.

    Args:
        path: The database file; its folder is created with it when missing.
        busy_timeout: Seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        """Held for each save, and while the saving connection is opened or replaced."""
        self._holder: list[sqlite3.Connection | None] = [None]
        """The connection that saves."""
        self._identity: tuple[tuple[int, int] | None, ...] | None = None
        """The files the saving connection has open (device, inode): the database, and
        for a connection that may write its ``-wal`` and ``-shm`` files."""
        self._read_lock = threading.Lock()
        """Held for each read, and while the reading connection is opened or replaced."""
        self._reader: list[sqlite3.Connection | None] = [None]
        """The connection that reads (it never waits for the saving one)."""
        self._reader_file: tuple[int, int] | None = None
        """The database file the reading connection has open."""
        self._writes = 0
        """Saves through this store and reopenings of the saving connection."""
        self._reads = 0
        """Openings of the reading connection (each counts ``data_version`` afresh)."""
        self._closed = False
        self._read_only = False
        """The connection last opened is read-only (the file may not be written)."""
        self._finalizer = weakref.finalize(self, _close_quietly, self._holder, self._reader)
        if self.path.exists():
            with self._lock:
                self._reopen()

    @classmethod
    def of_workspace(cls, workspace: str | Path) -> SQLiteStateStore:
        """The :meth:`shared` store of ``workspace`` (``<workspace>/.toolweave/state.db``),
        the one a session uses when it is given none.

        Its ``.toolweave`` folder and ``state.db`` are never symbolic links
        (:func:`~toolweave.state.workspace_file`); SQLite itself refuses ``-wal`` and
        ``-shm`` links, and the lock file is opened without following one. The folder is
        made by the first save, only inside an existing workspace (a session on a
        workspace that does not exist keeps its state in memory and logs why). The
        links are checked whenever the store is opened; the next sessions of a workspace
        named by an absolute path then get the open store with one ``stat``, which
        checks that its path still names the file it has open.

        Raises:
            PermissionError: ``.toolweave`` or ``state.db`` is a symbolic link (a session
                then keeps its state in memory and logs why; pass ``state_store=`` to keep
                it elsewhere on purpose).
        """
        key = os.fspath(workspace)
        if isinstance(key, str) and os.path.isabs(key):
            with _shared_lock:
                known = _of_workspace.get(key)
                if known is not None and known._still_shared():
                    return _handed_out(known)
            store = cls.shared(workspace_file(workspace, "state.db"))
            if store._identity is not None:
                _of_workspace[key] = store
            return store
        return cls.shared(workspace_file(workspace, "state.db"))

    def _still_shared(self) -> bool:
        """Whether :meth:`of_workspace` may hand this store out again without checking
        the workspace's folder and file for links: it is the store :meth:`shared` hands
        out for its path, it has its file open, and its path still names that file (a
        link put there since names another file, or none). Called with
        ``_shared_lock`` held."""
        return (
            _shared.get(self.path) is self
            and not self._closed
            and self._holder[0] is not None
            and self._names_its_file()
        )

    @classmethod
    def shared(cls, path: str | Path) -> SQLiteStateStore:
        """The store of ``path`` shared by every session of this process that uses it.

        The last few stores handed out stay open after their sessions end, so a new
        session of the same workspace does not open the file again. A store whose file
        was since removed or replaced (another inode at ``path``) is not handed out
        again: the next session gets a store of the file that is there now.
        """
        key = Path(path).absolute()
        with _shared_lock:
            store = _shared.get(key)
            if store is None or store._closed or not store._names_its_file():
                store = cls(key)
                _shared[key] = store
            return _handed_out(store)

    def _names_its_file(self, *, sidecars: bool = False) -> bool:
        """Whether :attr:`path` still names the file this store has open (``True``
        when it has none open yet); with ``sidecars``, also its ``-wal`` and ``-shm``."""
        identity = self._identity
        if identity is None or self._holder[0] is None:
            return True
        if not sidecars:
            return _file_id(self.path) == identity[0]
        return self._files(len(identity) > 1) == identity

    def _files(self, sidecars: bool) -> tuple[tuple[int, int] | None, ...]:
        """The files at :attr:`path` now: the database, with its ``-wal`` and ``-shm``
        files when ``sidecars`` (SQLite keeps them, open, while a connection is)."""
        if not sidecars:
            return (_file_id(self.path),)
        return tuple(_file_id(f"{self.path}{suffix}") for suffix in ("", "-wal", "-shm"))

    def __repr__(self) -> str:
        return f"<SQLiteStateStore {str(self.path)!r}>"

    # -- opening (always under the lock file) ------------------------------------------

    @property
    def _lock_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.lock")

    def _open_locked(self, writer: bool = True) -> sqlite3.Connection:
        try:
            return self._connect(writer)
        except Exception as exc:
            if not _is_damage(exc):
                raise
            self._quarantine(str(exc))
            return self._connect(writer)

    def _connect(self, writer: bool = True) -> sqlite3.Connection:
        """A connection to the file at :attr:`path`: the saving one (``writer``, whose
        files :attr:`_identity` records) or the reading one."""
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
            conn.execute("SELECT version FROM state LIMIT 1").fetchall()
            identity = self._files(True)
        except Exception as exc:
            conn.close()
            if not _is_read_only(exc) or not self.path.exists():
                raise
            return self._connect_read_only(writer)
        except BaseException:
            conn.close()
            raise
        self._opened(identity, writer, read_only=False)
        return conn

    def _connect_read_only(self, writer: bool = True) -> sqlite3.Connection:
        """The file as it is now, for reading (``immutable``: a WAL file in a folder
        this process may not write cannot be opened otherwise)."""
        uri = f"{self.path.absolute().as_uri()}?immutable=1"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        try:
            self._check_or_create(conn)
            conn.execute("SELECT version FROM state LIMIT 1").fetchall()
            identity = self._files(False)
        except BaseException:
            conn.close()
            raise
        if not self._read_only:
            logger.warning(
                "state store %s may not be written; it is read as it is now and saves "
                "fail until it may be written again",
                self.path,
            )
        self._opened(identity, writer, read_only=True)
        return conn

    def _opened(
        self, identity: tuple[tuple[int, int] | None, ...], writer: bool, *, read_only: bool
    ) -> None:
        """Record the files a connection just opened has open (the saving one's, or the
        reading one's database file) and whether it is read-only."""
        if writer:
            self._identity = identity
        else:
            self._reader_file = identity[0]
        self._read_only = read_only

    def _check_or_create(self, conn: sqlite3.Connection) -> None:
        app_id, version = self._header(conn)
        if (app_id, version) != (APPLICATION_ID, SCHEMA_VERSION):
            conn.execute("BEGIN IMMEDIATE")
            try:
                app_id, version = self._header(conn)  # another process may have won
                if (app_id, version) == (0, 0) or (
                    app_id == APPLICATION_ID and version < SCHEMA_VERSION
                ):
                    self._install(conn)
                    app_id, version = APPLICATION_ID, SCHEMA_VERSION
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
        if app_id != APPLICATION_ID:
            raise _Unusable(f"it is not a toolweave state store (application id {app_id:#x})")
        if version != SCHEMA_VERSION:
            raise _NewerStore(
                f"state store {self.path} has schema version {version}, written by a newer "
                f"toolweave (this one reads version {SCHEMA_VERSION}); it was left as it is"
            )

    @staticmethod
    def _header(conn: sqlite3.Connection) -> tuple[int, int]:
        """Both header fields in one statement, so one snapshot (never half a creation)."""
        row = conn.execute("SELECT * FROM pragma_application_id, pragma_user_version").fetchone()
        return int(row[0]), int(row[1])

    @staticmethod
    def _install(conn: sqlite3.Connection) -> None:
        """Create the table, or bring ours up to date; then mark the file (in the caller's
        transaction). A file whose only table is our ``state`` table is ours, even if
        unmarked; any other table means the file belongs to another application."""
        tables = {
            str(name)
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if tables - {"state"}:
            raise _Unusable("it holds tables of another application")
        columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(state)")}
        if not tables:
            conn.execute(_TABLE.format(name="state"))
        elif columns == _V1_COLUMNS:
            conn.execute(_TABLE.format(name="state_v2"))
            conn.execute(
                "INSERT INTO state_v2 (session_id, key, value, version, updated) "
                "SELECT session_id, key, value, 1, updated FROM state"
            )
            conn.execute("DROP TABLE state")
            conn.execute("ALTER TABLE state_v2 RENAME TO state")
        elif columns != _COLUMNS:
            raise _Unusable(f"its state table has unknown columns {sorted(columns)}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _quarantine(self, reason: str) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{target}{suffix}")
        logger.warning(
            "state store %s is unusable (%s); moved it to %s and starting with empty state",
            self.path,
            reason,
            target,
        )
        return target

    def _reopen(
        self, failed: tuple[tuple[int, int] | None, str] | None = None
    ) -> sqlite3.Connection:
        """Open the saving connection, and the reading one anew beside it (so both have
        the same files open), closing what is open first: the reading connection, then
        the saving one, which, closed last, writes what it committed into the database
        file. With ``failed`` (the file that showed damage, and how), that file is moved
        aside first if the path still names it (another process may have replaced it
        already). Called with ``self._lock`` held."""
        with self._read_lock:
            self._writes += 1  # new connections count data_version afresh
            self._reads += 1
            _close_quietly(self._reader, self._holder)
            with exclusive(self._lock_path, self.busy_timeout):
                if (
                    failed is not None
                    and failed[0] is not None
                    and _file_id(self.path) == failed[0]
                ):
                    self._quarantine(failed[1])
                conn = self._holder[0] = self._open_locked()
                try:
                    self._reader[0] = self._open_locked(writer=False)
                except Exception:  # pragma: no cover - reads open it when they need it
                    logger.debug("opening state store %s for reading failed", self.path)
        return conn

    def _recover(self, reason: str) -> sqlite3.Connection:
        """After damage showed on the saving connection: move the file aside (see
        :meth:`_reopen`) and reconnect. Called with ``self._lock`` held."""
        return self._reopen((self._identity[0] if self._identity else None, reason))

    def _conn(self, create: bool) -> sqlite3.Connection | None:
        """The saving connection; ``None`` when the file does not exist yet and
        ``create`` is false. Called with ``self._lock`` held."""
        conn = self._holder[0]
        if conn is not None:
            return conn
        if self._closed:
            raise sqlite3.ProgrammingError(f"state store {self.path} is closed")
        if not self.path.exists():
            if not create:
                return None
            make_folder(self.path)
        return self._reopen()

    def _read_conn(self) -> sqlite3.Connection | None:
        """The reading connection; ``None`` when the file does not exist (nothing is
        stored then). Called with ``self._read_lock`` held."""
        conn = self._reader[0]
        if conn is not None:
            return conn
        if self._closed:
            raise sqlite3.ProgrammingError(f"state store {self.path} is closed")
        if not self.path.exists():
            return None
        self._reads += 1  # a new connection counts data_version afresh
        with exclusive(self._lock_path, self.busy_timeout):
            conn = self._reader[0] = self._open_locked(writer=False)
        return conn

    def _drop_moved(self) -> None:
        """Close the connections to a file the path no longer names (deleted or replaced
        by another file): what they read is stale and what they write reaches no other
        process, and no later one. The next use opens the file at the path (or, for a
        save, creates one). Called with ``self._lock`` held."""
        logger.warning(
            "state store %s or its -wal or -shm file was deleted or replaced while open; "
            "using the files now at that path",
            self.path,
        )
        with self._read_lock:
            self._writes += 1  # new connections count data_version afresh
            self._reads += 1
            _close_quietly(self._reader, self._holder)

    # -- the interface --------------------------------------------------------------

    def revision(self) -> tuple[int, int, int]:
        """Moves whenever the file may have changed (see
        :class:`~toolweave.state.StateStore`): ``PRAGMA data_version`` of the reading
        connection, which changes when another connection (this store's saving one, or
        one of any process) commits, with counts of this store's own saves and
        reconnections. Raises as :meth:`load` does."""

        def version(conn: sqlite3.Connection | None) -> tuple[int, int, int]:
            row = (0,) if conn is None else conn.execute("PRAGMA data_version").fetchone()
            return (int(row[0]), self._writes, self._reads)

        return self._read(version)

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        """See :meth:`~toolweave.state.StateStore.load`."""
        sql = "SELECT key, value, version FROM state WHERE session_id = ? AND value IS NOT NULL"
        params: list[str] = [session_id]
        if keys is not None:
            if not keys:
                return {}
            params.extend(keys)
            sql += f" AND key IN ({', '.join('?' * len(keys))})"

        def rows(conn: sqlite3.Connection | None) -> dict[str, StoredState]:
            found = [] if conn is None else conn.execute(sql, params).fetchall()
            return {str(k): StoredState(str(v), int(n)) for k, v, n in found}

        return self._read(rows)

    def _read(self, query: Callable[[sqlite3.Connection | None], T]) -> T:
        """``query`` on the reading connection (``None``: the file does not exist), under
        the reading lock. When it shows damage, the file is moved aside and both
        connections are reopened (see :meth:`_reopen`) holding the saving lock, so that
        no save of this store is writing to the file meanwhile (this read may wait for
        one), and ``query`` runs once more."""
        for attempt in (1, 2):
            with self._read_lock:
                try:
                    return query(self._read_conn())
                except sqlite3.DatabaseError as exc:
                    if attempt == 2 or not _is_damage(exc):
                        raise
                    failed = (self._reader_file, str(exc))
            with self._lock:
                if self._closed:
                    raise sqlite3.ProgrammingError(f"state store {self.path} is closed")
                self._reopen(failed)
        raise AssertionError("unreachable")  # pragma: no cover

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        """See :meth:`~toolweave.state.StateStore.save`: one ``BEGIN IMMEDIATE``
        transaction that checks the versions and writes. A damaged file is moved aside
        and the save is tried once more on a fresh one (where expected versions above 0
        then conflict)."""
        if not changes:
            return {}
        with self._lock:
            if self._read_only:  # perhaps it may be written now: open it afresh
                _close_quietly(self._holder)
            conn = self._conn(True)
            assert conn is not None
            self._writes += 1  # before: a failed or refused save may have changed nothing
            if self._read_only:
                raise sqlite3.OperationalError(
                    f"state store {self.path} may not be written (read-only file or folder)"
                )
            for attempt in (1, 2, 3):
                try:
                    return self._write(conn, session_id, changes, expected or {})
                except _Moved:
                    if attempt == 3:
                        raise sqlite3.OperationalError(
                            f"state store {self.path} was deleted or replaced during each "
                            "of three saves; nothing was saved"
                        ) from None
                    self._drop_moved()
                    conn = self._conn(True)
                    assert conn is not None
                except sqlite3.DatabaseError as exc:
                    if attempt == 3 or not _is_damage(exc):
                        raise
                    conn = self._recover(str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def _write(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        changes: Mapping[str, str | None],
        expected: Mapping[str, int],
    ) -> dict[str, int]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._names_its_file(sidecars=True):  # under the write lock
                raise _Moved
            current: dict[str, tuple[str | None, int]] = {}
            for key in {*changes, *expected}:
                row = conn.execute(
                    "SELECT value, version FROM state WHERE session_id = ? AND key = ?",
                    (session_id, key),
                ).fetchone()
                if row is not None:
                    current[key] = (row[0], int(row[1]))
            conflicts: dict[str, StoredState | None] = {}
            for key, want in expected.items():
                value, version = current.get(key, (None, 0))
                if (version if value is not None else 0) != want:
                    conflicts[key] = None if value is None else StoredState(value, version)
            if conflicts:
                raise StateConflict(session_id, conflicts)
            now = time.time()
            versions: dict[str, int] = {}
            for key, new in changes.items():
                old, version = current.get(key, (None, 0))
                if new is None:
                    versions[key] = 0
                    if old is not None:
                        conn.execute(
                            "UPDATE state SET value = NULL, version = ?, updated = ? "
                            "WHERE session_id = ? AND key = ?",
                            (version + 1, now, session_id, key),
                        )
                    continue
                conn.execute(_UPSERT, (session_id, key, new, version + 1, now))
                versions[key] = version + 1
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        return versions

    def close(self) -> None:
        """Close the database connections."""
        with self._lock, self._read_lock:
            self._closed = True
            _close_quietly(self._holder, self._reader)
