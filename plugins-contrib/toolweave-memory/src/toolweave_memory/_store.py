"""The memory store: one SQLite file with an FTS5 index, safe for several processes.

Every operation opens its own connection (cheap next to a model's turn), runs in one
``BEGIN IMMEDIATE`` transaction for writes, and is retried when another process holds
the write lock longer than the busy timeout. The file is in WAL mode, so readers never
wait for writers and a write waits only for another write.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from toolweave import ErrorKind, ToolError
from toolweave.state import make_folder

__all__ = ["MAX_ID", "Memory", "MemoryStore", "SearchHit", "fts_query"]

MAX_ID = 2**63 - 1
"""The largest id a memory can have (SQLite's largest integer)."""

T = TypeVar("T")
_Mode = Literal["rw", "ro", "immutable"]
"""How a connection opens the file: read-write, read-only, or read-only and immutable
(no locks, no ``-shm`` file: what a read-only filesystem allows)."""


class _CannotOpen(Exception):
    """The file cannot be opened (or written) in the mode tried."""

    def __init__(self, error: sqlite3.Error) -> None:
        super().__init__(str(error))
        self.error = error


SCHEMA_VERSION = 1
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS memories_scope ON memories (scope, updated_at)",
    """CREATE TABLE IF NOT EXISTS memory_tags (
        tag TEXT NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        PRIMARY KEY (tag, memory_id)
    ) WITHOUT ROWID""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
        title, content, tags,
        content = 'memories', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, title, content, tags)
        VALUES (new.id, new.title, new.content, new.tags);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.id, old.title, old.content, old.tags);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.id, old.title, old.content, old.tags);
        INSERT INTO memories_fts (rowid, title, content, tags)
        VALUES (new.id, new.title, new.content, new.tags);
    END""",
)
"""The schema, statement by statement (run in one transaction)."""
_OPEN_FAILURES = frozenset(
    {
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
    }
)
"""SQLite's primary result codes that mean the file cannot be opened, read or written
(as opposed to a busy lock, or an error in a statement)."""
_WORDS = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
_COLUMNS = "m.id, m.scope, m.title, m.content, m.tags, m.created_at, m.updated_at"


def fts_query(text: str, *, match_all: bool = False) -> str | None:
    """An FTS5 query for free text: each word quoted (so no word is read as syntax),
    joined by ``OR`` (ranked by how well each memory matches) or ``AND``."""
    words = _WORDS.findall(text)[:_MAX_TERMS]
    if not words:
        return None
    return (" AND " if match_all else " OR ").join(f'"{word}"' for word in words)


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory.

    Attributes:
        id: Its id, unique in the store.
        scope: ``shared`` or ``session:<session id>``.
        title: A short title (may be empty).
        content: The text.
        tags: Its tags, sorted.
        created_at: When it was first saved (ISO 8601, UTC).
        updated_at: When it last changed.
    """

    id: int
    scope: str
    title: str
    content: str
    tags: tuple[str, ...]
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A memory found by a search, with its rank.

    Attributes:
        memory: The memory.
        snippet: The best-matching fragment, matches between the highlight marks.
        score: BM25 relevance (higher is better; 0 for a listing without a query).
    """

    memory: Memory
    snippet: str
    score: float


def _memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        scope=row["scope"],
        title=row["title"],
        content=row["content"],
        tags=tuple(row["tags"].split()),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _tag_filter(tags: Sequence[str]) -> tuple[str, list[str | int]]:
    """SQL keeping memories that carry every one of ``tags``."""
    if not tags:
        return "", []
    marks = ", ".join("?" for _ in tags)
    sql = (
        f" AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({marks}) "
        "GROUP BY memory_id HAVING COUNT(*) = ?)"
    )
    return sql, [*tags, len(set(tags))]


class MemoryStore:
    """Memories in one SQLite file, created with its folder on the first write.

    Args:
        path: The database file.
        busy_timeout: Seconds a statement waits for another process's write lock.
        attempts: How often an operation is tried when the lock stays taken.

    Every operation raises :class:`~toolweave.ToolError` ``unavailable``, naming the
    file and leaving it untouched, when the file is not a usable database (corrupt, not
    SQLite, or written by a newer version) or cannot be opened (a folder in its place,
    no permission, a read-only file, folder or filesystem), saying which. A file that
    cannot be opened for writing is still searched when SQLite can open it read-only:
    with ``mode=ro``, or, when it has no pending write-ahead log, as ``immutable`` (what
    a read-only filesystem needs, as SQLite cannot make the ``-shm`` file there).
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0, attempts: int = 8) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.attempts = attempts
        self._ready = False

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r})"

    # -- connections ----------------------------------------------------------------------

    def _connect(self, mode: _Mode = "rw") -> sqlite3.Connection:
        if mode == "rw":
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        else:
            query = "mode=ro" if mode == "ro" else "mode=ro&immutable=1"
            uri = f"{self.path.absolute().as_uri()}?{query}"
            conn = sqlite3.connect(uri, timeout=self.busy_timeout, isolation_level=None, uri=True)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema, once per store object (idempotent across processes)."""
        if self._ready:
            return
        conn.execute("PRAGMA journal_mode = WAL")
        version = self._version(conn)
        if version < SCHEMA_VERSION:
            with self._transaction(conn):
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._ready = True

    def _version(self, conn: sqlite3.Connection) -> int:
        """The file's schema version.

        Raises:
            sqlite3.DatabaseError: A newer version of the pack wrote it.
        """
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"{self.path} was written by a newer toolweave-memory (schema {version})"
            )
        return version

    def _retrying(self, operation: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run ``operation`` on a fresh connection, again when the database stays busy;
        a read of a file that cannot be opened for writing is tried read-only.

        Raises:
            ToolError: ``unavailable``: the file is not a usable database, or cannot be
                opened (for a write: written), naming it and saying why.
        """
        try:
            if write:
                try:
                    make_folder(self.path)
                except OSError as exc:
                    raise self._unavailable(exc, write=True) from None
            return self._attempts(operation, "rw")
        except _CannotOpen as failure:
            first = failure.error
        if not write:
            for mode in self._read_only_modes():
                try:
                    return self._attempts(operation, mode)
                except _CannotOpen:
                    continue
        raise self._unavailable(first, write=write) from None

    def _attempts(self, operation: Callable[[sqlite3.Connection], T], mode: _Mode) -> T:
        """``operation`` on a connection opened in ``mode``, tried again while the
        database stays busy.

        Raises:
            _CannotOpen: The file cannot be opened (or written) this way.
            ToolError: ``unavailable``: it is not a usable database.
        """
        delay = 0.02
        for attempt in range(self.attempts):
            try:
                with closing(self._connect(mode)) as conn:
                    if mode == "rw":
                        self._prepare(conn)
                    elif self._version(conn) < SCHEMA_VERSION:
                        raise _CannotOpen(sqlite3.OperationalError("it holds no memory tables yet"))
                    return operation(conn)
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF in _OPEN_FAILURES:
                    raise _CannotOpen(exc) from None
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or attempt == self.attempts - 1:
                    raise
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:
                    raise  # a constraint or a programming error: not the file's fault
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"the memory file {self.path} cannot be used ({exc}); it is left as it "
                    "is: repair it, or move it away to start with no memories",
                ) from None
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _read_only_modes(self) -> tuple[_Mode, ...]:
        """How a file that cannot be opened for writing may still be read: ``mode=ro``,
        then ``immutable`` unless a write-ahead log holds changes (reading without it
        would miss them)."""
        if self.path.is_dir():
            return ()
        try:
            pending = os.stat(f"{self.path}-wal").st_size > 0
        except FileNotFoundError:
            pending = False
        except OSError:
            pending = True
        return ("ro",) if pending else ("ro", "immutable")

    def _why(self, error: BaseException) -> str:
        """Why the file cannot be opened (or written), in words."""
        path = self.path
        if path.is_dir():
            return "it is a directory, not a database file"
        if path.parent.exists() and not path.parent.is_dir():
            return f"{path.parent} is not a folder"
        if path.exists() and not os.access(path, os.R_OK):
            return "it cannot be read (permission denied)"
        for suffix in ("-wal", "-shm"):
            beside = Path(f"{path}{suffix}")
            if beside.exists() and not beside.is_file():
                return f"{beside.name} beside it is not a regular file"
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        try:
            read_only_fs = existing is not None and bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only_fs = False
        if read_only_fs:
            return "it is on a read-only filesystem"
        if path.exists() and not os.access(path, os.W_OK):
            return "the file is read-only"
        if path.parent.is_dir() and not os.access(path.parent, os.W_OK):
            return (
                f"its folder {path.parent} is read-only (SQLite keeps its -wal and -shm "
                "files beside the database)"
            )
        if getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
            return "the disk is full"
        if isinstance(error, sqlite3.Error):
            return f"SQLite refuses it ({error})"
        return str(error) or type(error).__name__

    def _unavailable(self, error: BaseException, *, write: bool) -> ToolError:
        """``unavailable``, naming the file and why it cannot be used; for a write, also
        whether searching it still works."""
        why = self._why(error)
        if write and self.path.is_file() and self._readable():
            return ToolError(
                ErrorKind.UNAVAILABLE,
                f"the memory file {self.path} cannot be written: {why}; nothing was saved "
                "or deleted (searching it still works)",
            )
        return ToolError(
            ErrorKind.UNAVAILABLE,
            f"the memory file {self.path} cannot be opened: {why}; it is left as it is: "
            "fix it, or move it away to start with no memories",
        )

    def _readable(self) -> bool:
        """Whether the file can be read, if only read-only."""
        for mode in ("rw", *self._read_only_modes()):
            try:
                with closing(self._connect(mode)) as conn:
                    if self._version(conn) == SCHEMA_VERSION:
                        conn.execute("SELECT 1 FROM memories LIMIT 1").fetchall()
                        return True
            except sqlite3.Error:
                continue
        return False

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- operations -----------------------------------------------------------------------

    def save(
        self,
        *,
        scope: str,
        content: str,
        title: str = "",
        tags: Sequence[str] = (),
        replace_id: int | None = None,
        visible: Sequence[str] = (),
    ) -> tuple[Memory, bool] | None:
        """Store a memory, or replace the memory ``replace_id`` (visible in ``visible``).

        Returns:
            The memory and whether it was new, or ``None`` when ``replace_id`` names no
            visible memory. Saving the same content again in one scope updates the
            earlier memory's title and tags instead of storing a copy.
        """
        tag_list = sorted(set(tags))

        def run(conn: sqlite3.Connection) -> tuple[Memory, bool] | None:
            with self._transaction(conn):
                now = _now()
                target = replace_id
                if target is not None:
                    marks = ", ".join("?" for _ in visible)
                    row = conn.execute(
                        f"SELECT id, scope FROM memories WHERE id = ? AND scope IN ({marks})",
                        (target, *visible),
                    ).fetchone()
                    if row is None:
                        return None
                else:
                    row = conn.execute(
                        "SELECT id FROM memories WHERE scope = ? AND content = ?",
                        (scope, content),
                    ).fetchone()
                    target = None if row is None else row["id"]
                if target is None:
                    cursor = conn.execute(
                        "INSERT INTO memories (scope, title, content, tags, created_at, "
                        "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (scope, title, content, " ".join(tag_list), now, now),
                    )
                    target = int(cursor.lastrowid or 0)
                    new = True
                else:
                    conn.execute(
                        "UPDATE memories SET scope = ?, title = ?, content = ?, tags = ?, "
                        "updated_at = ? WHERE id = ?",
                        (scope, title, content, " ".join(tag_list), now, target),
                    )
                    conn.execute("DELETE FROM memory_tags WHERE memory_id = ?", (target,))
                    new = False
                conn.executemany(
                    "INSERT INTO memory_tags (tag, memory_id) VALUES (?, ?)",
                    [(tag, target) for tag in tag_list],
                )
                saved = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ?", (target,)
                ).fetchone()
                return _memory(saved), new

        return self._retrying(run, write=True)

    def search(
        self,
        query: str | None,
        *,
        scopes: Sequence[str],
        tags: Sequence[str] = (),
        match_all: bool = False,
        limit: int = 10,
        highlight: tuple[str, str] = ("**", "**"),
        snippet_words: int = 16,
    ) -> list[SearchHit]:
        """Memories of ``scopes`` matching ``query`` (best first, by BM25 with titles
        weighing most), carrying every tag of ``tags``. Without a query, or with one
        that holds no word (``fts_query`` gives ``None``): the most recently updated
        ones (callers tell the two apart with ``fts_query``)."""
        if not self.path.exists():
            return []
        match = fts_query(query or "", match_all=match_all)
        tag_sql, tag_args = _tag_filter(tags)
        scope_marks = ", ".join("?" for _ in scopes)

        def run(conn: sqlite3.Connection) -> list[SearchHit]:
            if match is None:
                rows = conn.execute(
                    f"SELECT {_COLUMNS}, substr(m.content, 1, 240) AS snip, 0.0 AS score "
                    f"FROM memories m WHERE m.scope IN ({scope_marks}){tag_sql} "
                    "ORDER BY m.updated_at DESC, m.id DESC LIMIT ?",
                    (*scopes, *tag_args, limit),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_COLUMNS}, "
                    "snippet(memories_fts, -1, ?, ?, '…', ?) AS snip, "
                    "bm25(memories_fts, 4.0, 1.0, 2.0) AS score "
                    "FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
                    f"WHERE memories_fts MATCH ? AND m.scope IN ({scope_marks}){tag_sql} "
                    "ORDER BY score, m.id DESC LIMIT ?",
                    (*highlight, snippet_words, match, *scopes, *tag_args, limit),
                ).fetchall()
            return [
                SearchHit(_memory(row), row["snip"], -float(row["score"]) + 0.0) for row in rows
            ]

        return self._retrying(run, write=False)

    def delete(self, ids: Sequence[int], *, visible: Sequence[str]) -> list[int]:
        """Delete the memories ``ids`` that are visible in ``visible``; returns those
        deleted."""
        if not self.path.exists() or not ids:
            return []
        id_marks = ", ".join("?" for _ in ids)
        scope_marks = ", ".join("?" for _ in visible)

        def run(conn: sqlite3.Connection) -> list[int]:
            with self._transaction(conn):
                where = f"WHERE id IN ({id_marks}) AND scope IN ({scope_marks})"
                found = conn.execute(f"SELECT id FROM memories {where}", (*ids, *visible))
                deleted = sorted(int(row["id"]) for row in found.fetchall())
                conn.execute(f"DELETE FROM memories {where}", (*ids, *visible))
            return deleted

        return self._retrying(run, write=True)

    def count(self) -> int:
        """How many memories the store holds, in every scope."""
        if not self.path.exists():
            return 0
        return self._retrying(
            lambda conn: int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]),
            write=False,
        )
