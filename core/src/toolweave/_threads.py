"""Running a blocking tool function on a worker thread.

On asyncio a call goes straight to a thread pool through the event loop (about half
the cost of ``anyio.to_thread.run_sync``); elsewhere it goes through anyio. Either way
a cancelled call returns at once and its thread is abandoned: it runs on to the end
and its result is dropped. The worker thread can call back into the event loop with
``anyio.from_thread``, as in an anyio worker thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from functools import cache, partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["RaisedInThread", "run_in_worker"]

T = TypeVar("T")

#: Worker threads per pool (anyio's default thread limit).
WORKERS = 40


class _Pool:
    """A thread pool and how many of its threads run abandoned calls."""

    __slots__ = ("abandoned", "executor", "lock")

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="toolweave-worker")
        self.abandoned = 0
        self.lock = threading.Lock()

    def abandon(self, job: Future[Any]) -> None:
        """Count ``job``'s thread as taken until the job ends."""
        with self.lock:
            self.abandoned += 1
        job.add_done_callback(self._release)

    def _release(self, _job: Future[Any]) -> None:
        with self.lock:
            self.abandoned -= 1


_pool: _Pool | None = None


def _current_pool() -> _Pool:
    """The pool for new calls: a fresh one once half the threads of the current one run
    abandoned calls (the old pool's threads end with their calls)."""
    global _pool
    pool = _pool
    if pool is None or pool.abandoned >= WORKERS // 2:
        if pool is not None:
            pool.executor.shutdown(wait=False)
        pool = _pool = _Pool()
    return pool


@cache
def _anyio_parts() -> tuple[Any, Any, Any, Any] | None:
    """What anyio.from_thread reads in a worker thread to find the event loop (imported
    on first use: the asyncio backend is loaded by then)."""
    try:
        from anyio._backends._asyncio import AsyncIOBackend
        from anyio._core._eventloop import set_current_async_library, threadlocals
        from anyio.lowlevel import EventLoopToken
    except ImportError:  # pragma: no cover - a future anyio moved them: use anyio's path
        return None
    return AsyncIOBackend, EventLoopToken, set_current_async_library, threadlocals


class RaisedInThread(Exception):
    """A ``GeneratorExit`` that a function raised in its worker thread, carried back to
    the event loop as an ordinary exception.

    asyncio throws a worker's exception into the task that awaits it, and a thrown
    ``GeneratorExit`` closes every coroutine on that task's await chain, the host's
    included, before anyone could catch it. The dispatcher reports :attr:`raised` as
    the tool's failure.

    Attributes:
        raised: What the function raised.
    """

    def __init__(self, raised: BaseException) -> None:
        super().__init__(type(raised).__name__)
        self.raised = raised


def _carried(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, with a ``GeneratorExit`` carried back as :class:`RaisedInThread`."""
    try:
        return fn(*args)
    except GeneratorExit as exc:
        raise RaisedInThread(exc) from None


def _work(
    local: Any, token: Any, ctx: contextvars.Context, fn: Callable[..., T], args: tuple[Any, ...]
) -> T:
    local.current_token = token
    local.current_cancel_scope = None
    try:
        return ctx.run(_carried, fn, *args)
    finally:
        del local.current_token
        del local.current_cancel_scope


async def run_in_worker(fn: Callable[..., T], /, *args: Any) -> T:
    """Run ``fn(*args)`` on a worker thread, with the caller's context variables.

    Cancelling the caller returns at once; a call that started runs on, abandoned. A
    ``GeneratorExit`` that ``fn`` raises comes back as :class:`RaisedInThread`.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    parts = _anyio_parts() if loop is not None else None
    if loop is None or parts is None:
        return await anyio.to_thread.run_sync(partial(_carried, fn, *args), abandon_on_cancel=True)
    backend, token_type, set_library, local = parts
    ctx = contextvars.copy_context()
    ctx.run(set_library, None)
    pool = _current_pool()
    job = pool.executor.submit(_work, local, token_type(backend, loop), ctx, fn, args)
    try:
        return await asyncio.wrap_future(job, loop=loop)
    except BaseException:
        if job.running():  # cancelled while the thread runs: it is abandoned
            pool.abandon(job)
        raise
