"""Notifications: events tools emit while or after they run, for the host to watch.

A tool declares the names it may emit (``emitted_notifications = ("execution_complete",)``)
and emits through its context (``ctx.notify("execution_complete", {"exit_code": 0})``).
The session's :class:`Notifier` delivers each notification to every subscriber: plain
callbacks (:meth:`Notifier.subscribe`) and async iterators (:meth:`Notifier.listen`).

Emitting a name the tool did not declare raises :class:`~toolweave.UsageError` in debug
mode (tests), and is logged as a warning and delivered otherwise.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from toolweave.errors import UsageError

__all__ = ["Notification", "NotificationListener", "Notifier"]

logger = logging.getLogger("toolweave")

Callback = Callable[["Notification"], object]


@dataclass(frozen=True, slots=True)
class Notification:
    """One event emitted by a tool.

    Attributes:
        name: What happened (``execution_complete``, ``execution_failed``, ...).
        data: JSON-able details chosen by the tool.
        tool: The fully qualified id of the emitting tool.
        session_id: The session the call belongs to.
        call_id: The host's id of the call, if any.
        time: When it was emitted (seconds since the epoch).
    """

    name: str
    data: Any = None
    tool: str = ""
    session_id: str = ""
    call_id: str | None = None
    time: float = field(default_factory=time.time)


@final
class NotificationListener:
    """An async iterator over notifications; use it as a context manager.

    Example:
        ``with session.notifier.listen() as events: async for n in events: ...``

    Notifications that arrive while the buffer is full are dropped (and logged).
    """

    __slots__ = ("_notifier", "_receive", "_send")

    def __init__(self, notifier: Notifier, buffer: int) -> None:
        self._notifier = notifier
        send, receive = anyio.create_memory_object_stream[Notification](buffer)
        self._send: MemoryObjectSendStream[Notification] = send
        self._receive: MemoryObjectReceiveStream[Notification] = receive

    def _deliver(self, notification: Notification) -> None:
        try:
            self._send.send_nowait(notification)
        except anyio.WouldBlock:
            logger.warning("notification %s dropped: a listener is not keeping up", notification)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.close()

    def __aiter__(self) -> NotificationListener:
        return self

    async def __anext__(self) -> Notification:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop listening; iteration ends after the notifications already received."""
        self._notifier._listeners.discard(self)
        self._send.close()

    def __enter__(self) -> NotificationListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._receive.close()


@final
class Notifier:
    """Delivers the notifications of one session (or of every session sharing it).

    Each session has one (``session.notifier``); a host that wants one feed for all
    its sessions inserts its own ``Notifier`` into the shared resources.

    Args:
        debug: Raise on notifications a tool did not declare (tests turn this on).
        buffer: How many notifications a :meth:`listen` iterator holds before dropping.
    """

    __slots__ = ("_callbacks", "_listeners", "_lock", "_warned", "buffer", "debug")

    def __init__(self, *, debug: bool = False, buffer: int = 256) -> None:
        self.debug = debug
        self.buffer = buffer
        self._callbacks: tuple[Callback, ...] = ()
        self._listeners: set[NotificationListener] = set()
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        """Call ``callback(notification)`` for every notification; returns an unsubscribe
        function.

        Callbacks run synchronously in the event loop, in subscription order; one that
        raises is logged and the others still run. For async consumers use
        :meth:`listen`.
        """
        with self._lock:
            self._callbacks = (*self._callbacks, callback)

        def unsubscribe() -> None:
            with self._lock:
                self._callbacks = tuple(c for c in self._callbacks if c is not callback)

        return unsubscribe

    def listen(self, buffer: int | None = None) -> NotificationListener:
        """An async iterator over the notifications emitted from now on."""
        listener = NotificationListener(self, self.buffer if buffer is None else buffer)
        self._listeners.add(listener)
        return listener

    def emit(self, notification: Notification, declared: Collection[str] | None = None) -> None:
        """Deliver ``notification`` to every subscriber.

        Args:
            notification: The event.
            declared: The names the emitting tool declared; ``None`` skips the check.

        Raises:
            UsageError: In debug mode, when the name is not in ``declared``.
        """
        if declared is not None and notification.name not in declared:
            self._undeclared(notification, declared)
        for callback in self._callbacks:
            try:
                outcome = callback(notification)
            except Exception:
                logger.exception("notification callback %r raised", callback)
                continue
            if inspect.isawaitable(outcome):
                if inspect.iscoroutine(outcome):
                    outcome.close()
                logger.error(
                    "notification callback %r is async; subscribe plain functions, or "
                    "iterate Notifier.listen() for async code",
                    callback,
                )
        for listener in list(self._listeners):
            listener._deliver(notification)

    def _undeclared(self, notification: Notification, declared: Collection[str]) -> None:
        message = (
            f"tool {notification.tool} emitted notification {notification.name!r}, which it "
            f"does not declare (declared: {', '.join(declared) or 'none'}); add it to "
            "emitted_notifications"
        )
        if self.debug:
            raise UsageError(message)
        key = (notification.tool, notification.name)
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("%s", message)

    def __repr__(self) -> str:
        return (
            f"<Notifier callbacks={len(self._callbacks)} listeners={len(self._listeners)} "
            f"debug={self.debug}>"
        )
