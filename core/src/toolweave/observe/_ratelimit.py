"""Rate limits per role, per tool and per session, as a call hook's ``admit`` step."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from toolweave.center import Center, CenterHook, CenterStore, SQLiteCenterStore
from toolweave.errors import ErrorKind, ToolError, UsageError
from toolweave.observe._counters import Counter, Counters, RedisCounters, SQLiteCounters
from toolweave.observe._spec import RateLimits
from toolweave.runtime import CallHook, HookCall

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime._session import Session

__all__ = ["RateLimitHook", "RateLimiter"]

logger = logging.getLogger("toolweave")

_FROM_CENTER: Any = object()


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class RateLimiter:
    """Rate limits on the registry center's store, for any number of sessions.

    Args:
        store: Where the counters live: a :class:`~toolweave.center.Center` or its
            store (SQLite: a table in the same file; Redis: keys under the store's
            prefix), an SQLite path, ``sqlite:///path``, or a ``redis://`` URL.
        limits: The limits (:class:`RateLimits` or a mapping of the same form).
        fail_closed: When the store cannot be reached: ``True`` refuses calls
            (``unavailable``), ``False`` lets them through (logged).
        clock: Milliseconds since the epoch (tests inject one; counters shared between
            machines need the machines' clocks in step).
        timeout: Seconds one Redis command, or an SQLite write lock, may wait.

    Raises:
        UsageError: The store is of a kind rate limits do not support, or an extra is
            missing (``toolweave[limits]``, and ``toolweave[redis]`` for Redis).
        CenterError: The SQLite file is damaged, not SQLite, or cannot be opened.
    """

    def __init__(
        self,
        store: Center | CenterStore | str | Path,
        limits: RateLimits | Mapping[str, Any],
        *,
        fail_closed: bool = True,
        clock: Callable[[], int] = _wall_ms,
        timeout: float = 2.0,
    ) -> None:
        self.limits = RateLimits.of(limits)
        self.fail_closed = fail_closed
        self.clock = clock
        self.counters: Counters = _counters_for(store, timeout)

    def __repr__(self) -> str:
        return f"<RateLimiter {self.counters!r}>"

    def attach(self, session: Session, *, role: str | None = _FROM_CENTER) -> RateLimitHook:
        """Limit ``session``'s calls: adds a :class:`RateLimitHook` (after the hooks it
        has, so a call the center refuses is not counted).

        Args:
            session: The session.
            role: The session's role for ``per_role`` limits; by default the role the
                registry center attached the session with (none without a center).

        Returns:
            The hook (``session.remove_hook(hook)`` detaches it).
        """
        if role is _FROM_CENTER:
            role = next((h.role for h in session.hooks if isinstance(h, CenterHook)), None)
        hook = RateLimitHook(self, session.session_id, role)
        session.add_hook(hook)
        return hook

    def check(self, tool: str, session_id: str, role: str | None = None) -> ToolError | None:
        """Count one call of ``tool`` (what the hook does on every call): ``None`` when it
        is allowed, else the ``rate_limited`` error with ``data["retry_after"]``
        (seconds)."""
        counters = self.limits.for_call(tool, session_id, role)
        return self._acquire(tool, counters) if counters else None

    def _acquire(self, tool: str, counters: list[Counter]) -> ToolError | None:
        try:
            refusal = self.counters.acquire(counters, self.clock())
        except Exception as exc:
            logger.error("rate limits of %s cannot be checked: %s", tool, exc)
            if not self.fail_closed:
                return None
            return ToolError(
                ErrorKind.UNAVAILABLE,
                f"{tool} cannot run now: its rate limit cannot be checked; try again later.",
            )
        if refusal is None:
            return None
        (scope, key, _), rate, wait_ms = refusal
        seconds = round(wait_ms / 1000, 3)
        whose = {
            "per_session": "this session",
            "per_tool": tool,
            "per_role": "sessions of role " + key.partition(":")[2],
        }[scope]
        return ToolError(
            ErrorKind.RATE_LIMITED,
            f"{tool} was not run: the limit for {whose} is {rate.text}; "
            f"try again in {max(seconds, 0.1):.1f} s.",
            {"retry_after": seconds, "scope": scope, "limit": rate.text},
        )

    def reset(self) -> None:
        """Forget every count (all sessions, tools and roles on this store)."""
        self.counters.reset()

    def close(self) -> None:
        """Close the store connection; later checks fail."""
        self.counters.close()


@final
class RateLimitHook(CallHook):
    """One session's rate limits (made by :meth:`RateLimiter.attach`): its ``admit``
    counts the call against the session's, the tool's and the role's counters and
    refuses it (``rate_limited``, ``data["retry_after"]`` in seconds) beyond a limit.
    Tools no limit applies to are not compiled into the session's plans at all.

    Attributes:
        limiter: The limiter.
        session_id: The session counted.
        role: The session's role (``None``: no ``per_role`` limit applies).
    """

    name = "rate_limit"

    def __init__(self, limiter: RateLimiter, session_id: str, role: str | None) -> None:
        self.limiter = limiter
        self.session_id = session_id
        self.role = role
        self.fail_closed = limiter.fail_closed
        self._counters: dict[str, list[Counter]] = {}

    def __repr__(self) -> str:
        return f"<RateLimitHook {self.session_id} role={self.role!r}>"

    def applies_to(self, entry: ToolEntry) -> bool:
        return bool(self._for(entry.name))

    def _for(self, tool: str) -> list[Counter]:
        found = self._counters.get(tool)
        if found is None:
            found = self._counters[tool] = self.limiter.limits.for_call(
                tool, self.session_id, self.role
            )
        return found

    def admit(self, call: HookCall) -> ToolError | None:
        name = call.entry.name
        return self.limiter._acquire(name, self._for(name))


def _counters_for(store: Center | CenterStore | str | Path, timeout: float) -> Counters:
    if isinstance(store, Center):
        store = store.store
    if isinstance(store, SQLiteCenterStore):
        return SQLiteCounters(store.path, busy_timeout=timeout)
    if isinstance(store, CenterStore):
        url = getattr(store, "url", None)  # RedisCenterStore
        if not isinstance(url, str):
            raise UsageError(f"rate limits have no counters for {store!r}")
        prefix = getattr(store, "prefix", "toolweave")
        return RedisCounters(url, prefix=prefix, timeout=timeout)
    text = str(store)
    if isinstance(store, Path) or "://" not in text:
        return SQLiteCounters(Path(text), busy_timeout=timeout)
    scheme, _, rest = text.partition("://")
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") and rest[1:2] == "/" else rest
        return SQLiteCounters(Path(path), busy_timeout=timeout)
    if scheme in ("redis", "rediss", "unix"):
        return RedisCounters(text, prefix="toolweave", timeout=timeout)
    raise UsageError(f"rate limits have no counters for {scheme}:// URLs")
