"""Streaming mode: the progress items of one call, then its result."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, final

import anyio.lowlevel

from toolweave.results import CallResult, Progress
from toolweave.runtime._deadline import Running
from toolweave.runtime._pipeline import Abandoned, Sink, _Emit, emit, run_call

if TYPE_CHECKING:
    from types import TracebackType

    from toolweave.runtime._session import Session

__all__ = ["ProgressCallback", "ToolStream"]

ProgressCallback = Sink
"""Called with each progress item of a streaming tool called in blocking mode."""


def _scheduler() -> Callable[..., object]:
    """Schedules ``fn(*args)`` in the running event loop; callable from any thread."""
    loop = anyio.lowlevel.current_token().native_token
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop.call_soon_threadsafe
    trio_token: Any = loop
    run_sync_soon: Callable[..., object] = trio_token.run_sync_soon
    return run_sync_soon


@final
class ToolStream:
    """The items of one call in streaming mode: progress items, then one CallResult.

    The call runs through the session's one pipeline (hooks, validation, state locks,
    deadline, post-processing) in the task that iterates the stream: each ``__anext__``
    runs the call until its next progress item or its end. Iterate it with ``async
    for`` inside ``async with`` (or call :meth:`aclose`), so that a stream left early is
    closed at once: its tool is stopped where it stands, the state it changed is saved,
    and its state locks and call id are given back. A stream dropped without being
    closed gives them back when it is garbage collected (in the event loop), without
    saving. The stream can be cancelled by call id through :meth:`Session.cancel` or
    with :meth:`cancel`. A tool that ends without a result, or yields after its result,
    ends the stream with ``execution_error``; it never hangs past its deadline.

    The tool's generator may yield from inside its own cancel scopes and task groups.
    As with any async generator that does, the consumer should pull items from one
    task and not open a cancel scope between two items that it closes before the next
    one (``async with session.stream(...) as items: async for item in items: ...`` is
    always fine).
    """

    __slots__ = ("_call_id", "_coro", "_done", "_running", "_session", "_soon", "_started")

    def __init__(self, session: Session, name: str, arguments: Any, call_id: str | None) -> None:
        self._session = session
        self._call_id = call_id
        self._running = Running()
        self._coro = run_call(session, name, arguments, call_id, emit, _running=self._running)
        self._done = False
        self._started = False
        self._soon: Callable[..., object] | None = None

    def __aiter__(self) -> ToolStream:
        return self

    async def __aenter__(self) -> ToolStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def cancel(self) -> None:
        """Cancel the call; the next item is its ``cancelled`` result."""
        self._running.cancel()

    async def __anext__(self) -> Progress | CallResult:
        if self._done:
            raise StopAsyncIteration
        if not self._started:
            self._started = True
            self._soon = _scheduler()
        item: Progress | CallResult = await self._advance(None)
        if isinstance(item, CallResult):
            self._done = True
        return item

    @types.coroutine
    def _advance(self, throw: BaseException | None) -> Generator[Any, Any, Any]:
        """Run the call until its next progress item (returned) or its end (its result):
        what the pipeline awaits goes to the event loop, what the loop sends or throws
        goes back in, as ``await`` would do."""
        coro = self._coro
        sent: Any = None
        while True:
            try:
                if throw is not None:
                    yielded = coro.throw(throw)
                    throw = None
                else:
                    yielded = coro.send(sent)
            except StopIteration as done:
                self._done = True
                return done.value
            except BaseException:
                self._done = True
                raise
            if type(yielded) is _Emit:
                return yielded.item
            try:
                sent = yield yielded
            except BaseException as exc:
                throw, sent = exc, None

    async def aclose(self) -> None:
        """Stop the call where it stands (if still running), save the state it changed
        and give back its locks and call id."""
        if self._done:
            return
        self._done = True
        if not self._started:
            self._coro.close()
            return
        await self._advance(Abandoned())

    def __del__(self) -> None:
        # Dropped without aclose: close the call in the event loop, which gives back
        # its state locks and call id (the collector may run in any thread).
        try:
            if self._done:
                return
            self._session._untrack(self._call_id, self._running)
            if self._soon is None:
                self._coro.close()
            else:
                self._soon(self._coro.close)
        except Exception:  # pragma: no cover - the event loop is closed already
            pass
