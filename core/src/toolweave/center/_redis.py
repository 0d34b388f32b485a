"""The registry center on Redis, for agents on many machines: records and flags in
hashes, the version counter every change bumps, the change feed in a sorted set with a
pub/sub wake-up, the audit in a stream bounded by an operator-set length."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, final

from toolweave._redis import RedisLink, RedisUnavailable
from toolweave.center._model import (
    CALL_FIELDS,
    AuditEntry,
    CallRow,
    CenterError,
    ChangeEvent,
    ToolRecord,
    mask_record,
)
from toolweave.center._store import (
    FEED_KEEP,
    CenterStore,
    Damage,
    DamageLog,
    FlagUpdate,
    StoreSnapshot,
    _dump,
    _merge,
    decode_event,
    decode_rows,
    record_data,
    repaired,
    shown_record,
    stored_flag,
)

__all__ = ["RedisCenterStore"]

logger = logging.getLogger("toolweave")

_SEP = "\x1f"
"""Separates scope, target and flag in a flag's hash field."""


_SLACK = 600.0
"""Seconds an audit entry may wait to be written (with clock skew) before its stream id
no longer bounds its time."""


_SCAN_MAX = 1_000_000
"""Audit entries a query reads at most (newest first) before it answers what it found."""

_encoder = json.JSONEncoder(separators=(",", ":"), default=str, allow_nan=False)


def _compact(value: Any) -> str:
    try:
        return _encoder.encode(value)
    except ValueError as exc:
        raise CenterError(
            f"the center cannot keep this value: {exc} (NaN and infinities are not JSON)"
        ) from None


class _Retry(Exception):
    """Another client changed the center meanwhile: read again and retry."""


@final
class RedisCenterStore(CenterStore):
    """The center's store on Redis (``redis://host:port/db``).

    Every change is one ``MULTI`` transaction guarded by ``WATCH`` on the version key,
    so changes from any number of clients are applied one at a time, each with its
    change event and audit entry; a ``PUBLISH`` wakes every center at once (they also
    poll the version, so a missed message costs at most one poll interval).

    Args:
        url: The Redis URL.
        prefix: The keys' prefix (several centers may share one Redis).
        audit_maxlen: Entries the audit stream keeps; older ones are trimmed and
            counted (:meth:`audit_trimmed`), never dropped silently.
        timeout: Seconds one Redis command may take.

    Raises:
        CenterError: Redis cannot be reached, or the package is missing.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolweave:center",
        audit_maxlen: int = 1_000_000,
        timeout: float = 2.0,
    ) -> None:
        self.prefix = prefix
        self.audit_maxlen = audit_maxlen
        try:
            self._link = RedisLink(url, timeout=timeout)
            self._link.run(self._link.client.ping(), "PING")
        except RedisUnavailable as exc:
            with contextlib.suppress(Exception):
                self._link.close()
            raise CenterError(
                f"the center store {url} is unreachable: {exc}", problem="unavailable"
            ) from exc
        self._r = self._link.client
        self._watching = False
        self._closed = False
        self._damage = DamageLog(self.describe)

    def _key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    @property
    def url(self) -> str:
        """The Redis URL (with its password, if it has one: do not log it)."""
        return self._link.url

    def describe(self) -> str:
        return f"{self._link.safe_url}#{self.prefix}"

    def __repr__(self) -> str:
        return f"<RedisCenterStore {self.describe()}>"

    def _run(self, awaitable: Any, what: str) -> Any:
        import redis.exceptions

        if self._closed:
            awaitable.close()
            raise CenterError(
                f"the center store {self.describe()} is closed", problem="unavailable"
            )
        try:
            return self._link.run(awaitable, what)
        except RedisUnavailable as exc:
            raise CenterError(
                f"the center store {self.describe()}: {exc}", problem="unavailable"
            ) from exc
        except redis.exceptions.ResponseError as exc:
            damaged = (
                ": a key of the center holds the wrong type of value, so the store is "
                "damaged; restore it from a backup"
                if "WRONGTYPE" in str(exc)
                else ""
            )
            raise CenterError(
                f"the center store {self.describe()} refused {what} ({exc}){damaged}",
                problem="unavailable",
            ) from exc

    def _count(self, raw: Any, key: str) -> int:
        """The count stored at ``key`` (none: 0).

        Raises:
            CenterError: It holds something else: the store is damaged.
        """
        if raw is None:
            return 0
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value >= 0:
            return value
        shown = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        raise CenterError(
            f"the center store {self.describe()} is damaged: its key {self._key(key)} "
            f"holds {shown[:40]!r}, not a count; set it back to a count (for the version, "
            f"the highest version in {self._key('changes')}) or restore Redis from a backup",
            problem="unavailable",
        )

    # -- reads ------------------------------------------------------------------------

    def version(self) -> int:
        return self._count(self._run(self._r.get(self._key("version")), "GET version"), "version")

    def load(self) -> StoreSnapshot:
        return self.load_checked()[0]

    def load_checked(self) -> tuple[StoreSnapshot, Damage]:
        async def read() -> list[Any]:
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.get(self._key("version"))
                pipe.hgetall(self._key("tools"))
                pipe.hgetall(self._key("flags"))
                result: list[Any] = await pipe.execute()
                return result

        version, tools, flags = self._run(read(), "the center's state")
        records, parsed, damage = decode_rows(
            ((_text(k), v) for k, v in tools.items()),
            ((_flag_key(k), v) for k, v in flags.items()),
        )
        self._damage.loaded(damage)
        return (self._count(version, "version"), records, parsed), damage

    def changes_since(self, version: int) -> list[ChangeEvent]:
        rows = self._run(
            self._r.zrangebyscore(self._key("changes"), version + 1, "+inf", withscores=True),
            "the change feed",
        )
        events = []
        for row, score in rows:
            try:
                data = json.loads(row)
                if not isinstance(data, dict):
                    raise ValueError(f"not a JSON object: {str(row)[:40]}")
                events.append(
                    decode_event(
                        data.get("version"),
                        data.get("at"),
                        data.get("kind"),
                        data.get("target"),
                        data.get("detail"),
                    )
                )
            except (ValueError, RecursionError) as exc:
                self._damage.event(int(score), str(exc)[:120])
        return events

    # -- changes ----------------------------------------------------------------------

    async def _transact(self, plan: Callable[[Any, int], Any], what: str) -> list[ChangeEvent]:
        """Run ``plan(pipe, version)`` in a WATCHed transaction until it applies.
        ``plan`` reads through ``pipe`` (immediate mode), then returns a list of
        ``(kind, target, detail, audit)`` changes to write, or raises."""
        import redis.exceptions

        version_key_ = self._key("version")
        for _ in range(100):
            async with self._r.pipeline(transaction=True) as pipeline:
                pipe: Any = pipeline
                try:
                    await pipe.watch(version_key_)
                    current = self._count(await pipe.get(version_key_), "version")
                    writes, changes = await plan(pipe, current)
                    if not changes:
                        await pipe.unwatch()
                        return []
                    pipe.multi()
                    writes(pipe)
                    events = []
                    now = time.time()
                    for i, (kind, target, detail, audit) in enumerate(changes, 1):
                        event = ChangeEvent(current + i, kind, target, detail, now)
                        events.append(event)
                        pipe.zadd(self._key("changes"), {_dump(event.to_dict()): event.version})
                        if audit is not None:
                            self._add_audit(pipe, audit)
                    last = current + len(changes)
                    pipe.set(version_key_, last)
                    if last % 1000 < len(changes):
                        pipe.zremrangebyscore(self._key("changes"), "-inf", last - FEED_KEEP)
                    pipe.publish(self._key("feed"), last)
                    await pipe.execute()
                    return events
                except redis.exceptions.WatchError:
                    continue
        raise CenterError(
            f"the center store {self.describe()} is too busy to apply {what}", problem="unavailable"
        )

    def _add_audit(self, pipe: Any, entry: AuditEntry) -> None:
        data = {k: v for k, v in entry.to_dict().items() if v is not None and k != "id"}
        pipe.xadd(
            self._key("audit"), {"e": _compact(data)}, maxlen=self.audit_maxlen, approximate=False
        )
        pipe.incr(self._key(f"audit:count:{entry.type}"))
        pipe.incr(self._key("audit:count"))

    def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        if not entries:
            return

        async def write() -> None:  # all of the batch or none of it (MULTI/EXEC)
            async with self._r.pipeline(transaction=True) as pipe:
                for entry in entries:
                    self._add_audit(pipe, entry)
                await pipe.execute()

        self._run(write(), "the audit")

    def register(self, records: Sequence[ToolRecord], *, actor: str) -> list[ChangeEvent]:
        tools = self._key("tools")

        async def plan(pipe: Any, version: int) -> Any:
            names = [r.name for r in records]
            found = await pipe.hmget(tools, names) if names else []
            updates: dict[str, str] = {}
            changes: list[tuple[str, str, dict[str, Any], AuditEntry | None]] = []
            for record, old in zip(records, found, strict=True):
                data = record.to_dict(reveal=True)
                if old is not None:
                    try:
                        stored = record_data(record.name, old)
                    except ValueError as exc:  # a damaged record: this one replaces it
                        stored, why = None, repaired(self.describe(), record.name, exc)
                    # A damaged record still names its source when it can: a name stays
                    # with the source holding it.
                    source = _source_of(old) if stored is None else stored["source"]
                    if source is not None and source != record.source:
                        raise CenterError(
                            f"tool name {record.name!r} is already registered by "
                            f"{source}; {record.source} cannot register it too "
                            "(rename one of them)",
                            problem="conflict",
                        )
                    if stored is not None:
                        why = ""
                        _merge(stored, data)
                        if _dump(stored) == _dump(data):
                            continue
                    audit = AuditEntry(
                        time.time(), "change", tool=record.name, outcome="update",
                        actor=actor, before=mask_record(stored), after=mask_record(data),
                        reason=why,
                    )  # fmt: skip
                    changes.append(("changed", record.name, {"source": record.source}, audit))
                else:
                    audit = AuditEntry(
                        time.time(), "change", tool=record.name, outcome="register",
                        actor=actor, after=mask_record(data), reason="",
                    )  # fmt: skip
                    changes.append(("added", record.name, {"source": record.source}, audit))
                updates[record.name] = _dump(data)

            def writes(p: Any) -> None:
                if updates:
                    p.hset(tools, mapping=updates)

            return writes, changes

        return self._run(self._transact(plan, "a registration"), "a registration")  # type: ignore[no-any-return]

    def unregister(self, name: str, *, actor: str, reason: str) -> list[ChangeEvent]:
        tools, flags = self._key("tools"), self._key("flags")

        async def plan(pipe: Any, version: int) -> Any:
            old = await pipe.hget(tools, name)
            if old is None:
                raise CenterError(f"the center holds no tool named {name!r}", problem="not_found")
            prefix = f"tool{_SEP}{name}{_SEP}".encode()
            own = [k for k in await pipe.hkeys(flags) if k.startswith(prefix)]

            def writes(p: Any) -> None:
                p.hdel(tools, name)
                if own:
                    p.hdel(flags, *own)

            audit = AuditEntry(
                time.time(), "change", tool=name, outcome="unregister", actor=actor,
                before=shown_record(old), reason=reason,
            )  # fmt: skip
            return writes, [("removed", name, {}, audit)]

        return self._run(self._transact(plan, "an unregistration"), "an unregistration")  # type: ignore[no-any-return]

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
        flags, tools = self._key("flags"), self._key("tools")
        field = _SEP.join((scope, target, flag))
        label = target if scope == "tool" else f"{scope}:{target}"

        async def plan(pipe: Any, version: int) -> Any:
            # Under the WATCH of the version an unregistration bumps: a tool removed
            # meanwhile makes this transaction retry, and then fail here.
            if scope == "tool" and not await pipe.hexists(tools, target):
                raise CenterError(f"the center holds no tool named {target!r}", problem="not_found")
            raw = await pipe.hget(flags, field)
            before, damaged = stored_flag((scope, target, flag), raw, self.describe())
            after = update(before)
            if not damaged and _dump(after) == _dump(before):
                return None, []

            def writes(p: Any) -> None:
                if after is None:
                    p.hdel(flags, field)
                else:
                    p.hset(flags, field, _dump(after))

            kept_before, kept_after = (
                (before, after) if shown is None else (shown(before), shown(after))
            )
            audit = AuditEntry(
                time.time(), "change", tool=label, outcome=action, actor=actor,
                before=kept_before, after=kept_after, reason=reason,
            )  # fmt: skip
            return writes, [("flag", label, {"flag": flag, "value": kept_after}, audit)]

        events = self._run(self._transact(plan, "a change"), "a change")
        return events[0] if events else None

    # -- audit ------------------------------------------------------------------------

    def append_calls(self, rows: Sequence[CallRow]) -> None:
        if not rows:
            return
        stream = self._key("audit")

        async def write() -> None:  # all of the batch or none of it (MULTI/EXEC)
            async with self._r.pipeline(transaction=True) as pipe:
                for row in rows:
                    # One field per entry, one compact JSON text: the client's cost per
                    # entry is what bounds audited throughput.
                    data = dict(zip(CALL_FIELDS, row, strict=True))
                    data["type"] = "call"
                    pipe.xadd(
                        stream, {"e": _compact(data)}, maxlen=self.audit_maxlen, approximate=False
                    )
                pipe.incrby(self._key("audit:count:call"), len(rows))
                pipe.incrby(self._key("audit:count"), len(rows))
                await pipe.execute()

        self._run(write(), "the audit")

    def audit_trimmed(self) -> int:
        async def count() -> list[Any]:
            async with self._r.pipeline(transaction=True) as pipe:
                pipe.get(self._key("audit:count"))
                pipe.xlen(self._key("audit"))
                result: list[Any] = await pipe.execute()
                return result

        written, present = self._run(count(), "the audit's length")
        return max(0, self._count(written, "audit:count") - int(present))

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
        wanted = {
            k: v
            for k, v in (("type", type), ("session", session), ("tool", tool), ("outcome", outcome))
            if v is not None
        }
        # Entries are written in batches after their calls, so a stream id (the
        # server's clock at writing) is later than the entry's time; the scan goes from
        # the newest and stops well past ``since``.
        low = "-" if since is None else str(max(0, int((since - _SLACK) * 1000)))
        limit = max(0, int(limit))

        out: list[AuditEntry] = []
        top = "+"
        scanned = 0
        page = 100 if limit <= 100 and not wanted else 2000
        # Page by page, each page one command under the link's timeout.
        while len(out) < limit and scanned < _SCAN_MAX:
            rows: Any = self._run(
                self._r.xrevrange(self._key("audit"), top, low, count=page), "an audit query"
            )
            if not rows:
                break
            for ident, fields in rows:
                try:
                    entry = _entry(ident, fields)
                except (ValueError, TypeError, KeyError, RecursionError) as exc:
                    logger.warning(
                        "the center store %s: audit entry %s cannot be read (%s); skipped",
                        self.describe(),
                        ident,
                        exc,
                    )
                    continue
                if (
                    (since is None or entry.at >= since)
                    and (until is None or entry.at <= until)
                    and all(getattr(entry, k) == v for k, v in wanted.items())
                ):
                    out.append(entry)
                    if len(out) >= limit:
                        break
            scanned += len(rows)
            top = "(" + rows[-1][0].decode()
        return out

    def count_audit(self, *, type: str | None = None) -> int:
        """The entries in the stream; with ``type``, the entries of that type ever
        written (a counter: it includes entries trimmed since)."""
        if type is None:
            return int(self._run(self._r.xlen(self._key("audit")), "the audit's length"))
        key = f"audit:count:{type}"
        return self._count(self._run(self._r.get(self._key(key)), "a count"), key)

    # -- the feed -----------------------------------------------------------------------

    def watch(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever any client publishes a change (subscribed on the
        link's loop; resubscribes after Redis comes back)."""
        if self._watching:
            return
        self._watching = True
        channel = self._key("feed")

        async def listen() -> None:
            while not self._closed:
                try:
                    async with self._r.pubsub() as pubsub:
                        await pubsub.subscribe(channel)
                        wake()  # anything published while away: read again
                        while not self._closed:
                            message = await pubsub.get_message(
                                ignore_subscribe_messages=True, timeout=1.0
                            )
                            if message is not None:
                                wake()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    logger.debug("the center's change feed on Redis was lost: %s", exc)
                    await asyncio.sleep(0.5)

        self._link.spawn(listen)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._link.close()


def _text(raw: Any) -> Any:
    """A hash field's name as text (as it is when it is not UTF-8: named as damaged)."""
    try:
        return raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return raw


def _flag_key(field: Any) -> Any:
    """A flag's (scope, target, flag) from its hash field (the field as it is when it
    is not one)."""
    text = _text(field)
    return tuple(text.split(_SEP)) if isinstance(text, str) else text


def _source_of(raw: Any) -> str | None:
    """The source a stored record names, even a damaged one (``None``: it names none)."""
    try:
        data = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None
    source = data.get("source") if isinstance(data, dict) else None
    return source if isinstance(source, str) and source else None


def _entry(ident: bytes, fields: dict[bytes, bytes]) -> AuditEntry:
    data = json.loads(fields[b"e"])
    ms, _, seq = ident.decode().partition("-")
    return AuditEntry(**data, id=int(ms) * 1000 + int(seq or 0))
