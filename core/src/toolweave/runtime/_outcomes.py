"""How a call ends: results built from failures, exceptions and stopped calls."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from toolweave.catalog._erasure import format_validation_error, model_text
from toolweave.errors import ErrorKind, MissingResourceError, ToolError
from toolweave.results import CallResult, Progress
from toolweave.runtime._deadline import Running

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
    "stop_error",
]

logger = logging.getLogger("toolweave")

TOOL_FAILURES: tuple[type[BaseException], ...] = (Exception, SystemExit)
"""What a tool may raise and the call end as its failure: ``sys.exit()`` in a tool
fails the call, not the host (as it fails a pack at load). The other ``BaseException``
subclasses steer whoever runs the call (``KeyboardInterrupt``, cancellation, the
``GeneratorExit`` of a close, a test framework's outcome) and pass through."""


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
    if isinstance(exc, ToolError):
        err = exc
    elif isinstance(exc, MissingResourceError):
        err = ToolError(ErrorKind.UNAVAILABLE, f"{entry.name} cannot run here: {exc}")
    elif isinstance(exc, NotImplementedError):
        err = ToolError(ErrorKind.UNIMPLEMENTED, f"{entry.name} is not implemented: {exc}")
    else:
        logger.error("tool %s raised", entry.tool.fqid, exc_info=exc)
        text = str(exc) or "no details"
        err = ToolError(
            ErrorKind.EXECUTION_ERROR, f"{entry.name} failed: {type(exc).__name__}: {text}"
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
