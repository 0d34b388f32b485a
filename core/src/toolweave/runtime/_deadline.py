"""Deadlines and cancellation of a call that suspended after an inline first step.

The dispatcher runs the first step of a tool's coroutine inline, without a cancel
scope: most calls finish in that step and a scope costs several times the validation of
the arguments. A call that suspends is then driven by :func:`drive`, which applies the
call's deadline and cancellation itself instead of through a cancel scope: a scope
entered at that point would sit inside any scope or task group the tool opened in its
first step, and leaving those would fail.

To stop the call, ``drive`` cancels the future the coroutine is waiting on (what
``asyncio.Task.cancel`` does), so the coroutine receives a ``CancelledError`` at its
current ``await``, unwinds (running its ``finally`` blocks and shielded cleanup), and
the dispatcher reports ``timeout`` or ``cancelled``. The cancellation is repeated every
few seconds while the tool keeps running. A cancellation of the caller's own task is
told apart by the task's cancel count and passes through untouched.

A stop respects anyio's shields: while the task is inside a ``CancelScope(shield=True)``
(a tool starting or killing a process, saving state), the cancellation is held back and
delivered at its first wait outside the shield. Which scopes the tool opened cannot be
told cheaply from those around the call, so a host that runs a whole call inside a
shielded scope also holds back that call's deadline and cancellation until it leaves.

asyncio only; on other event loops the dispatcher runs the whole call in a cancel scope.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any

__all__ = ["REPEAT", "Running", "Stopped", "drive", "stopping"]

REPEAT = 5.0
"""Seconds between repeated cancellations of a tool that keeps running after one."""


class Running:
    """A call that is waiting and may be cancelled by id.

    Attributes:
        cancelled: Set by :meth:`cancel` (as opposed to the deadline passing).
        scope: The cancel scope of a call that runs inside one.
        stop: Stops a call driven by :func:`drive`.
    """

    __slots__ = ("cancelled", "scope", "stop")

    def __init__(self) -> None:
        self.cancelled = False
        self.scope: Any = None
        self.stop: Callable[[], None] | None = None

    def cancel(self) -> None:
        """Stop the call at once."""
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()
        if self.stop is not None:
            self.stop()


def _scope_of(task: asyncio.Task[Any] | None) -> Any:
    """The innermost anyio cancel scope ``task`` is in, or ``None``.

    Read from anyio's record of each task's scopes (its asyncio backend, which anyio
    imports when it first runs there: until then no task is in an anyio scope)."""
    backend = sys.modules.get("anyio._backends._asyncio")
    states = getattr(backend, "_task_states", None)
    if task is None or states is None:
        return None
    state = states.get(task)
    return None if state is None else state.cancel_scope


def _shielded(task: asyncio.Task[Any] | None) -> bool:
    """Whether ``task`` is inside a shielded anyio cancel scope."""
    scope = _scope_of(task)
    while scope is not None:
        if scope.shield:
            return True
        scope = scope._parent_scope
    return False


class Stopped(Exception):
    """Raised by :func:`drive` when the call was stopped (deadline or cancel)."""


_stops: dict[asyncio.Task[Any] | None, int] = {}
"""The tasks in which :func:`drive` is stopping a call, with how many calls: a
``CancelledError`` raised there is a stop's, not a tool's own (see :func:`stopping`).
Entries are made by the first stop of a call and removed when its drive ends."""


def stopping(task: asyncio.Task[Any] | None) -> bool:
    """Whether a call driven in ``task`` is being stopped (its deadline passed or it
    was cancelled by id): the ``CancelledError`` a tool raises then is the stop's."""
    return task in _stops


_NO_CONTEXT = contextvars.Context()
"""The context the stop timers run in: they read no context variable, and a shared
empty one spares each call a copy of its task's context."""


class _Stop:
    """Stops one driven call: the call's deadline timer calls it, and so does
    :meth:`Running.cancel`. One object, so that a waiting call holds no closure (a call
    suspended by the thousand keeps the collector's work small)."""

    __slots__ = ("delivered", "handle", "loop", "stopping", "task", "waiting")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None, timeout: float
    ) -> None:
        self.loop = loop
        self.task = task
        self.waiting: Any = None
        """The future the coroutine waits on, if it waits on one."""
        self.stopping = False
        """A stop was requested."""
        self.delivered = False
        """The CancelledError reached the coroutine since."""
        self.handle: asyncio.TimerHandle = loop.call_at(
            loop.time() + timeout, self, context=_NO_CONTEXT
        )

    def __call__(self) -> None:
        self.handle.cancel()
        if not self.stopping:
            _stops[self.task] = _stops.get(self.task, 0) + 1
        self.stopping, self.delivered = True, False
        waiting = self.waiting
        if waiting is not None and not waiting.done() and not _shielded(self.task):
            waiting.cancel()  # wakes the task; the CancelledError reaches the coroutine
        self.handle = self.loop.call_later(REPEAT, self, context=_NO_CONTEXT)


@types.coroutine
def drive(
    coro: Coroutine[Any, Any, Any], pending: Any, running: Running, timeout: float
) -> Generator[Any, Any, Any]:
    """Continue ``coro``, which already ran its first step and yielded ``pending``,
    until it returns; stop it when ``timeout`` seconds pass or ``running`` is cancelled.

    The coroutine is driven from the awaiting task exactly as ``await`` would drive it:
    what it yields goes to the event loop, what the loop sends or throws goes back in.

    Raises:
        Stopped: The call was stopped and unwound (``running.cancelled`` says why).
    """
    task = asyncio.current_task()
    base = task.cancelling() if task is not None else 0
    stop = running.stop = _Stop(asyncio.get_running_loop(), task, timeout)
    step: Callable[[Any], Any]
    try:
        while True:
            waiting = stop.waiting = (
                pending if getattr(pending, "_asyncio_future_blocking", None) else None
            )
            if (
                stop.stopping
                and not stop.delivered
                and waiting is not None
                and not waiting.done()
                and not _shielded(task)
            ):
                waiting.cancel()  # a stop held back by a shield, delivered at this wait
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                if stop.stopping and isinstance(exc, asyncio.CancelledError):
                    stop.delivered = True
                step, value = coro.throw, exc
            else:
                if stop.stopping and not stop.delivered and not _shielded(task):
                    stop.delivered = True
                    step, value = coro.throw, asyncio.CancelledError()
                else:
                    step, value = coro.send, sent
            try:
                pending = step(value)
            except StopIteration as done:
                if stop.delivered:  # it swallowed the cancellation
                    raise Stopped from None
                return done.value
            except asyncio.CancelledError:
                if stop.stopping and (task is None or task.cancelling() <= base):
                    raise Stopped from None
                raise
    finally:
        running.stop = None
        stop.handle.cancel()
        if stop.stopping:
            left = _stops.pop(task, 1) - 1
            if left:
                _stops[task] = left
