"""How a call ends: results built from failures, exceptions and stopped calls."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolweave._threads import RaisedInThread
from toolweave.catalog._erasure import format_validation_error, model_text
from toolweave.errors import (
    ErrorKind,
    MissingResourceError,
    ToolError,
    describe_exception,
    exception_text,
)
from toolweave.results import CallResult, Progress
from toolweave.runtime._deadline import Running, stopping

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry

__all__ = [
    "NOTHING",
    "TOOL_FAILURES",
    "after_result",
    "error_result",
    "failure",
    "from_exception",
    "no_result",
    "steers",
    "stop_error",
]

logger = logging.getLogger("toolweave")

TOOL_FAILURES: tuple[type[BaseException], ...] = (Exception, SystemExit)
"""What a tool raises most often: caught first, the call ends as its failure
(``sys.exit()`` in a tool fails the call, not the host, as it fails a pack at load).
Every other ``BaseException`` ends the call the same way unless it :func:`steers` the
caller."""

_GENERATOR = inspect.CO_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def steers(exc: BaseException) -> bool:
    """Whether ``exc``, raised while a tool ran, belongs to whoever runs the call and
    must pass through instead of ending the call as the tool's failure.

    Those are ``KeyboardInterrupt``; the cancellation of the call itself (the event
    loop's cancelled exception while the task is really being cancelled: its cancel
    count is up, or a stop of a call it drives is under way; on trio, its
    ``Cancelled``); and the ``GeneratorExit`` of the call's coroutine being closed
    (raised at the catching frame's own ``await``, or thrown in at a suspension, so its
    traceback ends in a generator-based ``yield``). A group passes through when any of its exceptions does. Anything else
    a tool raises (``GeneratorExit`` or ``CancelledError`` of its own, its own
    ``BaseException`` classes) is the tool's failure.
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, GeneratorExit):
        tb = exc.__traceback__
        if tb is None or tb.tb_next is None:
            # Raised at the catching coroutine's own await: closing a suspended
            # coroutine closes what it awaits first, then raises in each frame above.
            return True
        last = tb.tb_next
        while last.tb_next is not None:
            last = last.tb_next
        return bool(last.tb_frame.f_code.co_flags & _GENERATOR)
    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no asyncio loop here: not the loop's cancellation
            return False
        return task is None or task.cancelling() > 0 or stopping(task)
    if isinstance(exc, BaseExceptionGroup):
        return any(steers(inner) for inner in exc.exceptions)
    return _cancelled_elsewhere(exc)


def _cancelled_elsewhere(exc: BaseException) -> bool:
    """Whether ``exc`` is the cancellation of an event loop other than asyncio's (trio's
    ``Cancelled``, which only a cancelled scope raises)."""
    import anyio

    try:
        cancelled = anyio.get_cancelled_exc_class()
    except Exception:  # no event loop anyio knows
        return False
    return cancelled is not asyncio.CancelledError and isinstance(exc, cancelled)


def failure(
    kind: ErrorKind, message: str, name: str, call_id: str | None, fqid: str | None = None
) -> CallResult:
    return CallResult(None, message, ToolError(kind, message), call_id, fqid, name)


def error_result(
    err: ToolError | ValidationError, entry: ToolEntry, call_id: str | None
) -> CallResult:
    """The result of a call that failed with ``err`` (a ``ValidationError``: its
    arguments were invalid)."""
    if isinstance(err, ValidationError):
        message = format_validation_error(err, entry.name, entry.to_client)
        err = ToolError(ErrorKind.INVALID_PARAMS, message)
    # A tool's message may carry what it was given (lone surrogates included).
    return CallResult(None, model_text(err.message), err, call_id, entry.tool.fqid, entry.name)


def from_exception(exc: BaseException, entry: ToolEntry, call_id: str | None) -> CallResult:
    """The result of a call whose tool raised ``exc`` (anything but what :func:`steers`
    the caller); the exception's message is read safely (see
    :func:`~toolweave.errors.describe_exception`)."""
    if isinstance(exc, RaisedInThread):
        exc = exc.raised
    if isinstance(exc, ToolError):
        err = exc
    elif isinstance(exc, MissingResourceError):
        err = ToolError(ErrorKind.UNAVAILABLE, f"{entry.name} cannot run here: {exc}")
    elif isinstance(exc, NotImplementedError):
        text = exception_text(exc)
        if text is None:
            text = "(its message could not be read)"
        err = ToolError(ErrorKind.UNIMPLEMENTED, f"{entry.name} is not implemented: {text}")
    else:
        logger.error("tool %s raised", entry.tool.fqid, exc_info=exc)
        err = ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"{entry.name} failed: {describe_exception(exc, empty='no details')}",
        )
    return error_result(err, entry, call_id)


def stop_error(running: Running | None, entry: ToolEntry, timeout: float) -> ToolError:
    if running is not None and running.cancelled:
        return ToolError(ErrorKind.CANCELLED, f"{entry.name} was cancelled")
    return ToolError(
        ErrorKind.TIMEOUT,
        f"{entry.name} did not finish within {timeout:g} s and was stopped; "
        "try a smaller request or a longer timeout",
    )


def no_result(name: str) -> ToolError:
    """A streaming tool that ended without yielding its output."""
    return ToolError(ErrorKind.EXECUTION_ERROR, f"{name} ended without a result")


def after_result(name: str, item: Any) -> ToolError:
    """A streaming tool that yielded ``item`` after its output."""
    what = "progress" if isinstance(item, Progress) else "a second result"
    return ToolError(ErrorKind.EXECUTION_ERROR, f"{name} yielded {what} after its result")


NOTHING: Any = object()
