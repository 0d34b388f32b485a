"""How a call ends: results built from failures, exceptions and stopped calls."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from toolweave._deadline import Running
from toolweave.errors import ErrorKind, MissingResourceError, ToolError
from toolweave.stream import CallResult, Progress

if TYPE_CHECKING:
    from toolweave.toolset import ToolEntry

__all__ = ["NOTHING", "drain", "failure", "from_exception", "stop_error"]

logger = logging.getLogger("toolweave")


def failure(
    kind: ErrorKind, message: str, name: str, call_id: str | None, fqid: str | None = None
) -> CallResult:
    return CallResult(None, message, ToolError(kind, message), call_id, fqid, name)


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
    return CallResult(None, err.message, err, call_id, entry.tool.fqid, entry.name)


def stop_error(running: Running | None, entry: ToolEntry, timeout: float) -> ToolError:
    if running is not None and running.cancelled:
        return ToolError(ErrorKind.CANCELLED, f"{entry.name} was cancelled")
    return ToolError(
        ErrorKind.TIMEOUT,
        f"{entry.name} did not finish within {timeout:g} s and was stopped; "
        "try a smaller request or a longer timeout",
    )


NOTHING: Any = object()


async def drain(agen: Any, name: str) -> Any:
    """Run a tool's stream to its end without a consumer: the output, progress dropped."""
    output = NOTHING
    async for item in agen:
        if output is not NOTHING:
            # Close it here, inside whatever scopes the generator holds at its yield.
            await agen.aclose()
            what = "progress" if isinstance(item, Progress) else "a second result"
            raise ToolError(ErrorKind.EXECUTION_ERROR, f"{name} yielded {what} after its result")
        if not isinstance(item, Progress):
            output = item
    if output is NOTHING:
        raise ToolError(ErrorKind.EXECUTION_ERROR, f"{name} ended without a result")
    return output
