"""Batches: the several tool calls of one model turn."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolweave.errors import ErrorKind, ToolError, UsageError, describe_exception
from toolweave.results import CallResult

if TYPE_CHECKING:
    from toolweave.runtime._session import Session

__all__ = ["CallLike", "ToolCallLike", "run_batch"]

logger = logging.getLogger("toolweave")


class ToolCallLike(Protocol):
    """Any object with a tool call's three parts (e.g. ``toolweave.formats.ToolCall``)."""

    @property
    def name(self) -> str:
        """The client-visible tool name."""
        ...

    @property
    def arguments(self) -> Any:
        """The arguments (JSON text, bytes or a dict)."""
        ...

    @property
    def call_id(self) -> str | None:
        """The model's id for the call."""
        ...


CallLike = ToolCallLike | tuple[str, Any] | tuple[str, Any, str | None] | Mapping[str, Any]
"""A call as :meth:`Session.call_many` takes it: an object with ``name``,
``arguments`` and ``call_id``, a ``(name, arguments[, call_id])`` tuple, or a mapping
with ``name``, ``arguments`` and ``call_id`` (or ``id``)."""


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    arguments: Any = None
    call_id: str | None = None


def _normalise(value: CallLike) -> _Call | CallResult:
    """The call ``value`` describes, or an ``invalid_params`` result when it is none."""
    try:
        if isinstance(value, tuple):
            if 2 <= len(value) <= 3:
                return _Call(*value)
        elif isinstance(value, Mapping):
            if "name" in value:
                return _Call(
                    value["name"], value.get("arguments"), value.get("call_id", value.get("id"))
                )
        else:
            return _Call(value.name, value.arguments, value.call_id)
    except Exception:
        pass
    err = ToolError(
        ErrorKind.INVALID_PARAMS,
        f"not a tool call: a {type(value).__name__}; a call has a name, its arguments "
        "and an optional call id",
    )
    return CallResult(None, err.message, err, None, None, "")


def _concurrent(session: Session, calls: list[_Call]) -> bool:
    for call in calls:
        entry = session.resolve(call.name)
        if entry is not None and not entry.tool.concurrency_safe:
            return False
    return True


def _raised(call: _Call, exc: BaseException) -> CallResult:
    """The failure result of a call that raised out of the dispatcher."""
    logger.error("call %s raised out of the dispatcher", call.name, exc_info=exc)
    err = ToolError(ErrorKind.EXECUTION_ERROR, f"{call.name} failed: {describe_exception(exc)}")
    return CallResult(None, err.message, err, call.call_id, None, call.name)


def _not_run(call: _Call) -> CallResult:
    """The result of a call the batch did not start because the session closed."""
    err = ToolError(
        ErrorKind.CANCELLED, f"{call.name} was not run: the session was closed during the batch"
    )
    return CallResult(None, err.message, err, call.call_id, None, call.name)


async def _one(session: Session, call: _Call, closed_before: bool) -> CallResult:
    if session.closed and not closed_before:  # its close stopped the calls running then
        return _not_run(call)
    try:
        return await session.call(call.name, call.arguments, call.call_id)
    except Exception as exc:  # pragma: no cover - Session.call returns failures
        return _raised(call, exc)


if sys.version_info >= (3, 12):

    def _spawn(loop: asyncio.AbstractEventLoop, coro: Any) -> asyncio.Task[CallResult]:
        """A task whose first step runs now, in the task (a call that finishes in its
        first step never waits for the event loop)."""
        return asyncio.Task(coro, loop=loop, eager_start=True)

else:  # pragma: no cover - eager tasks came with Python 3.12

    def _spawn(loop: asyncio.AbstractEventLoop, coro: Any) -> asyncio.Task[CallResult]:
        return loop.create_task(coro)


async def _on_asyncio(
    session: Session, batch: list[tuple[int, _Call]], results: list[CallResult | None]
) -> None:
    """Run the batch as plain asyncio tasks (much cheaper than a task group's); when the
    caller is cancelled, the calls are cancelled and awaited before it goes on."""
    loop = asyncio.get_running_loop()
    tasks: list[tuple[int, _Call, asyncio.Task[CallResult]]] = []
    try:
        for i, call in batch:
            task = _spawn(loop, session.call(call.name, call.arguments, call.call_id))
            tasks.append((i, call, task))
        waiting = [t for _, _, t in tasks if not t.done()]
        if waiting:
            await asyncio.wait(waiting)
    except BaseException:
        for _, _, task in tasks:
            task.cancel()
        if tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.wait([t for _, _, t in tasks])
        raise
    for i, call, task in tasks:
        if task.cancelled():  # by the tool itself: the caller was not cancelled
            results[i] = _raised(call, asyncio.CancelledError("its task was cancelled"))
            continue
        exc = task.exception()
        if exc is None:
            results[i] = task.result()
        elif isinstance(exc, Exception):
            results[i] = _raised(call, exc)
        else:
            raise exc


def _asyncio_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def run_batch(
    session: Session, calls: Iterable[CallLike], limit: int | None = None
) -> list[CallResult]:
    """Run ``calls`` (see :meth:`Session.call_many`); results in call order.

    Calls not started yet when the session closes are not started (``cancelled``)."""
    closed_before = session.closed
    given = [_normalise(c) for c in calls]
    results: list[CallResult | None] = [c if isinstance(c, CallResult) else None for c in given]
    batch = [(i, c) for i, c in enumerate(given) if isinstance(c, _Call)]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise UsageError(f"limit must be a whole number of at least 1 (or None), not {limit!r}")
    if limit is not None and len(batch) <= limit:
        limit = None  # the whole batch fits
    if len(batch) > 1 and _concurrent(session, [c for _, c in batch]):
        if not limit and _asyncio_running():
            await _on_asyncio(session, batch, results)
            return [r for r in results if r is not None]
        # ``limit`` workers (one per call without a limit) take the calls in order: no
        # task waits for a turn.
        waiting = iter(batch)

        async def work() -> None:
            for i, call in waiting:
                results[i] = await _one(session, call, closed_before)

        async with anyio.create_task_group() as tg:
            for _ in range(limit or len(batch)):
                tg.start_soon(work)
    else:
        for i, call in batch:
            results[i] = await _one(session, call, closed_before)
    return [r for r in results if r is not None]
