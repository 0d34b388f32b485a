"""A blocking facade over a session, for code that is not async."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, final

from toolweave.errors import UsageError

if TYPE_CHECKING:
    from toolweave.errors import StateConflict
    from toolweave.results import CallResult, Progress
    from toolweave.runtime._batch import CallLike
    from toolweave.runtime._session import Session

__all__ = ["SyncSession"]

T = TypeVar("T")


@final
class SyncSession:
    """A blocking facade over a :class:`Session`, for callers that are not async.

    It runs an event loop in a background thread; close it (or use ``with``) when done.

    Example:
        ``with toolset.session().sync() as s: print(s.call("echo", {"text": "hi"}).text)``
    """

    def __init__(self, session: Session, *, backend: str = "asyncio") -> None:
        from anyio.from_thread import start_blocking_portal

        self.session = session
        self._cm = start_blocking_portal(backend)
        self._portal = self._cm.__enter__()
        self._closed = False

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the session's event loop, waited for.

        Raises:
            UsageError: The session is closed (or its event loop stopped).
        """
        if self._closed:
            raise UsageError(
                "this SyncSession is closed; open a new one (toolset.session().sync())"
            )
        try:
            return self._portal.call(fn, *args)
        except RuntimeError:
            if getattr(self._portal, "_event_loop_thread_id", 0) is not None:
                raise  # the portal runs: the error is the call's own
            raise UsageError(
                "this SyncSession's event loop has stopped (it was closed, or a "
                "KeyboardInterrupt stopped it); open a new one (toolset.session().sync())"
            ) from None

    def call(self, name: str, arguments: Any = None, call_id: str | None = None) -> CallResult:
        """Run one call and wait for its result.

        Raises:
            UsageError: The session is closed.
        """
        result: CallResult = self._run(self.session.call, name, arguments, call_id)
        return result

    def call_many(self, calls: Iterable[CallLike], *, limit: int | None = None) -> list[CallResult]:
        """Run a batch of calls (see :meth:`Session.call_many`) and wait for the results."""

        async def run() -> list[CallResult]:
            return await self.session.call_many(calls, limit=limit)

        results: list[CallResult] = self._run(run)
        return results

    def run_tool_calls(
        self,
        message: Any,
        provider: str = "openai",
        *,
        limit: int | None = 16,  # toolweave.formats.MAX_CONCURRENT_CALLS
    ) -> list[dict[str, Any]]:
        """Run a model reply's tool calls (see :meth:`Session.run_tool_calls`) and wait."""
        messages: list[dict[str, Any]] = self._run(
            functools.partial(self.session.run_tool_calls, message, provider, limit=limit)
        )
        return messages

    def stream(
        self, name: str, arguments: Any = None, call_id: str | None = None
    ) -> list[Progress | CallResult]:
        """Run one call in streaming mode and return every item, the result last."""

        async def collect() -> list[Progress | CallResult]:
            async with self.session.stream(name, arguments, call_id) as items:
                return [item async for item in items]

        items: list[Progress | CallResult] = self._run(collect)
        return items

    def cancel(self, call_id: str) -> bool:
        """Cancel a running call by id (from any thread)."""
        cancelled: bool = self._run(self.session.cancel, call_id)
        return cancelled

    def resume(self, call_id: str, *, approved: bool, always: bool = False) -> CallResult:
        """Answer a call held for approval and wait for its result (see
        :meth:`Session.resume`)."""

        async def run() -> CallResult:
            return await self.session.resume(call_id, approved=approved, always=always)

        result: CallResult = self._run(run)
        return result

    def save_state(self) -> StateConflict | None:
        """Save state changed outside calls (see :meth:`Session.save_state`)."""
        conflict: StateConflict | None = self._run(self.session.save_state)
        return conflict

    def set_resource(self, value: Any, key: type[Any] | None = None) -> None:
        """Store a resource for this session (see :meth:`Session.set_resource`), in the
        session's event loop, so that no running call sees it half set."""
        self._run(self.session.set_resource, value, key)

    def get_resource(self, key: type[T]) -> T | None:
        """See :meth:`Session.get_resource`."""
        return self.session.get_resource(key)

    def definitions(self, format: str = "openai") -> list[dict[str, Any]]:
        """See :meth:`Session.definitions`."""
        return self.session.definitions(format)

    def definitions_json(self, format: str = "openai") -> bytes:
        """See :meth:`Session.definitions_json`."""
        return self.session.definitions_json(format)

    def close(self) -> None:
        """Close the session (see :meth:`Session.aclose`), then stop the background
        event loop. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._portal.call(self.session.aclose)
        finally:
            self._cm.__exit__(None, None, None)

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
