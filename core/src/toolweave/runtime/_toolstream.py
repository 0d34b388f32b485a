"""Streaming mode: the progress items of one call, then its result."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, final

import anyio
import anyio.lowlevel
from pydantic import ValidationError

from toolweave.runtime._deadline import Running, Stopped, drive
from toolweave.runtime._guards import check_guards
from toolweave.runtime._outcomes import (
    NOTHING,
    after_result,
    error_result,
    from_exception,
    no_result,
    stop_error,
)
from toolweave.authoring._context import Context
from toolweave.errors import ToolError
from toolweave.results import CallResult, Progress

if TYPE_CHECKING:
    from types import TracebackType

    from toolweave.runtime._session import Session
    from toolweave.catalog._toolset import ToolEntry

__all__ = ["ProgressCallback", "ToolStream"]

logger = logging.getLogger("toolweave")

ProgressCallback = Callable[[Progress], Awaitable[None] | None]
"""Called with each progress item of a streaming tool called in blocking mode."""


def _scheduler() -> Callable[..., object]:
    """Schedules ``fn(*args)`` in the running event loop; callable from any thread."""
    loop = anyio.lowlevel.current_token().native_token
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop.call_soon_threadsafe
    trio_token: Any = loop
    run_sync_soon: Callable[..., object] = trio_token.run_sync_soon
    return run_sync_soon


def _release_all(locks: list[anyio.Semaphore]) -> None:
    for lock in reversed(locks):
        lock.release()


@final
class ToolStream:
    """The items of one call in streaming mode: progress items, then one CallResult.

    Iterate it with ``async for`` inside ``async with`` (or call :meth:`aclose`), so that
    a stream left early is closed at once: its tool is stopped, the state it changed is
    saved, and the state locks and call id it holds are given back. A stream dropped
    without being closed gives back its locks and call id when it is garbage collected,
    but its tool is stopped only when Python finalizes the generator, and its state is
    saved only with a later call's. Every step runs under the call's deadline; the stream can
    be cancelled by call id through :meth:`Session.cancel`. A tool that ends without a
    result, or yields after its result, ends the stream with ``execution_error``; it
    never hangs past its deadline.

    The tool's generator may yield from inside its own cancel scopes and task groups.
    As with any async generator that does, the consumer should pull items from one
    task and not open a cancel scope between two items that it closes before the next
    one (``async with session.stream(...) as items: async for item in items: ...`` is
    always fine).
    """

    __slots__ = (
        "_agen",
        "_args",
        "_arguments",
        "_call_id",
        "_ctx",
        "_deadline",
        "_done",
        "_entry",
        "_held",
        "_name",
        "_output",
        "_running",
        "_session",
        "_soon",
        "_want_lock",
    )

    def __init__(self, session: Session, name: str, arguments: Any, call_id: str | None) -> None:
        self._session = session
        self._name = name
        self._arguments = arguments
        self._call_id = call_id
        self._agen: Any = None
        self._args: Any = None
        self._entry: ToolEntry | None = None
        self._ctx: Context | None = None
        self._deadline = 0.0
        self._done = False
        self._output: Any = NOTHING
        self._running = Running()
        self._want_lock = False
        self._held: list[anyio.Semaphore] | None = None
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

    @classmethod
    async def _collect(
        cls,
        session: Session,
        entry: ToolEntry,
        ctx: Context,
        args: Any,
        on_progress: ProgressCallback | None,
    ) -> CallResult:
        """A streaming tool called in blocking mode: the whole run in one cancel scope,
        so the tool may hold scopes and task groups across its yields."""
        stream = cls(session, entry.name, None, ctx.call_id)
        stream._open(entry, ctx, args)
        running = stream._running
        result: CallResult | None = None
        try:
            with anyio.CancelScope(deadline=stream._deadline) as scope:
                running.scope = scope
                if stream._want_lock:
                    stream._want_lock = False
                    await stream._lock()
                agen = stream._agen
                while result is None:
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        item = NOTHING
                    except Exception as exc:
                        item = from_exception(exc, entry, ctx.call_id)
                    got = stream._take(item)
                    if isinstance(got, CallResult):
                        result = got
                    elif got is not None and on_progress is not None:
                        try:
                            maybe = on_progress(got)
                            if maybe is not None:
                                await maybe
                        except Exception:
                            logger.exception("the progress callback of %s raised", entry.name)
                if stream._agen is not None and item is not NOTHING:
                    # Stopped early: close the generator here, inside the scopes it holds.
                    stream._agen = None
                    try:
                        await agen.aclose()
                    except Exception:
                        logger.exception("closing the stream of %s failed", entry.name)
            running.scope = None
            if result is None:
                result = stream._stopped()
            return await stream._end(result)
        finally:
            await stream.aclose()

    def _open(self, entry: ToolEntry, ctx: Context, args: Any) -> None:
        self._entry = entry
        self._ctx = ctx
        self._args = args
        assert entry.tool.open_stream is not None
        self._agen = entry.tool.open_stream(ctx, args)
        self._deadline = anyio.current_time() + self._session._timeout_for(entry)
        self._want_lock = entry.tool.state_locks is not None
        self._session._track(self._call_id, self._running)

    async def __anext__(self) -> Progress | CallResult:
        if self._done:
            raise StopAsyncIteration
        if self._agen is None:
            session = self._session
            entry = session._lookup(self._name)
            if entry is None or not entry.tool.streaming:
                # Not a streaming tool (or unknown): one final item from the blocking path.
                return await self._end(
                    await session.call(self._name, self._arguments, self._call_id)
                )
            if session._guards:
                refusal = check_guards(session._guards, session, entry)
                if refusal is not None:
                    return await self._end(error_result(refusal, entry, self._call_id))
            try:
                args = entry.parse(self._arguments)
            except (ValidationError, ToolError) as exc:
                return await self._end(error_result(exc, entry, self._call_id))
            self._open(entry, Context(session, entry, self._call_id), args)
        entry = self._entry
        assert entry is not None
        if self._want_lock:
            self._want_lock = False
            failed = await self._acquire()
            if failed is not None:
                return await self._end(failed)
        while True:
            got = self._take(await self._pull())
            if isinstance(got, CallResult):
                return await self._end(got)
            if got is not None:
                return got

    def _take(self, item: Any) -> Progress | CallResult | None:
        """What one item from the generator means: progress to hand on, the call's
        result (the stream ends), or ``None`` (the output was kept; pull again)."""
        entry = self._entry
        assert entry is not None
        if isinstance(item, CallResult):  # the step failed, timed out or was cancelled
            return item
        if item is NOTHING:  # the generator ended
            if self._output is NOTHING:
                return self._error(no_result(entry.name))
            assert self._ctx is not None
            try:
                return self._session._result(self._ctx, self._output)
            except Exception as exc:
                return from_exception(exc, entry, self._call_id)
        if self._output is not NOTHING:
            return self._error(after_result(entry.name, item))
        if isinstance(item, Progress):
            return item
        self._output = item
        return None

    def _error(self, err: ToolError) -> CallResult:
        assert self._entry is not None
        return error_result(err, self._entry, self._call_id)

    def _stopped(self) -> CallResult:
        """The result of a call stopped by :meth:`cancel` or by its deadline."""
        entry = self._entry
        assert entry is not None
        return self._error(stop_error(self._running, entry, self._session._timeout_for(entry)))

    async def _lock(self) -> None:
        """Take the locks of the tool's state models, in key order (see
        :meth:`Session._call_serialised`)."""
        entry = self._entry
        ctx = self._ctx
        assert entry is not None
        assert ctx is not None
        models = entry.tool.state_locks
        assert models is not None
        locks = self._session._state.locks(models)
        held: list[anyio.Semaphore] = []
        self._held = held
        self._soon = _scheduler()
        for _, lock in locks:
            await lock.acquire()
            held.append(lock)
        ctx._call_record().held = {key for key, _ in locks}

    async def _acquire(self) -> CallResult | None:
        """:meth:`_lock` under the deadline; a CallResult when the wait was cancelled or
        timed out."""
        running = self._running
        if running.cancelled:
            return self._stopped()
        with anyio.CancelScope(deadline=self._deadline) as scope:
            running.scope = scope
            try:
                await self._lock()
            finally:
                running.scope = None
            return None
        return self._stopped()

    async def _pull(self) -> Any:
        """One step of the tool's generator under the deadline: an item, NOTHING at the
        end, or a CallResult when the step failed, timed out or was cancelled."""
        entry = self._entry
        assert entry is not None
        running = self._running
        if running.cancelled:
            return self._stopped()
        session = self._session
        if session._inline or (session._inline is None and session._detect_inline()):
            # Like Session.call: no cancel scope of ours around the step, so the tool may
            # hold its own scopes and task groups across its yields.
            step = self._agen.__anext__()
            try:
                try:
                    pending = step.send(None)
                except StopIteration as got:
                    return got.value
                remaining = max(self._deadline - anyio.current_time(), 0.0)
                return await drive(step, pending, running, remaining)
            except StopAsyncIteration:
                return NOTHING
            except Stopped:
                return self._stopped()
            except Exception as exc:
                return from_exception(exc, entry, self._call_id)
            finally:
                step.close()
        with anyio.CancelScope(deadline=self._deadline) as scope:
            running.scope = scope
            try:
                return await self._agen.__anext__()
            except StopAsyncIteration:
                return NOTHING
            except Exception as exc:
                return from_exception(exc, entry, self._call_id)
            finally:
                running.scope = None
        return self._stopped()

    async def _end(self, result: CallResult) -> CallResult:
        """Close the generator, post-process the result, release the call."""
        self._done = True
        try:
            await self._close_generator()
            ctx = self._ctx
            session = self._session
            if ctx is not None and (ctx._record is not None or session._reminders):
                result = await session._post(ctx, self._args, result)
                self._ctx = None
        finally:
            self._release()
        return result

    async def _close_generator(self) -> None:
        """Close the tool's generator where it stands. No scope of ours is entered
        around it: a generator suspended inside its own cancel scopes must leave them
        in order."""
        agen, self._agen = self._agen, None
        if agen is not None:
            try:
                await agen.aclose()
            except Exception:
                logger.exception("closing the stream of %s failed", self._name)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            ctx = self._ctx
            if ctx is not None and ctx._record is not None:
                ctx._record.held = None
            _release_all(held)
        self._session._untrack(self._call_id, self._running)

    def __del__(self) -> None:
        # Dropped without aclose: give back the state locks and the call id, so that
        # later calls neither wait on them nor get cancelled by this call's id. The
        # collector may run in any thread: the locks are released in the event loop.
        try:
            held, self._held = self._held, None
            if held and self._soon is not None:
                self._soon(_release_all, held)
            self._session._untrack(self._call_id, self._running)
        except Exception:  # pragma: no cover - the event loop is closed already
            pass

    async def aclose(self) -> None:
        """Stop the tool's generator (if still running), save the state it changed and
        forget the call id."""
        self._done = True
        try:
            await self._close_generator()
            ctx, self._ctx = self._ctx, None
            if ctx is not None and ctx._record is not None and ctx._record.slots:
                await self._session._state.persist(list(ctx._record.slots.values()))
        finally:
            self._release()
