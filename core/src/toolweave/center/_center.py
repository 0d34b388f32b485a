"""The registry center: every tool of a deployment, its lifecycle overlay, the change
feed, circuit breakers and the audit."""

from __future__ import annotations

import atexit
import getpass
import hashlib
import itertools
import json
import logging
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, final

from toolweave._secrets import keep_secrets, mask_secrets
from toolweave.catalog._config import did_you_mean
from toolweave.catalog._describe import NOT_FOR_HINT, says_what_not
from toolweave.center._model import (
    MAX_DEPTH,
    SETTABLE,
    AuditEntry,
    BreakerSettings,
    CallRow,
    CenterError,
    ChangeEvent,
    Status,
    ToolRecord,
    ToolState,
    mask_record,
    nesting,
    shown_number,
)
from toolweave.center._store import (
    NO_DAMAGE,
    CenterStore,
    Damage,
    FlagKey,
    Flags,
    SQLiteCenterStore,
    _dump,
)
from toolweave.errors import ConfigError, describe_exception

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool
    from toolweave.catalog._toolset import ToolEntry, ToolSet
    from toolweave.center._attach import CenterHook
    from toolweave.runtime._session import Session

__all__ = [
    "AuditMode",
    "Center",
    "CenterHealth",
    "MCPEntryCheck",
    "set_mcp_entry_check",
    "source_of",
]

logger = logging.getLogger("toolweave")

AuditMode = Literal["on", "off", "required"]
"""``on``: every call and change is audited, never blocking a call; ``off``: changes
only; ``required``: as ``on``, and a tool that is not read-only is refused
(``unavailable``) while the audit cannot be written."""

Subscriber = Callable[[ChangeEvent], Any]

MCPEntryCheck = Callable[[str, Mapping[str, Any]], object]
"""Checks one pushed MCP server entry (its id and its ``mcpServers``-form entry) as the
hosts that follow the center will read it; raises :class:`~toolweave.ConfigError` (or
``ValueError``) naming each problem."""

_mcp_entry_check: MCPEntryCheck | None = None


def set_mcp_entry_check(check: MCPEntryCheck | None) -> MCPEntryCheck | None:
    """Make every center check a pushed MCP server entry with ``check`` before it is
    stored (``None``: only that it has a ``command`` or a ``url``); returns the check
    installed before.

    It is how the MCP layer (above this one) gives the center the validation of its
    configuration loader, the one a following pool reads the entries with: the center
    never imports that layer.
    """
    global _mcp_entry_check
    before, _mcp_entry_check = _mcp_entry_check, check
    return before


_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A name every provider accepts for a tool (and an MCP server id)."""

_PACK_ORIGIN = re.compile(r"pack (?P<name>\S+)(?: \((?P<dist>\S+)(?: \S+)?\))?$")

_ACTIONS = {
    Status.ENABLED: "enable",
    Status.DISABLED: "disable",
    Status.OFFLINE: "offline",
    Status.QUARANTINED: "quarantine",
}
"""The audit's word for setting each status."""

_WAKE_AT = 512
"""Queued audit entries that wake the center's thread before its next tick."""
_CHUNK = 1000
"""Audit entries written in one store transaction at most."""

DEFAULT_POLL = 0.25
"""Seconds between two looks at the store's version (and audit flushes)."""


def source_of(tool: ErasedTool) -> str:
    """The center source id of a tool: ``mcp:<server>`` for remote tools,
    ``pack:<distribution>`` for a pack's tools (the pack's name when it has no
    distribution), else its origin (``host``)."""
    if tool.source != "local":
        return tool.source
    m = _PACK_ORIGIN.match(tool.origin)
    if m is not None:
        return f"pack:{m['dist'] or m['name']}"
    return tool.origin


def bucket(name: str, session_id: str) -> int:
    """A session's stable bucket (0-9999) for the gray release of tool ``name``: the
    same in every process, for the session's whole life."""
    digest = hashlib.blake2b(f"{name}\0{session_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 10_000


@dataclass(frozen=True, slots=True)
class CenterHealth:
    """How the center is doing.

    Attributes:
        store: Where its store is.
        version: The version of the center's current view.
        tools: How many tools it holds.
        degraded: Why the view may be stale or changes may fail (``""``: healthy): the
            store cannot be read, the center's thread failed its last round, or rows of
            the store cannot be read (each named; the center keeps what it last read of
            them).
        readonly: The store refuses changes.
        audit: The audit mode.
        audit_pending: Entries waiting to be written.
        audit_dropped: Entries dropped because the buffer was full, or because no
            store could keep them (reported, never silently).
        audit_error: Why the last audit write failed (``""``: it did not).
        audit_trimmed: Entries the store removed to stay within its bound (Redis's
            ``audit_maxlen``).
    """

    store: str
    version: int
    tools: int
    degraded: str
    readonly: bool
    audit: str
    audit_pending: int
    audit_dropped: int
    audit_error: str
    audit_trimmed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "store": self.store,
            "version": self.version,
            "tools": self.tools,
            "degraded": self.degraded,
            "readonly": self.readonly,
            "audit": self.audit,
            "audit_pending": self.audit_pending,
            "audit_dropped": self.audit_dropped,
            "audit_error": self.audit_error,
            "audit_trimmed": self.audit_trimmed,
        }


@final
class Snapshot:
    """One version of the center, read-only, with what the call path asks derived once."""

    __slots__ = (
        "breaker_cfg",
        "damage",
        "flags",
        "groups",
        "open",
        "pins",
        "reasons",
        "records",
        "roles",
        "rollouts",
        "status",
        "version",
    )

    def __init__(
        self,
        version: int,
        records: Mapping[str, ToolRecord],
        flags: Flags,
        damage: Damage = NO_DAMAGE,
    ) -> None:
        self.version = version
        self.records = dict(records)
        self.flags = flags
        self.damage = damage
        """The rows of the store that could not be read at this version: a tool whose
        record is among them and not in ``records`` (never read) is refused."""
        self.groups: dict[str, tuple[str, ...]] = {}
        self.roles: dict[str, tuple[str, ...] | None] = {}
        self.status: dict[str, Status] = {}
        self.reasons: dict[str, str] = {}
        self.pins: dict[str, dict[str, str]] = {}
        self.rollouts: dict[str, tuple[str, float]] = {}
        self.breaker_cfg: dict[str, BreakerSettings] = {}
        self.open: dict[str, tuple[str, float]] = {}
        """Breaker key → (state, until): circuits that are open or half-open."""
        off: dict[tuple[str, str], tuple[Status, str]] = {}
        own_pins: dict[str, dict[str, str]] = {}
        for (scope, target, flag), value in flags.items():
            if scope == "tool" and flag.startswith("pin:"):
                if value.get("version") is not None:
                    own_pins.setdefault(target, {})[flag[4:]] = value["version"]
            elif flag == "status" and scope in ("group", "source"):
                off[(scope, target)] = (Status(value["status"]), value.get("reason", ""))
            elif flag == "breaker":
                try:
                    self.breaker_cfg[target] = BreakerSettings(**value)
                except (CenterError, TypeError) as exc:  # written before it was checked
                    logger.error("the breaker settings of %s are ignored: %s", target, exc)
            elif scope == "breaker" and flag == "state":
                self.open[target] = (value["state"], float(value["until"]))
        for name, record in self.records.items():
            groups = flags.get(("tool", name, "groups"))
            self.groups[name] = tuple(groups) if groups is not None else record.groups
            roles = flags.get(("tool", name, "roles"))
            self.roles[name] = (
                record.roles
                if roles is None
                else (None if roles["roles"] is None else tuple(roles["roles"]))
            )
            status, reason = Status.ENABLED, ""
            own = flags.get(("tool", name, "status"))
            if own is not None:
                status, reason = Status(own["status"]), own.get("reason", "")
            for scope, target in [("source", record.source)] + [
                ("group", g) for g in self.groups[name]
            ]:
                found = off.get((scope, target))
                if (
                    found is not None
                    and found[0] is not Status.ENABLED
                    and (status is Status.ENABLED or found[0] is Status.DISABLED)
                ):
                    status, reason = found
                    reason = reason or f"its {scope} {target} is {found[0].value}"
            if status is Status.ENABLED and record.source.startswith("mcp:"):
                approved = flags.get(("tool", name, "approved"))
                if approved is None:
                    status, reason = Status.QUARANTINED, _AWAITING
                elif approved["hash"] != definition_hash(record):
                    status, reason = Status.QUARANTINED, _CHANGED
            self.status[name] = status
            if reason:
                self.reasons[name] = reason
            pins = own_pins.get(name)
            if pins:
                self.pins[name] = pins
            rollout = flags.get(("tool", name, "rollout"))
            if rollout is not None:
                self.rollouts[name] = (rollout["version"], float(rollout["percent"]))
        self._share_between_names()

    def _share_between_names(self) -> None:
        """Names of one tool (the same source and fqid: a tool some session lists under
        another name) share their switches: the tool is off under every name when it is
        off under one, and only roles every name's whitelist admits may use it."""
        names_of: dict[tuple[str, str], list[str]] = {}
        for name, record in self.records.items():
            if record.fqid:
                names_of.setdefault((record.source, record.fqid), []).append(name)
        for names in names_of.values():
            if len(names) < 2:
                continue
            names.sort()
            off = [n for n in names if self.status[n] is not Status.ENABLED]
            first = next((n for n in off if self.status[n] is Status.DISABLED), None)
            first = first or (off[0] if off else None)
            whitelists = [set(w) for n in names if (w := self.roles[n]) is not None]
            allowed = tuple(sorted(set.intersection(*whitelists))) if whitelists else None
            for name in names:
                if first is not None and self.status[name] is Status.ENABLED:
                    self.status[name] = self.status[first]
                    self.reasons[name] = self.reasons.get(first) or f"the same tool as {first}"
                self.roles[name] = allowed

    def version_for(self, name: str, session_id: str, cohort: str | None) -> str | None:
        """The behaviour version a session runs for ``name``: a pin for its cohort, else
        the gray release if its bucket is in, else a pin for everyone, else ``None``
        (the version its tool set was configured with)."""
        pins = self.pins.get(name)
        if pins is not None and cohort is not None and cohort in pins:
            return pins[cohort]
        rollout = self.rollouts.get(name)
        if rollout is not None and bucket(name, session_id) < rollout[1] * 100:
            return rollout[0]
        if pins is not None:
            return pins.get("*")
        return None


class _Breaker:
    """One circuit's recent failures in this process."""

    __slots__ = ("failures", "trial")

    def __init__(self) -> None:
        self.failures: deque[float] = deque()
        self.trial = False
        """This process let a trial call through and waits for its outcome."""


_centers: weakref.WeakSet[Center] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for center in list(_centers):
        center.close()


@final
class Center:
    """The registry center: one registry of every tool a deployment knows, whatever
    its source, and the lifecycle overlay running sessions consult.

    Open one with :meth:`open`; :meth:`attach` a session to it. Operations (enable,
    disable, pin, rollout, roles, breakers) are written to the store at once, audited,
    and reach every attached session, in this process and in others sharing the
    store, within a second: a background thread polls the store's version every
    ``poll_interval`` seconds and writes the buffered audit.

    Args:
        store: Where the center keeps everything.
        poll_interval: Seconds between looks at the store (and audit flushes).
        audit: ``on`` (default), ``off`` (changes only) or ``required`` (see
            :data:`AuditMode`).
        audit_buffer: Call entries kept in memory while the store cannot be written;
            beyond it the oldest are dropped and counted in :meth:`health`.
        breaker: Breaker settings for tools and MCP servers that have none of their own.
        approval: How a remote (MCP) tool's definition is first approved: ``auto`` on
            first sight, or ``manual`` (quarantined until :meth:`approve`). Either way,
            a definition that changes later is quarantined until an operator approves
            it again.

    Example:
        ```python
        center = Center.open("sqlite:///var/lib/agents/center.db")
        session = toolset.session()
        center.attach(session, role="common_user")
        center.disable("bash", reason="incident 42")
        ```
    """

    def __init__(
        self,
        store: CenterStore,
        *,
        poll_interval: float = DEFAULT_POLL,
        audit: AuditMode = "on",
        audit_buffer: int = 100_000,
        breaker: BreakerSettings | None = None,
        approval: Literal["auto", "manual"] = "auto",
    ) -> None:
        if audit not in ("on", "off", "required"):
            raise CenterError(f"audit is 'on', 'off' or 'required', not {audit!r}")
        if approval not in ("auto", "manual"):
            raise CenterError(f"approval is 'auto' or 'manual', not {approval!r}")
        self.approval = approval
        self.store = store
        self.poll_interval = poll_interval
        self.audit_mode: AuditMode = audit
        self.audit_buffer = audit_buffer
        self.breaker = breaker if breaker is not None else BreakerSettings()
        self._reload_lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._pending: deque[CallRow] = deque()
        self._entries: deque[AuditEntry] = deque()
        """Queued audit entries of other types than calls (see :meth:`record`)."""
        self._flush_lock = threading.Lock()
        self._audit_dropped = 0
        self._audit_error = ""
        self._degraded = ""
        self._breakers: dict[str, _Breaker] = {}
        self._registered: weakref.WeakSet[ToolSet] = weakref.WeakSet()
        self._wake = threading.Event()
        self._writes: deque[tuple[str, Any, str]] = deque()
        """Breaker switches to record in the store: (key, state or ``None``, why). They
        hold in this process's view until written (see :meth:`_overlay`)."""
        self._write_lock = threading.Lock()
        """Held while a switch is written, so a reset never races a write in flight."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        (version, records, flags), damage = store.load_checked()
        self.snapshot = self._view(version, records, flags, damage, None)
        """The center's current view (replaced, never changed, on every new version)."""
        _centers.add(self)

    @classmethod
    def open(
        cls,
        url: str | Path,
        *,
        create: bool = True,
        busy_timeout: float = 5.0,
        **options: Any,
    ) -> Center:
        """Open the center stored at ``url``: an SQLite path, ``sqlite:///<path>``
        (created when missing), or ``redis://[user:password@]host:port/db`` (the
        ``redis`` extra; ``?prefix=name`` sets the keys' prefix, ``&audit_maxlen=N``
        the audit stream's bound); ``options`` are :class:`Center`'s.

        Args:
            url: Where the store is.
            create: Create an SQLite store that does not exist yet (``False``: a missing
                file is an error, for tools that only read).
            busy_timeout: Seconds an SQLite write waits for another process's
                transaction before it fails.

        Raises:
            CenterError: The URL names a store this installation has no support for, or
                the store cannot be opened (the message says why).
        """
        text = str(url)
        if isinstance(url, Path) or "://" not in text:
            return cls._over(_sqlite(Path(text), create, busy_timeout), options)
        scheme, _, rest = text.partition("://")
        if scheme == "sqlite":
            path = rest[1:] if rest.startswith("/") and rest[1:2] == "/" else rest
            if not path:
                raise CenterError(f"{text!r} names no file: use sqlite:///path/to/center.db")
            return cls._over(_sqlite(Path(path), create, busy_timeout), options)
        if scheme in ("redis", "rediss", "unix"):
            from toolweave.center._redis import RedisCenterStore

            base, query = _split_query(text)
            store = RedisCenterStore(
                base,
                prefix=query.pop("prefix", "toolweave:center"),
                audit_maxlen=int(query.pop("audit_maxlen", 1_000_000)),
            )
            return cls._over(store, options)
        raise CenterError(
            f"no center store for {scheme}:// URLs in this installation "
            "(use an SQLite path or sqlite:///path)"
        )

    @classmethod
    def _over(cls, store: CenterStore, options: dict[str, Any]) -> Center:
        """A center over the ``store`` :meth:`open` made; the store is closed again when
        the center cannot be made (its first load failed: a damaged store, say)."""
        try:
            return cls(store, **options)
        except BaseException:
            store.close()
            raise

    def __repr__(self) -> str:
        return f"<Center {self.store.describe()} version={self.snapshot.version}>"

    def __enter__(self) -> Center:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        """The version of the current view (grows with every change)."""
        return self.snapshot.version

    # -- background: polling and audit --------------------------------------------------

    def start(self) -> None:
        """Start the background thread that follows the store and writes the audit
        (:meth:`attach` starts it; idempotent)."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._run, name=f"toolweave-center {self.store.describe()}", daemon=True
            )
            self._thread.start()
            self.store.watch(self._wake.set)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.poll_interval)
            self._wake.clear()
            self._round()

    def _round(self) -> None:
        """One round of the center's thread: record the breaker switches, write the
        audit, follow the store. Whatever one step raises is logged and reported in
        :meth:`health` (the last view stays), and the next round tries again: the thread
        never dies, so the center keeps following operators' changes."""
        failed: tuple[str, Exception] | None = None
        for what, step in (
            ("recording breaker switches", self._write_queued),
            ("writing the audit", self.flush_audit),
            ("following the store", self.refresh),
        ):
            try:
                step()
            except Exception as exc:
                failed = failed or (what, exc)
        if failed is not None:
            what, error = failed
            self._set_degraded(
                f"the center's thread failed {what} in its store {self.store.describe()} "
                f"({describe_exception(error)}); the last view is kept, and it tries again",
                error,
            )

    def refresh(self) -> bool:
        """Look at the store now; take its new version if there is one. ``True`` when
        the view changed. A store that cannot be read leaves the last view in place and
        marks the center degraded (see :meth:`health`)."""
        try:
            current = self.store.version()
        except CenterError as exc:
            self._set_degraded(str(exc))
            return False
        except Exception as exc:  # a store that failed in a way it should not have
            self._set_degraded(
                f"the center could not read the version of its store {self.store.describe()} "
                f"({describe_exception(exc)}); the last view is kept",
                exc,
            )
            return False
        if current == self.snapshot.version:
            self._set_degraded("")
            return False
        return self._reload()

    def _reload(self) -> bool:
        with self._reload_lock:
            before = self.snapshot
            try:
                (version, records, flags), damage = self.store.load_checked()
                if version == before.version:
                    self._set_degraded("")
                    return False
                events = self.store.changes_since(before.version) if self._subscribers else []
                snapshot = self._view(version, records, flags, damage, before)
            except CenterError as exc:
                self._set_degraded(str(exc))
                return False
            except Exception as exc:  # a store that failed in a way it should not have
                self._set_degraded(
                    f"the center could not read its store {self.store.describe()} "
                    f"({describe_exception(exc)}); the last view is kept",
                    exc,
                )
                return False
            self._set_degraded("")
            self.snapshot = snapshot
        if self._subscribers:
            versions = [event.version for event in events]
            first = before.version + 1
            if not versions or versions != list(range(first, first + len(versions))):
                # Events were pruned, or some cannot be read: read the state again.
                events.insert(0, ChangeEvent(version, "resync", "*", {}, time.time()))
            for event in events:
                self._publish(event)
        return True

    def _view(
        self,
        version: int,
        records: dict[str, ToolRecord],
        flags: Flags,
        damage: Damage,
        before: Snapshot | None,
    ) -> Snapshot:
        """The snapshot of what the store holds at ``version``. Fail-closed for what it
        could not read: a damaged record or flag keeps the value of the view ``before``
        (so a tool that was disabled stays disabled); one never read counts as a
        switch-off (see :func:`_unread_flag`), and a tool whose record was never read is
        refused by the sessions' hooks."""
        if damage:
            for name in damage.records:
                last = None if before is None else before.records.get(name)
                if last is not None:
                    records[name] = last
            for key in damage.flags:
                if before is not None and key in before.flags:
                    flags[key] = before.flags[key]
                elif (value := _unread_flag(key)) is not None:
                    flags[key] = value
                elif key[0] == "tool" and key[2] == "groups":
                    # Its groups are unknown, so is whether a disabled group holds it:
                    # the tool is off unless its own status says otherwise.
                    status = ("tool", key[1], "status")
                    if status not in flags:
                        flags[status] = {"status": Status.DISABLED.value, "reason": _UNREAD}
        return Snapshot(version, records, self._overlay(flags), damage)

    def _set_degraded(self, why: str, exc: BaseException | None = None) -> None:
        """Report the center degraded for ``why`` (``""``: recovered); ``exc``: an
        unexpected exception, logged with its traceback."""
        if why and why != self._degraded:
            logger.error("the registry center is degraded (last view kept): %s", why, exc_info=exc)
        elif not why and self._degraded:
            logger.warning("the registry center recovered: %s", self.store.describe())
        self._degraded = why

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every :class:`ChangeEvent` from now on (from the
        center's thread, or the thread that made the change). A ``resync`` event means
        events were missed: read the state again. Returns the unsubscribe function."""
        self._subscribers.append(callback)
        self.start()

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def changes_since(self, version: int) -> list[ChangeEvent]:
        """The change events after ``version``, oldest first, as subscribers get them
        (pushed MCP servers' secrets masked); the store keeps the last ones only, so
        a reader that fell further behind reads the state again."""
        return [_masked_event(event) for event in self.store.changes_since(version)]

    def _publish(self, event: ChangeEvent) -> None:
        event = _masked_event(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                logger.exception("a change-feed subscriber of the center raised")

    def record_call(self, row: CallRow) -> None:
        """Queue a call's audit entry (written by the center's thread, never blocking)."""
        if self.audit_mode == "off":
            return
        pending = self._pending
        pending.append(row)
        size = len(pending)
        if size == _WAKE_AT:
            self._wake.set()
        elif size > self.audit_buffer:
            try:
                pending.popleft()
            except IndexError:
                return
            self._audit_dropped += 1
            if self._audit_dropped == 1 or self._audit_dropped % 1000 == 0:
                logger.error(
                    "the audit buffer of the center is full: %d entries dropped so far",
                    self._audit_dropped,
                )

    def record(self, entry: AuditEntry) -> None:
        """Queue an audit entry of any type (``selection`` entries of the injector, a
        host's own) to be written with the call audit; never blocks. Changes made
        through the center's operations are audited by them already.

        An entry whose ``before`` or ``after`` no store can keep (a NaN or an infinity,
        keys of mixed types) is not queued: it is logged as an error and counted with
        the dropped entries, so it never holds up the entries after it."""
        try:
            for value in (entry.before, entry.after):
                if value is not None:
                    _dump(value)
        except CenterError as exc:
            self._audit_dropped += 1
            logger.error("audit entry %r of %s not recorded: %s", entry.type, entry.tool, exc)
            return
        entries = self._entries
        entries.append(entry)
        if len(entries) > self.audit_buffer:
            entries.popleft()
            self._audit_dropped += 1
        self._wake.set()

    def flush_audit(self) -> int:
        """Write the queued audit entries now; returns how many were written. Entries
        that cannot be written stay queued (see :meth:`health`)."""
        written = 0
        with self._flush_lock:
            queues: list[tuple[deque[Any], Callable[[list[Any]], None]]] = [
                (self._pending, self.store.append_calls),
                (self._entries, self.store.append_audit),
            ]
            for pending, write in queues:
                while pending:
                    # Chunks, so one write never holds the store (or the GIL) for long.
                    batch = list(itertools.islice(pending, _CHUNK))
                    try:
                        write(batch)
                    except Exception as exc:
                        expected = isinstance(exc, CenterError)
                        why = str(exc) if expected else describe_exception(exc)
                        if why != self._audit_error:
                            logger.error(
                                "writing the audit failed (kept in memory): %s",
                                why,
                                exc_info=not expected,
                            )
                        self._audit_error = why
                        return written
                    for _ in range(len(batch)):
                        pending.popleft()
                    written += len(batch)
                    self._audit_error = ""
            return written

    def flush(self) -> None:
        """Write what the center's thread would write on its next tick: breaker switches
        and the queued call audit (a reader in another process then sees them)."""
        self._write_queued()
        self.flush_audit()

    @property
    def audit_ok(self) -> bool:
        """The last audit write succeeded."""
        return not self._audit_error

    def health(self) -> CenterHealth:
        """How the center is doing (store, version, degradation, audit backlog)."""
        return CenterHealth(
            self.store.describe(),
            self.snapshot.version,
            len(self.snapshot.records),
            self._degradation(),
            self.store.readonly,
            self.audit_mode,
            len(self._pending) + len(self._entries),
            self._audit_dropped,
            self._audit_error,
            self._trimmed(),
        )

    def _degradation(self) -> str:
        """Why the center is degraded: the store, the thread, and the rows of the
        current view that could not be read."""
        damage = self.snapshot.damage
        if not damage:
            return self._degraded
        rows = damage.rows()
        shown = "; ".join(rows[:5]) + (f"; and {len(rows) - 5} more" if len(rows) > 5 else "")
        unread = (
            f"the center store {self.store.describe()} holds rows it cannot read (it keeps "
            "what it last read of each, refuses a tool whose record it never read and takes "
            "a status it never read as disabled; registering the tool or setting the flag "
            f"again repairs a row): {shown}"
        )
        return f"{self._degraded}. {unread}" if self._degraded else unread

    def _trimmed(self) -> int:
        try:
            return self.store.audit_trimmed()
        except Exception as exc:
            logger.debug("the center could not count the trimmed audit: %s", exc)
            return 0

    def close(self) -> None:
        """Stop the thread, write the queued audit, close the store (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.flush()
        if self._pending or self._entries:
            logger.error(
                "the center closed with %d audit entries it could not write",
                len(self._pending) + len(self._entries),
            )
        self.store.close()
        _centers.discard(self)

    # -- registration -------------------------------------------------------------------

    def register(self, records: Iterable[ToolRecord], *, actor: str | None = None) -> None:
        """Add tools to the registry, or update their metadata.

        Raises:
            CenterError: A name is held by another source (the message names both), or
                the store refuses the change.
        """
        records = list(records)
        events = self.store.register(records, actor=actor or _user())
        if events:
            self._reload()
            added = {e.target for e in events if e.kind == "added"}
            for record in records:
                if record.name in added and not says_what_not(record.description):
                    logger.warning("tool %s (%s): %s", record.name, record.source, NOT_FOR_HINT)
        if self.approval == "auto":
            flags, unread = self.snapshot.flags, self.snapshot.damage.flags
            for record in records:
                key = ("tool", record.name, "approved")
                # An approval that cannot be read is never replaced unasked: the tool
                # stays quarantined until an operator approves it.
                if record.source.startswith("mcp:") and key not in flags and key not in unread:
                    self.approve(record.name, actor="center", reason="first sight")

    def register_toolset(
        self, toolset: ToolSet, *, groups: Mapping[str, Iterable[str]] | None = None
    ) -> None:
        """Register every entry of ``toolset`` (once per set and center; :meth:`attach`
        does it). ``groups`` gives tools their groups by client name.

        Raises:
            CenterError: As :meth:`register`.
        """
        if toolset in self._registered:
            return
        self.register(
            [record_of(e, toolset, (groups or {}).get(e.name, ())) for e in toolset.entries]
        )
        self._registered.add(toolset)

    def push_tool(
        self,
        name: str,
        *,
        description: str,
        input_schema: Mapping[str, Any],
        endpoint: Mapping[str, Any],
        groups: Iterable[str] = (),
        roles: Iterable[str] | None = None,
        read_only: bool = False,
        actor: str | None = None,
    ) -> None:
        """Register a tool defined by its name, description and JSON Schema whose calls
        are forwarded to an HTTP endpoint (source ``api``); every attached session
        gains it through the change feed. Pushing the same name again updates it.

        ``endpoint`` is ``{"url": ..., "headers": {...}, "timeout": s, "max_bytes": n,
        "allow_private": bool, "allow_loopback": bool}``: the arguments are POSTed as
        JSON, the JSON response is the output; private, loopback and link-local
        targets are refused unless allowed, checked after DNS resolution and on every
        redirect.

        Raises:
            CenterError: The name is held by another source, the endpoint or schema is
                malformed, or the store refuses the change.
        """
        from toolweave.center._http_tool import validate_endpoint

        if not isinstance(input_schema, Mapping) or input_schema.get("type", "object") != "object":
            raise CenterError(f"the schema of {name!r} must be a JSON Schema object")
        if nesting(input_schema) > MAX_DEPTH or nesting(endpoint) > MAX_DEPTH:
            raise CenterError(f"the schema or endpoint of {name!r} nests deeper than {MAX_DEPTH}")
        if not _NAME.fullmatch(name):
            raise CenterError(
                f"tool name {name!r} must be 1-64 letters, digits, '_' or '-' (what every "
                "provider accepts)"
            )
        if isinstance(endpoint, Mapping):
            # A header value or URL userinfo sent back as a listing shows it ('***')
            # keeps the stored one.
            self.refresh()
            stored = self.snapshot.records.get(name)
            before = stored.endpoint if stored is not None and stored.source == "api" else None
            try:
                endpoint = keep_secrets(endpoint, before)
            except ValueError as exc:
                raise CenterError(f"the endpoint of {name!r}: {exc}") from None
        record = ToolRecord(
            name=name,
            source="api",
            fqid=f"api:{name}",
            kind="other",
            description=description,
            input_schema=dict(input_schema),
            read_only=read_only,
            groups=tuple(groups),
            roles=None if roles is None else tuple(sorted(set(roles))),
            endpoint=validate_endpoint(endpoint),
        )
        self.register([record], actor=actor)

    def approve(self, name: str, *, actor: str | None = None, reason: str = "") -> bool:
        """Approve the current definition of the remote tool ``name`` (its description,
        schema and read-only flag as its server sends them now): a quarantined tool whose definition
        changed is listed and callable again. The audit keeps the approved definition
        and a diff from the one approved before.

        Raises:
            CenterError: There is no such tool, or the store refuses the change.
        """
        record = self._record(name)
        digest = definition_hash(record)

        def update(old: Any) -> Any:
            if old is not None and old["hash"] == digest:
                return old
            return {
                "hash": digest,
                "description": record.description,
                "input_schema": dict(record.input_schema),
                "read_only": record.read_only,
                "diff": _definition_diff(old, record),
            }

        return self._change(
            "tool", name, "approved", update, actor=actor, reason=reason, action="approve"
        )

    def push_mcp_server(
        self,
        server_id: str,
        config: Mapping[str, Any],
        *,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Register an MCP server entry (the ``mcpServers`` form: ``{"command", "args",
        "env"}`` or ``{"url", "headers"}``); hosts that follow the center
        (:meth:`MCPPool.follow <toolweave.mcp.MCPPool.follow>`) connect to it, and its
        tools join their sessions under the source ``mcp:<server_id>``.

        An ``env`` or ``headers`` value, or a URL userinfo, given as ``***`` (as
        :meth:`mcp_servers` shows them) keeps the value stored for it.

        Raises:
            CenterError: The id or the entry is malformed (no ``command`` or ``url``;
                with the check :func:`set_mcp_entry_check` installed, anything it
                refuses), a ``***`` stands for no stored value, or the store refuses the
                change.
        """
        if not _NAME.fullmatch(server_id):
            raise CenterError(f"server id {server_id!r} must be 1-64 letters, digits, '_' or '-'")
        if not isinstance(config, Mapping) or not ("command" in config or "url" in config):
            raise CenterError(
                f"the entry of MCP server {server_id!r} needs a 'command' (stdio) or a 'url'"
            )
        given = json.loads(json.dumps(dict(config)))
        check = _mcp_entry_check

        def update(old: Any) -> Any:
            try:
                value = keep_secrets(given, old)
            except ValueError as exc:
                raise CenterError(f"the entry of MCP server {server_id!r}: {exc}") from None
            if check is not None:
                _check_entry(check, server_id, value)
            return value

        return self._change(
            "mcp", server_id, "config", update, actor=actor, reason=reason,
            action="push_mcp", shown=_masked_value,
        )  # fmt: skip

    def remove_mcp_server(
        self, server_id: str, *, actor: str | None = None, reason: str = ""
    ) -> bool:
        """Remove a pushed MCP server entry (hosts that follow the center disconnect)."""
        return self._change(
            "mcp", server_id, "config", lambda _: None, actor=actor, reason=reason,
            action="remove_mcp", shown=_masked_value,
        )  # fmt: skip

    def mcp_servers(self, *, reveal: bool = False) -> dict[str, dict[str, Any]]:
        """The pushed MCP server entries by id, their secrets (``env`` and ``headers``
        values, the userinfo of ``url``) shown as ``***``.

        Args:
            reveal: Give the real values (what a host needs to connect; never for
                listings).
        """
        return {
            target: dict(value) if reveal else mask_secrets(value)
            for (scope, target, flag), value in self.snapshot.flags.items()
            if scope == "mcp" and flag == "config"
        }

    def unregister(self, name: str, *, actor: str | None = None, reason: str = "") -> None:
        """Remove a tool from the registry (its audit trail stays).

        Raises:
            CenterError: There is no such tool, or the store refuses the change.
        """
        self.store.unregister(name, actor=actor or _user(), reason=reason)
        self._reload()

    def attach(
        self,
        session: Session,
        *,
        role: str | None = None,
        cohort: str | None = None,
        groups: Mapping[str, Iterable[str]] | None = None,
    ) -> CenterHook:
        """Put ``session`` under the center: its tools are registered, its listing
        leaves out what the center disables or its role may not use, and its calls
        pass the center's hook first (status, role, breaker, version, audit).

        Args:
            session: The session.
            role: The session's role (the host's word, never the model's). Tools with a
                role whitelist are out of reach of a session without a role.
            cohort: The group of sessions it belongs to, for cohort pins.
            groups: Groups of the set's tools by client name (at first registration).

        Returns:
            The hook; ``session.remove_hook(hook)`` and ``session.set_overlay(None)``
            detach the session again.

        Raises:
            CenterError: Registering the session's tools failed (a name held by another
                source, a store that refuses changes other than read-only).
        """
        from toolweave.center._attach import CenterHook

        if not self.store.readonly:
            self.register_toolset(session.toolset, groups=groups)
        hook = CenterHook(self, session, role=role, cohort=cohort)
        session.add_hook(hook, first=True)
        session.set_overlay(hook)
        self.start()
        return hook

    def _register_external(self, entry: ToolEntry) -> None:
        """Register a tool a session gained at run time (an MCP server's); failures are
        logged, and the tool then runs unregistered (no whitelist, enabled)."""
        try:
            self.register([record_of(entry, None, ())])
        except CenterError as exc:
            logger.error("registering %s with the center failed: %s", entry.name, exc)

    # -- reading ----------------------------------------------------------------------

    def tools(self) -> list[ToolState]:
        """Every tool with its current state, by name."""
        snap = self.snapshot
        return [self._state(snap, name) for name in sorted(snap.records)]

    def tool(self, name: str) -> ToolState:
        """One tool's state (of a tool whose record the center never could read: as the
        sessions treat it, refused, with a record that holds only its name).

        Raises:
            CenterError: There is no such tool.
        """
        snap = self.snapshot
        why = snap.damage.records.get(name)
        if why is not None and name not in snap.records:
            return _unread_state(snap, name, why)
        self._record(name)
        return self._state(snap, name)

    def _state(self, snap: Snapshot, name: str) -> ToolState:
        record = snap.records[name]
        status = snap.status[name]
        breaker = "closed"
        for key in (name, record.source):
            found = snap.open.get(key)
            if found is not None:
                breaker = _circuit(found)
                if status is Status.ENABLED:
                    status = Status.CIRCUIT_OPEN
        return ToolState(
            record,
            status,
            snap.roles[name],
            snap.groups[name],
            snap.pins.get(name, {}),
            snap.rollouts.get(name),
            breaker,
            snap.reasons.get(name, ""),
        )

    def breakers(self) -> dict[str, dict[str, Any]]:
        """Every breaker that is not closed, or has settings of its own: key →
        ``{"state", "until", "settings"}``."""
        snap = self.snapshot
        out: dict[str, dict[str, Any]] = {}
        for key in sorted(set(snap.open) | set(snap.breaker_cfg)):
            found = snap.open.get(key)
            cfg = snap.breaker_cfg.get(key)
            out[key] = {
                "state": "closed" if found is None else _circuit(found),
                "until": None if found is None else found[1],
                "settings": None if cfg is None else _settings_dict(cfg),
            }
        return out

    def audit(
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
        """Audit entries (newest first) matching every filter given; queued call
        entries are written first. Secrets in changes (a pushed MCP server's entry, a
        pushed tool's endpoint) are shown as ``***``."""
        self.flush()
        entries = self.store.query_audit(
            type=type,
            session=session,
            tool=tool,
            outcome=outcome,
            since=since,
            until=until,
            limit=limit,
        )
        return [_masked_entry(e) if e.outcome in _SECRET_ACTIONS else e for e in entries]

    # -- lifecycle operations -------------------------------------------------------------

    def _change(
        self,
        scope: str,
        target: str,
        flag: str,
        update: Callable[[Any], Any],
        *,
        actor: str | None,
        reason: str,
        action: str,
        shown: Callable[[Any], Any] | None = None,
    ) -> bool:
        event = self.store.update_flag(
            scope, target, flag, update, actor=actor or _user(), reason=reason, action=action,
            shown=shown,
        )  # fmt: skip
        if event is not None:
            self._reload()
        return event is not None

    def _target(self, name: str | None, group: str | None, source: str | None) -> tuple[str, str]:
        given = [(s, t) for s, t in (("tool", name), ("group", group), ("source", source)) if t]
        if len(given) != 1:
            raise CenterError("name exactly one of a tool, a group (group=) or a source (source=)")
        scope, target = given[0]
        if scope == "tool":
            if target not in self.snapshot.damage.records:  # one that cannot be read may
                self._record(target)  # be switched still (the brake works on it)
        elif target not in self._known(scope):
            self.refresh()  # another process may have registered it a moment ago
            known = self._known(scope)
            if target not in known:
                raise CenterError(
                    f"the center holds no {scope} named {target!r}{did_you_mean(target, known)}",
                    problem="not_found",
                )
        return scope, target

    def _known(self, scope: str) -> set[str]:
        """The groups (``scope="group"``) or sources the center knows: those of its
        tools, those with a flag (a status set before), and pushed MCP servers."""
        snap = self.snapshot
        known = {target for (kind, target, _) in snap.flags if kind == scope}
        if scope == "group":
            known.update(g for groups in snap.groups.values() for g in groups)
        else:
            known.update(record.source for record in snap.records.values())
            known.update(f"mcp:{t}" for (kind, t, flag) in snap.flags if kind == "mcp")
        return known

    def set_status(
        self,
        name: str | None = None,
        status: Status | str = Status.ENABLED,
        *,
        group: str | None = None,
        source: str | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Set the status of a tool, every tool of a group, or every tool of a source
        (``enabled``, ``disabled``, ``offline``, ``quarantined``). Returns ``False``
        when it already was so.

        Raises:
            CenterError: An unknown tool, group, source or status (a group or source is
                known when a tool of the center has it, or a status was set on it
                before), or the store refuses the change.
        """
        try:
            wanted = Status(status)
        except ValueError:
            wanted = None
        if wanted not in SETTABLE:
            raise CenterError(
                f"status is one of {', '.join(sorted(s.value for s in SETTABLE))}, not {status!r}"
            )
        assert wanted is not None
        scope, target = self._target(name, group, source)

        def update(old: Any) -> Any:
            if wanted is Status.ENABLED:
                return None
            if not reason and old is not None and old.get("status") == wanted.value:
                return old  # the same status again without a reason keeps the first one
            return {"status": wanted.value, "reason": reason}

        return self._change(
            scope, target, "status", update, actor=actor, reason=reason,
            action=_ACTIONS[wanted],
        )  # fmt: skip

    def enable(
        self,
        name: str | None = None,
        *,
        group: str | None = None,
        source: str | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Enable a tool, a group or a source again (see :meth:`set_status`)."""
        return self.set_status(
            name, Status.ENABLED, group=group, source=source, actor=actor, reason=reason
        )

    def disable(
        self,
        name: str | None = None,
        *,
        group: str | None = None,
        source: str | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """The emergency brake: the tool (or every tool of the group or source) leaves
        every attached session's listing and its calls answer ``unavailable`` with
        ``reason``, within a second everywhere."""
        return self.set_status(
            name, Status.DISABLED, group=group, source=source, actor=actor, reason=reason
        )

    def _record(self, name: str) -> ToolRecord:
        """The record of ``name``.

        Raises:
            CenterError: The center holds no such tool (the message suggests close names).
        """
        record = self.snapshot.records.get(name)
        if record is None:
            raise CenterError(_unknown(name, self.snapshot), problem="not_found")
        return record

    def _check_version(self, name: str, version: str) -> None:
        record = self._record(name)
        if not record.versions:
            raise CenterError(
                f"{name} has no version {version!r}; known: none (the center knows no "
                "versions of it: it runs the one it was configured with)"
            )
        if version not in record.versions:
            raise CenterError(
                f"{name} has no version {version!r}; known: {', '.join(record.versions)}"
            )

    def pin(
        self,
        name: str,
        version: str,
        *,
        cohort: str | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Run behaviour ``version`` of ``name`` in every session, or in the sessions of
        ``cohort``; :meth:`rollback` returns to the pin before.

        Raises:
            CenterError: An unknown tool or version (a tool the center knows no versions
                of has none to pin), or the store refuses the change.
        """
        self._check_version(name, version)

        def update(old: Any) -> Any:
            old = old or {"version": None, "history": []}
            if old["version"] == version:
                return old
            return {"version": version, "history": [*old["history"], old["version"]][-20:]}

        return self._change(
            "tool", name, f"pin:{cohort or '*'}", update, actor=actor, reason=reason, action="pin"
        )

    def rollback(
        self, name: str, *, cohort: str | None = None, actor: str | None = None, reason: str = ""
    ) -> str | None:
        """Return ``name`` (for everyone, or ``cohort``) to the pin before the current
        one; returns the version pinned now (``None``: no pin, the configured version).

        Raises:
            CenterError: There is nothing to roll back to.
        """
        self._record(name)
        result: list[str | None] = []

        def update(old: Any) -> Any:
            if not old or (not old["history"] and old["version"] is None):
                raise CenterError(f"{name} has no pin to roll back")
            history = list(old["history"])
            previous = history.pop() if history else None
            result.append(previous)
            return None if previous is None and not history else {
                "version": previous, "history": history
            }  # fmt: skip

        self._change(
            "tool", name, f"pin:{cohort or '*'}", update, actor=actor, reason=reason,
            action="rollback",
        )  # fmt: skip
        return result[0] if result else None

    def rollout(
        self,
        name: str,
        version: str,
        percent: float,
        *,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Gray release: ``version`` of ``name`` for ``percent`` % of sessions, chosen by
        a stable hash of the session id (the same choice in every process, for a
        session's whole life). Call again to widen or narrow; widening keeps every
        session already in. ``percent=0`` or :meth:`abort_rollout` ends it.

        Raises:
            CenterError: An unknown tool or version, a percentage outside 0-100, or the
                store refuses the change.
        """
        self._check_version(name, version)
        if not 0 <= percent <= 100:
            raise CenterError(f"a rollout percentage is within 0-100, not {percent}")
        value = None if percent == 0 else {"version": version, "percent": float(percent)}
        return self._change(
            "tool", name, "rollout", lambda _: value, actor=actor, reason=reason, action="rollout"
        )

    def abort_rollout(self, name: str, *, actor: str | None = None, reason: str = "") -> bool:
        """End the gray release of ``name``: every session runs its pinned or configured
        version again."""
        self._record(name)
        return self._change(
            "tool", name, "rollout", lambda _: None, actor=actor, reason=reason, action="abort"
        )

    def set_roles(
        self,
        name: str,
        roles: Iterable[str] | None,
        *,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Let only sessions with one of ``roles`` list and call ``name`` (``None``:
        every role). Others get ``permission_denied``, whatever the model sends."""
        self._record(name)
        value = {"roles": None if roles is None else sorted(set(roles))}
        return self._change(
            "tool", name, "roles", lambda _: value, actor=actor, reason=reason, action="roles"
        )

    def set_groups(
        self, name: str, groups: Iterable[str], *, actor: str | None = None, reason: str = ""
    ) -> bool:
        """Put ``name`` in exactly ``groups`` (enable/disable act on groups)."""
        self._record(name)
        value = sorted(set(groups))
        return self._change(
            "tool", name, "groups", lambda _: value, actor=actor, reason=reason, action="groups"
        )

    def configure_breaker(
        self,
        target: str,
        settings: BreakerSettings | None,
        *,
        actor: str | None = None,
        reason: str = "",
    ) -> bool:
        """Give the breaker of a tool (its name) or an MCP server (``mcp:<server>``) its
        own settings (``None``: the center's defaults)."""
        scope = "source" if ":" in target else "tool"
        if scope == "tool":
            self._record(target)
        value = None if settings is None else _settings_dict(settings)
        return self._change(
            scope, target, "breaker", lambda _: value, actor=actor, reason=reason,
            action="breaker",
        )  # fmt: skip

    def reset_breaker(self, target: str, *, actor: str | None = None, reason: str = "") -> bool:
        """Close the breaker of ``target`` now."""
        self._breakers.pop(target, None)
        self._write_queued()  # the reset follows, in the store too, every switch made
        with self._write_lock:
            return self._change(
                "breaker", target, "state", lambda _: None, actor=actor, reason=reason,
                action="reset",
            )  # fmt: skip

    # -- breakers (called by the hook) ------------------------------------------------------

    def settings_for(self, key: str) -> BreakerSettings:
        """The breaker settings of a tool name or source id."""
        return self.snapshot.breaker_cfg.get(key) or self.breaker

    def claim_trial(self, key: str) -> bool:
        """Whether this call may be the one trial of the half-open circuit ``key`` in
        this process."""
        breaker = self._breakers.get(key)
        if breaker is None:
            breaker = self._breakers[key] = _Breaker()
        if breaker.trial:
            return False
        breaker.trial = True
        return True

    def outcome(self, key: str, failed: bool | None, trial: bool) -> None:
        """Count a call's outcome for the circuit ``key`` (a tool name or an MCP source);
        ``failed=None``: the tool did not run (a trial call gives its turn back)."""
        breaker = self._breakers.get(key)
        if trial:
            if breaker is not None:
                breaker.trial = False
            if failed is None:
                return
            if failed:
                self._trip(key, "the trial call failed")
            else:
                self._close(key)
            return
        if not failed:
            return
        if breaker is None:
            breaker = self._breakers[key] = _Breaker()
        cfg = self.settings_for(key)
        now = time.monotonic()
        failures = breaker.failures
        failures.append(now)
        while failures and failures[0] < now - cfg.window:
            failures.popleft()
        if len(failures) >= cfg.failures and key not in self.snapshot.open:
            failures.clear()
            self._trip(key, f"{cfg.failures} failures within {cfg.window:g} s")

    def _trip(self, key: str, why: str) -> None:
        until = time.time() + self.settings_for(key).cooldown
        logger.warning("circuit %s opened: %s", key, why)
        self._breaker_state(key, {"state": "open", "until": until}, why)

    def _close(self, key: str) -> None:
        logger.info("circuit %s closed: the trial call succeeded", key)
        self._breaker_state(key, None, "the trial call succeeded")

    def _breaker_state(self, key: str, value: Any, why: str) -> None:
        """Switch the circuit ``key`` in this process at once; the center's thread
        records it in the store (so the call path never waits for the store), from
        where other processes take it."""
        self._writes.append((key, value, why))
        with self._reload_lock:
            snap = self.snapshot
            self.snapshot = Snapshot(
                snap.version, snap.records, self._overlay(dict(snap.flags)), snap.damage
            )
        if self._thread is None:
            self._write_queued()
        else:
            self._wake.set()

    def _overlay(self, flags: dict[tuple[str, str, str], Any]) -> dict[tuple[str, str, str], Any]:
        """``flags`` read from the store, with the switches not yet written on top (a
        reload never closes a circuit this process has just opened)."""
        for key, value, _ in list(self._writes):
            if value is None:
                flags.pop(("breaker", key, "state"), None)
            else:
                flags[("breaker", key, "state")] = value
        return flags

    def _write_queued(self) -> None:
        """Record the queued breaker switches, oldest first; one the store refuses is
        logged (the switch holds in this process)."""
        while True:
            with self._write_lock:
                if not self._writes:
                    return
                try:
                    self._write_switch(*self._writes[0])
                except Exception as exc:
                    logger.error(
                        "recording a breaker switch in the center failed: %s",
                        exc,
                        exc_info=not isinstance(exc, CenterError),
                    )
                self._writes.popleft()

    def _write_switch(self, key: str, value: Any, why: str) -> None:
        self._change(
            "breaker", key, "state", lambda _: value, actor="breaker", reason=why,
            action="open" if value else "close",
        )  # fmt: skip


def _sqlite(path: Path, create: bool, busy_timeout: float) -> SQLiteCenterStore:
    path = path.expanduser()
    if not create and not path.exists():
        raise CenterError(f"there is no center store at {path}")
    return SQLiteCenterStore(path, busy_timeout=busy_timeout)


def _split_query(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without the center's own query options (``prefix``, ``audit_maxlen``),
    and those options; the other options stay for the Redis client."""
    from urllib.parse import parse_qsl, urlencode

    base, _, query = url.partition("?")
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in ("prefix", "audit_maxlen"):
            ours[key] = value
        else:
            theirs.append((key, value))
    return (f"{base}?{urlencode(theirs)}" if theirs else base), ours


def _circuit(found: tuple[str, float]) -> str:
    """``open``, or ``half_open`` once the cool-down has passed (the next call is the
    trial)."""
    return "half_open" if found[1] <= time.time() else found[0]


_MCP_ACTIONS = frozenset({"push_mcp", "remove_mcp"})
_RECORD_ACTIONS = frozenset({"register", "update", "unregister"})
"""The audit's changes that keep a whole tool record (a pushed tool's endpoint in it)."""
_SECRET_ACTIONS = _MCP_ACTIONS | _RECORD_ACTIONS


def _check_entry(check: MCPEntryCheck, server_id: str, entry: Mapping[str, Any]) -> None:
    """Run ``check`` on a pushed MCP server entry; its problems become a CenterError."""
    try:
        check(server_id, entry)
    except ConfigError as exc:
        prefix = f"mcpServers.{server_id}."
        problems = []
        for issue in exc.issues:
            where = issue.path.removeprefix(prefix) if issue.path else ""
            got = "" if issue.actual is None else f" (got {shown_number(issue.actual)})"
            problems.append(f"{where}: {issue.message}{got}" if where else issue.message + got)
        raise CenterError(
            f"the entry of MCP server {server_id!r} is refused: {'; '.join(problems)}"
        ) from None
    except ValueError as exc:
        raise CenterError(f"the entry of MCP server {server_id!r} is refused: {exc}") from None


def _masked_value(value: Any) -> Any:
    """``value`` with its secrets masked when it is a pushed MCP server entry."""
    return mask_secrets(value) if isinstance(value, Mapping) else value


def _masked_entry(entry: AuditEntry) -> AuditEntry:
    """A change's audit entry with the secrets it holds masked: a pushed MCP server's
    entry, a tool record's endpoint (entries written before the audit kept them masked
    still hold them)."""
    shown = _masked_value if entry.outcome in _MCP_ACTIONS else mask_record
    return replace(entry, before=shown(entry.before), after=shown(entry.after))


def _masked_event(event: ChangeEvent) -> ChangeEvent:
    """A pushed MCP server's change event with its secrets masked (events written
    before the feed kept them masked still hold them)."""
    if event.kind != "flag" or not event.target.startswith("mcp:"):
        return event
    return replace(
        event, detail={**event.detail, "value": _masked_value(event.detail.get("value"))}
    )


_AWAITING = "its server's definition awaits an operator's approval"
_CHANGED = (
    "its server changed its definition since it was approved; an operator must approve the new one"
)


def definition_hash(record: ToolRecord) -> str:
    """The hash a remote tool's definition is pinned by: its name, description, input
    schema and whether it is read-only (canonical JSON).

    A tool that is not read-only hashes as it did before ``read_only`` was pinned, so
    approvals made then stay valid; a read-only tool's hash differs (those approvals
    never recorded it as read-only, so such a tool waits for a new approval once).
    """
    parts: list[Any] = [record.name, record.description, record.input_schema]
    if record.read_only:
        parts.append({"read_only": True})
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _definition_diff(before: Mapping[str, Any] | None, record: ToolRecord) -> str:
    """A unified diff of an approved definition and the current one."""
    import difflib

    def lines(description: str, schema: Any, read_only: Any) -> list[str]:
        return [
            *description.splitlines(),
            *json.dumps(schema, indent=1, sort_keys=True).splitlines(),
            f"read_only: {'not recorded' if read_only is None else json.dumps(read_only)}",
        ]

    old = (
        lines(before["description"], before["input_schema"], before.get("read_only"))
        if before
        else []
    )
    new = lines(record.description, record.input_schema, record.read_only)
    return "\n".join(difflib.unified_diff(old, new, "approved", "current", lineterm="", n=2))


def _settings_dict(settings: BreakerSettings) -> dict[str, Any]:
    return {
        "failures": settings.failures,
        "window": settings.window,
        "cooldown": settings.cooldown,
        "slow_ms": settings.slow_ms,
    }


def _unknown(name: str, snap: Snapshot) -> str:
    why = snap.damage.records.get(name)
    if why is not None:
        return (
            f"the record of tool {name!r} in the center store cannot be read ({why}): "
            "attach a session that has the tool to register it again, or unregister it"
        )
    return f"the center holds no tool named {name!r}{did_you_mean(name, snap.records)}"


_UNREAD = "its status in the center store cannot be read"


def _unread_state(snap: Snapshot, name: str, why: str) -> ToolState:
    """The state of a tool whose record the center never could read: off (sessions
    refuse it), with the operator's status and reason when one is set."""
    own = snap.flags.get(("tool", name, "status"))
    status, reason = Status.DISABLED, ""
    if own is not None and own["status"] != Status.ENABLED.value:
        status, reason = Status(own["status"]), own.get("reason", "")
    return ToolState(
        ToolRecord(name=name, source=""),
        status,
        roles=None,
        groups=(),
        pins={},
        rollout=None,
        reason=reason or f"its record in the center store cannot be read ({why})",
    )


def _unread_flag(key: FlagKey) -> Any:
    """What a flag the center cannot read, and never read before, is taken to say
    (``None``: unset). Fail-closed: a status is only stored for a tool, group or source
    an operator switched off, so it switches off; a role whitelist admits no role; the
    rest (pins, rollouts, an approval, breaker states) count as unset, which for an
    approval keeps a remote tool quarantined. A tool whose groups flag cannot be read
    is switched off by the snapshot (a disabled group may hold it)."""
    scope, _, flag = key
    if flag == "status" and scope in ("tool", "group", "source"):
        return {"status": Status.DISABLED.value, "reason": _UNREAD}
    if scope == "tool" and flag == "roles":
        return {"roles": []}
    return None


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def record_of(entry: ToolEntry, toolset: ToolSet | None, groups: Iterable[str]) -> ToolRecord:
    """The center's record of a session's entry."""
    tool = entry.tool
    versions: tuple[str, ...] = (tool.version,) if tool.version else ()
    if toolset is not None:
        known = toolset.versions.get(tool.fqid)
        if known:
            from toolweave.catalog._versions import version_key

            versions = tuple(sorted(known, key=version_key))
    try:
        schema = dict(entry.input_schema)
    except Exception:
        schema = {}
    return ToolRecord(
        name=entry.name,
        source=source_of(tool),
        fqid=tool.fqid,
        kind=entry.kind.value,
        description=entry.description,
        input_schema=schema,
        read_only=entry.read_only,
        groups=tuple(groups),
        versions=versions,
        default_version=tool.version,
    )
