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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

from toolweave.catalog._versions import version_key
from toolweave.center._model import (
    AuditEntry,
    CallRow,
    CenterError,
    ChangeEvent,
    Status,
    ToolRecord,
    finite,
    mask_record,
)
from toolweave.state import make_folder

__all__ = ["CenterStore", "Damage", "Flags", "SQLiteCenterStore", "StoreSnapshot"]

logger = logging.getLogger("toolweave")

FlagKey = tuple[str, str, str]
"""(scope, target, flag): ``("tool", "bash", "status")``, ``("group", "local_core",
"status")``, ``("source", "mcp:github", "breaker")``, ..."""

Flags = dict[FlagKey, Any]
"""(scope, target, flag) → value."""


@dataclass(frozen=True, slots=True)
class Damage:
    """The rows :meth:`CenterStore.load` left out because they cannot be read (not
    JSON, not an object, a field of the wrong type): one damaged row never hides the
    others. The center keeps what it last read of each (see :class:`Center
    <toolweave.center.Center>`) and reports them in its health.

    Attributes:
        records: Tool name → what is wrong with its record.
        flags: Flag key → what is wrong with its value.
        other: Rows that name no tool or flag at all, each with what is wrong.
    """

    records: Mapping[str, str] = field(default_factory=dict)
    flags: Mapping[FlagKey, str] = field(default_factory=dict)
    other: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.records or self.flags or self.other)

    def rows(self) -> list[str]:
        """Each damaged row and what is wrong with it, for messages."""
        return [
            *(f"the record of tool {name!r} ({why})" for name, why in sorted(self.records.items())),
            *(f"flag {'/'.join(key)} ({why})" for key, why in sorted(self.flags.items())),
            *self.other,
        ]


NO_DAMAGE = Damage()

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
        """Everything but the audit and the feed, as of one version. A record or flag
        that cannot be read is left out and logged (see :meth:`load_checked`).

        Raises:
            CenterError: The store cannot be read, or its version counter is damaged.
        """

    def load_checked(self) -> tuple[StoreSnapshot, Damage]:
        """As :meth:`load`, with the rows it left out because they cannot be read (what
        the center reads: it keeps what it last read of them). Stores that read their
        rows with :func:`decode_rows` say which; by default none are named."""
        return self.load(), NO_DAMAGE

    @abstractmethod
    def changes_since(self, version: int) -> list[ChangeEvent]:
        """The change events after ``version``, oldest first (the feed keeps the last
        ones only; a reader that fell further behind reloads with :meth:`load`). An
        event that cannot be read is left out and logged (decode them with
        :func:`decode_event`): a reader sees the gap in the versions."""

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


# -- reading what a store keeps -----------------------------------------------------------
#
# Every store reads its rows through these functions: a row that another version, a
# buggy writer or a bad restore left malformed is named and left out, never taken for
# a valid one, and never stops the rows after it from being read.

_STATUSES = frozenset(s.value for s in Status)


def _kind(value: Any) -> str:
    """JSON's word for the type of ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _parse(raw: Any) -> Any:
    """The JSON value of a stored text.

    Raises:
        ValueError: ``raw`` is not text, or not JSON.
    """
    if not isinstance(raw, str | bytes):
        raise ValueError(f"not JSON text but {type(raw).__name__}")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"not JSON: {str(exc)[:80]}") from None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def record_data(name: str, raw: Any) -> dict[str, Any]:
    """The JSON object stored as the record of tool ``name``, checked field by field
    against what :meth:`ToolRecord.to_dict` writes.

    Raises:
        ValueError: What is wrong with it (not JSON, not an object, a field of the wrong
            type, the record of another name).
    """
    data = _parse(raw)
    if not isinstance(data, dict):
        raise ValueError(f"not a JSON object but {_kind(data)}")
    for key in ("name", "source"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"its {key!r} is not a name")
    if data["name"] != name:
        raise ValueError(f"it is the record of {data['name']!r}")
    for key in ("fqid", "kind", "description", "default_version"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"its {key!r} is {_kind(data[key])}, not a string")
    if "read_only" in data and not isinstance(data["read_only"], bool):
        raise ValueError(f"its 'read_only' is {_kind(data['read_only'])}, not a boolean")
    for key in ("input_schema", "endpoint"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ValueError(f"its {key!r} is {_kind(data[key])}, not an object")
    for key in ("groups", "versions", "roles"):
        if data.get(key) is not None and not _strings(data[key]):
            raise ValueError(f"its {key!r} is not a list of strings")
    return data


def decode_record(name: str, raw: Any) -> ToolRecord:
    """The record stored for tool ``name`` (see :func:`record_data`).

    Raises:
        ValueError: What is wrong with it.
    """
    return ToolRecord.from_dict(record_data(name, raw))


def flag_problem(key: FlagKey, value: Any) -> str:
    """What is wrong with ``value`` as the value of flag ``key`` (``""``: nothing), for
    the flags whose form the center relies on; other flags may hold any JSON."""
    scope, _, flag = key
    if flag == "status":
        what = "a status"
        ok = (
            isinstance(value, dict)
            and value.get("status") in _STATUSES
            and isinstance(value.get("reason", ""), str)
        )
    elif scope == "tool" and flag.startswith("pin:"):
        what = "a pin"
        ok = (
            isinstance(value, dict)
            and "version" in value
            and (value["version"] is None or isinstance(value["version"], str))
            and isinstance(value.get("history"), list)
        )
    elif scope == "tool" and flag == "rollout":
        what = "a rollout"
        ok = (
            isinstance(value, dict)
            and isinstance(value.get("version"), str)
            and finite(value.get("percent"))
        )
    elif scope == "tool" and flag == "roles":
        what = "a role whitelist"
        ok = isinstance(value, dict) and (
            value.get("roles", 0) is None or _strings(value.get("roles"))
        )
    elif scope == "tool" and flag == "groups":
        what = "a list of groups"
        ok = _strings(value)
    elif scope == "tool" and flag == "approved":
        what = "an approval"
        ok = (
            isinstance(value, dict)
            and isinstance(value.get("hash"), str)
            and isinstance(value.get("description"), str)
            and "input_schema" in value
        )
    elif scope == "mcp" and flag == "config":
        what = "an MCP server entry"
        ok = isinstance(value, dict)
    elif scope == "breaker" and flag == "state":
        what = "a breaker state"
        ok = (
            isinstance(value, dict)
            and isinstance(value.get("state"), str)
            and finite(value.get("until"))
        )
    else:
        return ""
    if ok:
        return ""
    if isinstance(value, dict):
        return f"not {what}: a field is missing or of the wrong type"
    return f"not {what} but {_kind(value)}"


def decode_flag(key: FlagKey, raw: Any) -> Any:
    """The value stored for flag ``key``, checked (see :func:`flag_problem`).

    Raises:
        ValueError: What is wrong with it.
    """
    value = _parse(raw)
    problem = flag_problem(key, value)
    if problem:
        raise ValueError(problem)
    return value


def decode_rows(
    tools: Iterable[tuple[Any, Any]], flags: Iterable[tuple[Any, Any]]
) -> tuple[dict[str, ToolRecord], Flags, Damage]:
    """The records and flags of a store's rows, and what was left out: ``tools`` are
    (name, stored record), ``flags`` (key, stored value), the key a (scope, target,
    flag) tuple of strings when the store could read it."""
    records: dict[str, ToolRecord] = {}
    bad_records: dict[str, str] = {}
    other: list[str] = []
    for name, raw in tools:
        if not isinstance(name, str):
            other.append(f"a tool row named {name!r} (not a name)")
            continue
        try:
            records[name] = decode_record(name, raw)
        except ValueError as exc:
            bad_records[name] = str(exc)
    values: Flags = {}
    bad_flags: dict[FlagKey, str] = {}
    for key, raw in flags:
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key)):
            other.append(f"a flag row keyed {key!r} (not a scope, a target and a flag)")
            continue
        try:
            values[key] = decode_flag(key, raw)
        except ValueError as exc:
            bad_flags[key] = str(exc)
    if not (bad_records or bad_flags or other):
        return records, values, NO_DAMAGE
    return records, values, Damage(bad_records, bad_flags, tuple(other))


def decode_event(version: Any, at: Any, kind: Any, target: Any, detail: Any) -> ChangeEvent:
    """A change event from its stored fields (``detail`` as JSON text or decoded).

    Raises:
        ValueError: What is wrong with it.
    """
    if isinstance(detail, str | bytes):
        detail = _parse(detail)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"its version is {_kind(version)}, not a whole number")
    if not finite(at):
        raise ValueError(f"its time is {_kind(at)}, not a number")
    if not isinstance(kind, str) or not isinstance(target, str):
        raise ValueError("its kind or target is not a string")
    if not isinstance(detail, dict):
        raise ValueError(f"its detail is {_kind(detail)}, not an object")
    return ChangeEvent(version, kind, target, detail, float(at))


def shown_record(raw: Any) -> Any:
    """What the audit keeps of a stored record that is replaced or removed: the record
    with its secrets masked, or ``None`` when it cannot be read."""
    try:
        data = _parse(raw)
    except ValueError:
        return None
    return mask_record(data) if isinstance(data, dict) else None


def repaired(where: str, name: str, exc: ValueError) -> str:
    """Log that a registration replaces the damaged record of ``name``; the reason the
    audit keeps for it."""
    logger.warning(
        "the center store %s: the record of tool %r cannot be read (%s); the registration "
        "replaces it",
        where,
        name,
        exc,
    )
    return f"the stored record could not be read ({exc})"


def stored_flag(key: FlagKey, raw: Any, where: str) -> tuple[Any, bool]:
    """The value of flag ``key`` that a change starts from (``raw``: what is stored,
    ``None`` for nothing), and whether it was damaged: a damaged value counts as none,
    and the change writes over it (even when it would leave the flag unset)."""
    if raw is None:
        return None, False
    try:
        return decode_flag(key, raw), False
    except ValueError as exc:
        logger.warning(
            "the center store %s: flag %s cannot be read (%s); the change writes over it",
            where,
            "/".join(key),
            exc,
        )
        return None, True


def _audit_value(raw: Any) -> Any:
    """The ``before`` or ``after`` of an audit entry as stored (``None``: none, or one
    that cannot be read, which is logged)."""
    if raw is None:
        return None
    try:
        return _parse(raw)
    except ValueError as exc:
        logger.warning("an audit entry of the center holds a value it cannot read: %s", exc)
        return None


class DamageLog:
    """Warns once about each damaged row a store reads (again if it is repaired and then
    damaged anew), naming the store, the row and what is wrong with it."""

    def __init__(self, where: Callable[[], str]) -> None:
        self._where = where
        self._rows: set[str] = set()
        self._events: set[int] = set()

    def loaded(self, damage: Damage) -> None:
        """Report the damage of one load (the rows left out)."""
        rows = set(damage.rows())
        for row in sorted(rows - self._rows):
            logger.warning(
                "the center store %s: %s cannot be read; it is left out, and the center "
                "keeps what it last read of it (registering the tool or setting the flag "
                "again repairs it)",
                self._where(),
                row,
            )
        self._rows = rows

    def event(self, version: Any, why: str) -> None:
        """Report a change event left out."""
        key = version if isinstance(version, int) else -1
        if key not in self._events:
            if len(self._events) > 10_000:
                self._events.clear()
            self._events.add(key)
            logger.warning(
                "the center store %s: change event %r cannot be read (%s); it is skipped "
                "(subscribers are told to read the state again)",
                self._where(),
                version,
                why,
            )


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
        self._damage = DamageLog(self.describe)
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
            self._counter(conn)
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

    def _counter(self, conn: sqlite3.Connection) -> int:
        """The version counter.

        Raises:
            CenterError: Its row is missing or holds no count: the file is damaged.
        """
        row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        value = None if row is None else row[0]
        if isinstance(value, int) and value >= 0:
            return value
        what = (
            "has no version row in its meta table"
            if row is None
            else f"holds {_kind(value)} ({str(value)[:40]!r}) as its version, not a count"
        )
        raise CenterError(
            f"the center store {self.path} is damaged: it {what}; move it aside (the center "
            "starts empty) or restore it from a backup",
            problem="unavailable",
        )

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

    def _bump(self, conn: sqlite3.Connection, kind: str, target: str, detail: Any) -> ChangeEvent:
        version = self._counter(conn) + 1
        conn.execute("UPDATE meta SET value = ? WHERE key = 'version'", (version,))
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
            return self._counter(conn)

    def load(self) -> StoreSnapshot:
        return self.load_checked()[0]

    def load_checked(self) -> tuple[StoreSnapshot, Damage]:
        with self._read() as conn:
            conn.execute("BEGIN")
            try:
                version = self._counter(conn)
                rows = conn.execute("SELECT name, record FROM tools").fetchall()
                flag_rows = conn.execute("SELECT scope, target, flag, value FROM flags").fetchall()
            finally:
                conn.execute("COMMIT")
        records, flags, damage = decode_rows(rows, (((s, t, f), v) for s, t, f, v in flag_rows))
        self._damage.loaded(damage)
        return (version, records, flags), damage

    def changes_since(self, version: int) -> list[ChangeEvent]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT version, at, kind, target, detail FROM changes WHERE version > ? "
                "ORDER BY version",
                (version,),
            ).fetchall()
        events = []
        for number, at, kind, target, detail in rows:
            try:
                events.append(decode_event(number, at, kind, target, detail))
            except ValueError as exc:
                self._damage.event(number, str(exc))
        return events

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
                    try:
                        stored = record_data(record.name, old)
                    except ValueError as exc:  # a damaged record: this one replaces it
                        before, why = None, repaired(self.describe(), record.name, exc)
                    else:
                        _merge(stored, data)
                        if old == _dump(data):
                            continue
                        before, why = stored, ""
                    kind = "changed"
                    self._audit_change(
                        conn, record.name, "update", mask_record(before), mask_record(data),
                        actor, why,
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
            before = shown_record(row[0])
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
            before, damaged = stored_flag(
                (scope, target, flag), None if row is None else row[0], self.describe()
            )
            after = update(before)
            if not damaged and _dump(after) == _dump(before):
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
                    before=_audit_value(before),
                    after=_audit_value(after),
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
