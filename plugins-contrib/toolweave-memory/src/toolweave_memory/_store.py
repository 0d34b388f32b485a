"""The memory store: one SQLite file with an FTS5 index, safe for several processes.

Every operation opens its own connection (cheap next to a model's turn), runs in one
``BEGIN IMMEDIATE`` transaction for writes, and is retried when another process holds
the write lock longer than the busy timeout. The file is in WAL mode, so readers never
wait for writers and a write waits only for another write.
"""

from __future__ import annotations

import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from toolweave import ErrorKind, ToolError
from toolweave.state import make_folder

__all__ = ["MAX_ID", "Memory", "MemoryStore", "SearchHit", "fts_query"]

MAX_ID = 2**63 - 1
"""The largest id a memory can have (SQLite's largest integer)."""

T = TypeVar("T")

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
    SQLite, or written by a newer version).
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0, attempts: int = 8) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.attempts = attempts
        self._ready = False

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r})"

    # -- connections ----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema, once per store object (idempotent across processes)."""
        if self._ready:
            return
        conn.execute("PRAGMA journal_mode = WAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"{self.path} was written by a newer toolweave-memory (schema {version})"
            )
        if version < SCHEMA_VERSION:
            with self._transaction(conn):
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._ready = True

    def _retrying(self, operation: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run ``operation`` on a fresh connection, again when the database stays busy."""
        delay = 0.02
        for attempt in range(self.attempts):
            try:
                if write:
                    make_folder(self.path)
                with closing(self._connect()) as conn:
                    self._prepare(conn)
                    return operation(conn)
            except sqlite3.OperationalError as exc:
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
        weighing most), carrying every tag of ``tags``. Without a query: the most
        recently updated ones."""
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
