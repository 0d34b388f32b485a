"""Where the registry center keeps its records, flags, change feed and audit: the
:class:`CenterStore` interface and its embedded SQLite implementation."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, final

from toolweave.catalog._versions import version_key
from toolweave.center._model import (
    AuditEntry,
    CallRow,
    CenterError,
    ChangeEvent,
    ToolRecord,
    mask_record,
)
from toolweave.state import make_folder

__all__ = ["CenterStore", "Flags", "SQLiteCenterStore", "StoreSnapshot"]

logger = logging.getLogger("toolweave")

Flags = dict[tuple[str, str, str], Any]
"""(scope, target, flag) → value: ``("tool", "bash", "status")``, ``("group",
"local_core", "status")``, ``("source", "mcp:github", "breaker")``, ..."""

StoreSnapshot = tuple[int, dict[str, ToolRecord], Flags]
"""What :meth:`CenterStore.load` returns: the version, the records by name, the flags."""

FlagUpdate = Callable[[Any], Any]
"""Computes a flag's new value from its current one (``None`` when unset); returning
``None`` unsets it."""


class CenterStore(ABC):
    """The registry center's storage: records, flags, a version counter that grows with
    every change, the change feed and the audit. Implementations are safe to use from
    several threads; every change is one transaction with its audit entry and its
    change event."""

    readonly: bool = False
    """The store answers reads but refuses changes."""

    @abstractmethod
    def describe(self) -> str:
        """Where the store is (a path or a URL), for messages."""

    @abstractmethod
    def version(self) -> int:
        """The version counter (cheap: polled several times a second)."""

    @abstractmethod
    def load(self) -> StoreSnapshot:
        """Everything but the audit and the feed, as of one version."""

    @abstractmethod
    def changes_since(self, version: int) -> list[ChangeEvent]:
        """The change events after ``version``, oldest first (the feed keeps the last
        ones only; a reader that fell further behind reloads with :meth:`load`)."""

    @abstractmethod
    def register(self, records: Sequence[ToolRecord], *, actor: str) -> list[ChangeEvent]:
        """Add or update records; a record whose metadata did not change is left as is.

        Raises:
            CenterError: A name is held by another source (the message names both).
        """

    @abstractmethod
    def unregister(self, name: str, *, actor: str, reason: str) -> list[ChangeEvent]:
        """Remove a record and its tool flags (the audit keeps its history)."""

    @abstractmethod
    def update_flag(
        self,
        scope: str,
        target: str,
        flag: str,
        update: FlagUpdate,
        *,
        actor: str,
        reason: str,
        action: str,
        shown: Callable[[Any], Any] | None = None,
    ) -> ChangeEvent | None:
        """Read-modify-write one flag in one transaction, audited as ``action``;
        ``None`` when the value did not change (nothing is written). ``shown`` maps a
        value to what the audit entry and the change event keep of it (secrets
        masked); the flag itself keeps the value.

        Raises:
            CenterError: ``scope`` is ``tool`` and the store holds no tool ``target``
                (checked in the same transaction, so a flag never outlives its tool).
        """

    @abstractmethod
    def append_calls(self, rows: Sequence[CallRow]) -> None:
        """Append the audit entries of calls (all of them or none)."""

    @abstractmethod
    def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        """Append audit entries of any type (all of them or none)."""

    @abstractmethod
    def query_audit(
        self,
        *,
        type: str | None = None,
        session: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        """Audit entries matching every filter given, newest first."""

    @abstractmethod
    def count_audit(self, *, type: str | None = None) -> int:
        """How many audit entries there are (of ``type``)."""

    @abstractmethod
    def close(self) -> None:
        """Release the store (idempotent)."""

    def watch(self, wake: Callable[[], None]) -> None:  # noqa: B027 - optional
        """Call ``wake`` (from any thread) when another client may have changed the
        store, so the center looks before its next poll. Stores without a
        notification channel do nothing: the center polls :meth:`version`."""

    def audit_trimmed(self) -> int:
        """Audit entries the store removed to stay within its bound (0: none, or the
        store keeps everything)."""
        return 0


APPLICATION_ID = 0x54574543
"""Marks a file as a toolweave center store (``PRAGMA application_id``, "TWEC")."""
SCHEMA_VERSION = 1

FEED_KEEP = 10_000
"""Change events kept for readers that poll (older ones are pruned)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tools (
    name TEXT PRIMARY KEY, source TEXT NOT NULL, record TEXT NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS flags (
    scope TEXT NOT NULL, target TEXT NOT NULL, flag TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (scope, target, flag)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    version INTEGER PRIMARY KEY, at REAL NOT NULL, kind TEXT NOT NULL,
    target TEXT NOT NULL, detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, type TEXT NOT NULL,
    session TEXT, role TEXT, tool TEXT, version TEXT, digest TEXT, outcome TEXT,
    error_kind TEXT, duration_ms REAL, actor TEXT, before TEXT, after TEXT, reason TEXT
);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE INDEX IF NOT EXISTS audit_tool ON audit (tool, at);
CREATE INDEX IF NOT EXISTS audit_session ON audit (session, at);
INSERT OR IGNORE INTO meta VALUES ('version', 0);
"""

_AUDIT_COLUMNS = (
    "at, type, session, role, tool, version, digest, outcome, error_kind, duration_ms, "
    "actor, before, after, reason"
)


_MARKS = ", ".join("?" * 14)

_INSERT_CALLS = (
    "INSERT INTO audit (at, type, session, role, tool, version, digest, outcome, error_kind, "
    "duration_ms) SELECT json_extract(value, '$[0]'), 'call', "
    + ", ".join(f"json_extract(value, '$[{i}]')" for i in range(1, 9))
    + " FROM json_each(?)"
)
"""Appends a batch of call rows given as one JSON array of arrays."""


def _merge(before: dict[str, Any], data: dict[str, Any]) -> None:
    """What a registration keeps of the record already there: hosts may configure
    different versions and declare different groups (the record knows them all), and a
    registration without a role whitelist keeps the one its source declared."""
    data["versions"] = sorted({*before.get("versions", ()), *data["versions"]}, key=version_key)
    data["groups"] = sorted({*before.get("groups", ()), *data["groups"]})
    if data["roles"] is None:  # a registration that declares none keeps the source's
        data["roles"] = before.get("roles")


def _dump(value: Any) -> str:
    """Canonical JSON of ``value``.

    Raises:
        CenterError: ``value`` holds a number JSON cannot carry (NaN, an infinity), so
            nothing that could not be read back is ever stored.
    """
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False
        )
    except ValueError as exc:
        raise CenterError(
            f"the center cannot keep this value: {exc} (NaN and infinities are not JSON)"
        ) from None
    except TypeError as exc:  # keys of mixed types cannot be sorted
        raise CenterError(f"the center cannot keep this value: {exc}") from None


def _problem(path: str, exc: sqlite3.Error) -> CenterError:
    """A clear error for what SQLite raised about the store at ``path``."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in str(exc):
        what = "is damaged or is not a toolweave center store"
        todo = "move it aside (the center starts empty) or restore it from a backup"
    elif code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc):
        what = "is locked by another process"
        todo = "try again; if it stays locked, find the process holding it"
    elif code == sqlite3.SQLITE_READONLY or "readonly" in str(exc):
        what = "is read-only"
        todo = "give this process write access to the file and its folder"
    elif code == sqlite3.SQLITE_CANTOPEN or "unable to open" in str(exc):
        what = "cannot be opened"
        todo = "check that its folder exists and is writable"
    else:
        what = "failed"
        todo = "see the cause below"
    return CenterError(f"the center store {path} {what} ({exc}): {todo}", problem="unavailable")


@final
class SQLiteCenterStore(CenterStore):
    """The embedded center store: one SQLite file in WAL mode, shared safely by the
    processes of one machine (writes are transactions; readers poll ``meta.version``).

    Args:
        path: The file (created with its folder when missing, unless ``readonly``).
        readonly: Open for reading only (also chosen when the file cannot be written).
        busy_timeout: Seconds a write waits for another process's transaction.

    Raises:
        CenterError: The file is damaged, is not a center store, is newer than this
            code, or cannot be opened.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False, busy_timeout: float = 5.0):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._closed = False
        where = str(self.path)
        if not readonly and self.path.exists() and not os.access(self.path, os.W_OK):
            readonly = True
        self.readonly = readonly
        try:
            if readonly:
                uri = f"file:{self.path.resolve().as_posix()}?mode=ro"
                conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            else:
                make_folder(self.path)
                conn = sqlite3.connect(self.path, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _problem(where, exc) from exc
        except OSError as exc:
            raise CenterError(
                f"the center store {where} cannot be created ({exc})", problem="unavailable"
            ) from exc
        conn.isolation_level = None
        self._conn = conn
        self._file = self.path.absolute()
        self._identity = self._stat()
        """The file's (device, inode) when opened: another one at the path later means
        the file was deleted or replaced under this connection."""
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            user = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables and app != APPLICATION_ID:
                raise CenterError(
                    f"{where} is an SQLite file but not a toolweave center store; "
                    "choose another path"
                )
            if user > SCHEMA_VERSION:
                raise CenterError(
                    f"the center store {where} was written by a newer toolweave "
                    f"(layout {user}, this one reads {SCHEMA_VERSION}); upgrade toolweave"
                )
            if not readonly:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                if not tables:
                    with self._write():
                        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        for statement in _SCHEMA.split(";"):
                            if statement.strip():
                                conn.execute(statement)
            elif not tables:
                raise CenterError(f"the center store {where} is empty and opened read-only")
            conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            raise _problem(where, exc) from exc
        except CenterError:
            conn.close()
            raise

    def describe(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"<SQLiteCenterStore {self.path}{' read-only' if self.readonly else ''}>"

    # -- plumbing ---------------------------------------------------------------------

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self._file)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _check_file(self) -> None:
        """Raises CenterError when the file at the path is no longer the one open: what
        this connection reads and writes would reach no other process, and be lost."""
        if self._stat() != self._identity:
            raise CenterError(
                f"the center store {self.path} is unreachable: its file was deleted or "
                "replaced while this process had it open, so changes are refused; restore "
                "the file, or restart to open the one now at that path",
                problem="unavailable",
            )

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise CenterError(f"the center store {self.path} is closed", problem="unavailable")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise _problem(str(self.path), exc) from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.readonly:
            raise CenterError(
                f"the center store {self.path} is read-only: changes are refused "
                "(give this process write access to change it)",
                problem="unavailable",
            )
        with self._read() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._check_file()  # once the write lock is held
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @staticmethod
    def _bump(conn: sqlite3.Connection, kind: str, target: str, detail: Any) -> ChangeEvent:
        version = conn.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'version' RETURNING value"
        ).fetchone()[0]
        now = time.time()
        conn.execute(
            "INSERT INTO changes VALUES (?, ?, ?, ?, ?)",
            (version, now, kind, target, _dump(detail)),
        )
        if version % 1000 == 0:
            conn.execute("DELETE FROM changes WHERE version <= ?", (version - FEED_KEEP,))
        return ChangeEvent(version, kind, target, detail, now)

    @staticmethod
    def _audit_change(
        conn: sqlite3.Connection,
        target: str,
        action: str,
        before: Any,
        after: Any,
        actor: str,
        reason: str,
    ) -> None:
        conn.execute(
            f"INSERT INTO audit ({_AUDIT_COLUMNS}) VALUES "
            "(?, 'change', NULL, NULL, ?, NULL, NULL, ?, NULL, NULL, ?, ?, ?, ?)",
            (time.time(), target, action, actor, _dump(before), _dump(after), reason),
        )

    # -- reads ------------------------------------------------------------------------

    def version(self) -> int:
        with self._read() as conn:
            self._check_file()
            row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return int(row[0])

    def load(self) -> StoreSnapshot:
        with self._read() as conn:
            conn.execute("BEGIN")
            try:
                version = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()[0]
                rows = conn.execute("SELECT record FROM tools").fetchall()
                flag_rows = conn.execute("SELECT scope, target, flag, value FROM flags").fetchall()
            finally:
                conn.execute("COMMIT")
        try:
            records = {r.name: r for r in (ToolRecord.from_dict(json.loads(x)) for (x,) in rows)}
            flags = {(s, t, f): json.loads(v) for s, t, f, v in flag_rows}
        except (ValueError, KeyError, TypeError) as exc:
            raise CenterError(
                f"the center store {self.path} holds a record it cannot read ({exc}); "
                "move the file aside or restore it from a backup",
                problem="unavailable",
            ) from exc
        return int(version), records, flags

    def changes_since(self, version: int) -> list[ChangeEvent]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT version, at, kind, target, detail FROM changes WHERE version > ? "
                "ORDER BY version",
                (version,),
            ).fetchall()
        return [ChangeEvent(v, k, t, json.loads(d), at) for v, at, k, t, d in rows]

    # -- changes ----------------------------------------------------------------------

    def register(self, records: Sequence[ToolRecord], *, actor: str) -> list[ChangeEvent]:
        events: list[ChangeEvent] = []
        with self._write() as conn:
            for record in records:
                row = conn.execute(
                    "SELECT source, record FROM tools WHERE name = ?", (record.name,)
                ).fetchone()
                data = record.to_dict(reveal=True)
                if row is not None:
                    source, old = row
                    if source != record.source:
                        raise CenterError(
                            f"tool name {record.name!r} is already registered by {source}; "
                            f"{record.source} cannot register it too (rename one of them)",
                            problem="conflict",
                        )
                    before = json.loads(old)
                    _merge(before, data)
                    if old == _dump(data):
                        continue
                    kind = "changed"
                    self._audit_change(
                        conn, record.name, "update", mask_record(before), mask_record(data),
                        actor, "",
                    )  # fmt: skip
                else:
                    kind, before = "added", None
                conn.execute(
                    "INSERT OR REPLACE INTO tools VALUES (?, ?, ?, ?)",
                    (record.name, record.source, _dump(data), time.time()),
                )
                events.append(self._bump(conn, kind, record.name, {"source": record.source}))
                if kind == "added":
                    self._audit_change(
                        conn, record.name, "register", before, mask_record(data), actor, ""
                    )
        return events

    def unregister(self, name: str, *, actor: str, reason: str) -> list[ChangeEvent]:
        with self._write() as conn:
            row = conn.execute("SELECT record FROM tools WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise CenterError(f"the center holds no tool named {name!r}", problem="not_found")
            conn.execute("DELETE FROM tools WHERE name = ?", (name,))
            conn.execute("DELETE FROM flags WHERE scope = 'tool' AND target = ?", (name,))
            before = mask_record(json.loads(row[0]))
            self._audit_change(conn, name, "unregister", before, None, actor, reason)
            return [self._bump(conn, "removed", name, {})]

    def update_flag(
        self,
        scope: str,
        target: str,
        flag: str,
        update: FlagUpdate,
        *,
        actor: str,
        reason: str,
        action: str,
        shown: Callable[[Any], Any] | None = None,
    ) -> ChangeEvent | None:
        with self._write() as conn:
            if scope == "tool" and (
                conn.execute("SELECT 1 FROM tools WHERE name = ?", (target,)).fetchone() is None
            ):
                raise CenterError(f"the center holds no tool named {target!r}", problem="not_found")
            row = conn.execute(
                "SELECT value FROM flags WHERE scope = ? AND target = ? AND flag = ?",
                (scope, target, flag),
            ).fetchone()
            before = json.loads(row[0]) if row is not None else None
            after = update(before)
            if _dump(after) == _dump(before):
                return None
            if after is None:
                conn.execute(
                    "DELETE FROM flags WHERE scope = ? AND target = ? AND flag = ?",
                    (scope, target, flag),
                )
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO flags VALUES (?, ?, ?, ?)",
                    (scope, target, flag, _dump(after)),
                )
            label = target if scope == "tool" else f"{scope}:{target}"
            if shown is not None:
                before, after = shown(before), shown(after)
            self._audit_change(conn, label, action, before, after, actor, reason)
            return self._bump(conn, "flag", label, {"flag": flag, "value": after})

    # -- audit ------------------------------------------------------------------------

    def append_calls(self, rows: Sequence[CallRow]) -> None:
        if not rows:
            return
        # One statement per batch: the rows travel as one JSON array, so the lock is
        # taken once and no NULL is bound row by row.
        with self._write() as conn:
            conn.execute(_INSERT_CALLS, (json.dumps(rows),))

    def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        if not entries:
            return
        rows = [
            (
                e.at, e.type, e.session, e.role, e.tool, e.version, e.digest, e.outcome,
                e.error_kind, e.duration_ms, e.actor,
                None if e.before is None else _dump(e.before),
                None if e.after is None else _dump(e.after),
                e.reason,
            )
            for e in entries
        ]  # fmt: skip
        with self._write() as conn:
            conn.executemany(f"INSERT INTO audit ({_AUDIT_COLUMNS}) VALUES ({_MARKS})", rows)

    def query_audit(
        self,
        *,
        type: str | None = None,
        session: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> list[AuditEntry]:
        where: list[str] = []
        values: list[Any] = []
        for column, value in (
            ("type", type),
            ("session", session),
            ("tool", tool),
            ("outcome", outcome),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                values.append(value)
        if since is not None:
            where.append("at >= ?")
            values.append(since)
        if until is not None:
            where.append("at <= ?")
            values.append(until)
        sql = f"SELECT id, {_AUDIT_COLUMNS} FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        values.append(max(0, int(limit)))
        with self._read() as conn:
            rows = conn.execute(sql, values).fetchall()
        out: list[AuditEntry] = []
        for row in rows:
            (ident, at, kind, session_id, role, name, version, digest) = row[:8]
            (result, error_kind, duration, actor, before, after, why) = row[8:]
            out.append(
                AuditEntry(
                    at=at,
                    type=kind,
                    session=session_id,
                    role=role,
                    tool=name,
                    version=version,
                    digest=digest,
                    outcome=result,
                    error_kind=error_kind,
                    duration_ms=duration,
                    actor=actor,
                    before=None if before is None else json.loads(before),
                    after=None if after is None else json.loads(after),
                    reason=why,
                    id=ident,
                )
            )
        return out

    def count_audit(self, *, type: str | None = None) -> int:
        with self._read() as conn:
            if type is None:
                row = conn.execute("SELECT count(*) FROM audit").fetchone()
            else:
                row = conn.execute("SELECT count(*) FROM audit WHERE type = ?", (type,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
