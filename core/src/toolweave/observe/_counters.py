"""Where rate-limit counters live: the registry center's SQLite file, or its Redis.

Both keep a sliding-window log per counter (one entry per admitted call) and decide
with pyrate-limiter's :class:`~pyrate_limiter.SlidingWindowLog`: at most ``limit``
calls in any window of the rate's length, and the wait until the oldest entry that
blocks the call leaves the window. On Redis the check-and-insert is pyrate-limiter's
:class:`~pyrate_limiter.RedisBucket` (one Lua script, atomic per counter); on SQLite one
``BEGIN IMMEDIATE`` transaction checks every counter of the call and records it in all
of them or none.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, final

from toolweave._redis import safe_url
from toolweave.errors import CenterError
from toolweave.observe._spec import Rate

__all__ = ["Counters", "RedisCounters", "Refusal", "SQLiteCounters", "load_pyrate"]

Counter = tuple[str, str, tuple[Rate, ...]]
"""``(scope, key, rates)``: see :meth:`RateLimits.for_call`."""
Refusal = tuple[Counter, Rate, int]
"""The counter and rate that refused a call, and the milliseconds until it would not."""

TRIM_EVERY = 256
"""Writes between two trims of entries that left every window."""


def load_pyrate() -> Any:
    """The ``pyrate_limiter`` module, or an error with the install hint."""
    try:
        import pyrate_limiter
    except ImportError as exc:  # pragma: no cover - the extra is missing
        from toolweave.errors import UsageError

        raise UsageError(
            "rate limits need pyrate-limiter: pip install 'toolweave[limits]'"
        ) from exc
    return pyrate_limiter


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction taken at once (``BEGIN IMMEDIATE``), rolled back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _problem(path: Path, exc: sqlite3.Error) -> CenterError:
    """A clear error for what SQLite raised about the rate-limit counters in ``path``."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in text:
        what = "is damaged or is not an SQLite file"
        todo = "move it aside or restore it from a backup"
    elif code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in text:
        what = "is locked by another process"
        todo = "try again; if it stays locked, find the process holding it"
    elif code == sqlite3.SQLITE_READONLY or "readonly" in text:
        what = "is read-only"
        todo = "give this process write access to the file and its folder"
    elif code == sqlite3.SQLITE_CANTOPEN or "unable to open" in text:
        what = "cannot be opened"
        todo = "check that its folder exists and is writable"
    else:
        what = "failed"
        todo = "see the cause below"
    return CenterError(
        f"the rate-limit counters in {path} {what} ({exc}): {todo}", problem="unavailable"
    )


def _pyrate_rates(pyrate: Any, rates: Sequence[Rate]) -> list[Any]:
    return [pyrate.Rate(rate.limit, rate.window_ms) for rate in rates]


class Counters(ABC):
    """The counters of a :class:`~toolweave.observe.RateLimiter`."""

    @abstractmethod
    def acquire(self, counters: Sequence[Counter], now: int) -> Refusal | None:
        """Count one call at ``now`` (ms) against ``counters``; ``None`` when every one
        allows it, else what refused it."""

    @abstractmethod
    def reset(self) -> None:
        """Forget every count."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""


@final
class SQLiteCounters(Counters):
    """Counters in a table of an SQLite file (the center's), shared by its processes.

    Args:
        path: The file.
        busy_timeout: Seconds a write waits for another process's transaction.
    """

    TABLE = "toolweave_rate_log"

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        pyrate = load_pyrate()
        self.path = Path(path)
        self._algorithm = pyrate.SlidingWindowLog()
        self._rates: dict[tuple[Rate, ...], list[Any]] = {}
        self._lock = threading.Lock()
        self._writes = 0
        self._longest = 0
        try:
            conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise _problem(self.path, exc) from exc
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with _immediate(conn):
                self._create(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise _problem(self.path, exc) from exc
        self._conn: sqlite3.Connection | None = conn

    def _create(self, conn: sqlite3.Connection) -> None:
        """Create the table, or add the ``window_ms`` column to one from before it."""
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self.TABLE} "
            "(key TEXT NOT NULL, at INTEGER NOT NULL, window_ms INTEGER)"
        )
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({self.TABLE})")}
        if "window_ms" not in columns:
            conn.execute(f"ALTER TABLE {self.TABLE} ADD COLUMN window_ms INTEGER")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {self.TABLE}_key_at ON {self.TABLE} (key, at)")

    def __repr__(self) -> str:
        return f"<SQLiteCounters {self.path}>"

    def acquire(self, counters: Sequence[Counter], now: int) -> Refusal | None:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise RuntimeError(f"the rate-limit counters of {self.path} are closed")
            try:
                with _immediate(conn):
                    refusal = self._check(conn, counters, now)
                    if refusal is None:
                        conn.executemany(
                            f"INSERT INTO {self.TABLE} (key, at, window_ms) VALUES (?, ?, ?)",
                            [(key, now, rates[-1].window_ms) for _, key, rates in counters],
                        )
                        self._writes += 1
                        if self._writes % TRIM_EVERY == 0:
                            # Each entry leaves when its own counter's longest window has
                            # passed; entries from before that was recorded (no
                            # window_ms), after the longest window this process knows.
                            conn.execute(
                                f"DELETE FROM {self.TABLE} WHERE at < ? - ifnull(window_ms, ?)",
                                (now, self._longest),
                            )
            except sqlite3.Error as exc:
                raise _problem(self.path, exc) from exc
            return refusal

    def _check(
        self, conn: sqlite3.Connection, counters: Sequence[Counter], now: int
    ) -> Refusal | None:
        algorithm = self._algorithm
        for counter in counters:
            _, key, rates = counter
            theirs = self._rates.get(rates)
            if theirs is None:
                theirs = self._rates[rates] = _pyrate_rates(load_pyrate(), rates)
                self._longest = max(self._longest, rates[-1].window_ms)
            # Counting stops at the limit: a full window needs no exact count.
            counts = [
                conn.execute(
                    f"SELECT COUNT(*) FROM (SELECT 1 FROM {self.TABLE} "
                    "WHERE key = ? AND at >= ? LIMIT ?)",
                    (key, algorithm.window_start(rate, now), rate.limit),
                ).fetchone()[0]
                for rate in theirs
            ]

            def peek(offset: int, key: str = key) -> int | None:
                row = conn.execute(
                    f"SELECT at FROM {self.TABLE} WHERE key = ? ORDER BY at DESC LIMIT 1 OFFSET ?",
                    (key, offset),
                ).fetchone()
                return None if row is None else int(row[0])

            decision = algorithm.decide(theirs, counts, 1, now, peek)
            if not decision.allowed:
                rate = rates[theirs.index(decision.failing_rate)]
                return counter, rate, max(int(decision.retry_after_ms or 0), 1)
        return None

    def reset(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.execute(f"DELETE FROM {self.TABLE}")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


@final
class RedisCounters(Counters):
    """Counters in Redis sorted sets (pyrate-limiter's :class:`RedisBucket`), shared by
    every machine that uses the same Redis.

    The call is counted against its counters one after another: when a later one
    refuses it, the earlier ones have counted it already (pyrate-limiter's script is
    atomic per counter, not across counters).

    Args:
        url: The Redis URL.
        prefix: The keys' prefix (``<prefix>:rate:<counter>``).
        timeout: Seconds one Redis command may take.
    """

    def __init__(self, url: str, *, prefix: str = "toolweave", timeout: float = 2.0) -> None:
        pyrate = load_pyrate()
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - the extra is missing
            from toolweave.errors import UsageError

            raise UsageError("rate limits on Redis need: pip install 'toolweave[redis]'") from exc
        self._pyrate = pyrate
        self._redis_errors = redis.exceptions
        self.prefix = prefix
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        try:
            self._script = self._client.script_load(pyrate.buckets.redis_bucket.LuaScript.PUT_ITEM)
        except redis.exceptions.RedisError as exc:
            self._client.close()
            raise CenterError(
                f"the rate-limit counters on Redis at {safe_url(url)} cannot be "
                f"reached ({type(exc).__name__}: {exc})",
                problem="unavailable",
            ) from None
        self._buckets: dict[tuple[str, tuple[Rate, ...]], Any] = {}
        self._writes: dict[str, int] = {}
        self._expires: dict[str, int] = {}
        """When (on the limiter's clock) each key's expiry, as last set, comes."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<RedisCounters {self.prefix}>"

    def _bucket(self, key: str, rates: tuple[Rate, ...]) -> Any:
        found = self._buckets.get((key, rates))
        if found is None:
            if len(self._buckets) > 10_000:
                self._buckets.clear()  # sessions come and go: keep the cache bounded
                self._writes.clear()
                self._expires.clear()
            found = self._buckets[(key, rates)] = self._pyrate.RedisBucket(
                _pyrate_rates(self._pyrate, rates),
                self._client,
                f"{self.prefix}:rate:{key}",
                self._script,
            )
        return found

    def acquire(self, counters: Sequence[Counter], now: int) -> Refusal | None:
        item = self._pyrate.RateItem("call", now)
        with self._lock:
            for counter in counters:
                _, key, rates = counter
                bucket = self._bucket(key, rates)
                try:
                    decision = bucket.put_decision(item)
                except self._redis_errors.NoScriptError:  # Redis restarted or flushed
                    self._script = bucket.script_hash = self._client.script_load(
                        self._pyrate.buckets.redis_bucket.LuaScript.PUT_ITEM
                    )
                    for other in self._buckets.values():
                        other.script_hash = self._script
                    decision = bucket.put_decision(item)
                if not decision.allowed:
                    index = [r.interval for r in bucket.rates].index(decision.failing_rate.interval)
                    rate = rates[index]
                    return counter, rate, max(int(decision.retry_after_ms or 0), 1)
                written = self._writes.get(key, 0) + 1
                self._writes[key] = written
                longest = rates[-1].window_ms
                if written % TRIM_EVERY == 1 or now + longest >= self._expires.get(key, 0):
                    # The key outlives every entry still in a window: its expiry is set
                    # twice the longest window ahead, again before an entry would
                    # outlive it (about once a window, not at every call).
                    pipe = self._client.pipeline(transaction=False)
                    pipe.zremrangebyscore(bucket.bucket_key, 0, now - longest - 1)
                    pipe.pexpire(bucket.bucket_key, 2 * longest + 1000)
                    pipe.execute()
                    self._expires[key] = now + 2 * longest
        return None

    def reset(self) -> None:
        with self._lock:
            for key in self._client.scan_iter(match=f"{self.prefix}:rate:*"):
                self._client.delete(key)

    def close(self) -> None:
        self._client.close()
