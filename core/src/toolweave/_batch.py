"""Batches: the several tool calls of one model turn."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolweave.errors import ErrorKind, ToolError
from toolweave.stream import CallResult

if TYPE_CHECKING:
    from toolweave.session import Session

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
        entry = session._lookup(call.name)
        if entry is not None and not entry.tool.concurrency_safe:
            return False
    return True


async def _one(session: Session, call: _Call) -> CallResult:
    try:
        return await session.call(call.name, call.arguments, call.call_id)
    except Exception as exc:  # pragma: no cover - Session.call returns failures
        logger.exception("call %s raised out of the dispatcher", call.name)
        err = ToolError(ErrorKind.EXECUTION_ERROR, f"{call.name} failed: {exc}")
        return CallResult(None, err.message, err, call.call_id, None, call.name)


async def run_batch(
    session: Session, calls: Iterable[CallLike], limit: int | None = None
) -> list[CallResult]:
    """Run ``calls`` (see :meth:`Session.call_many`); results in call order."""
    given = [_normalise(c) for c in calls]
    results: list[CallResult | None] = [c if isinstance(c, CallResult) else None for c in given]
    batch = [(i, c) for i, c in enumerate(given) if isinstance(c, _Call)]
    if len(batch) > 1 and _concurrent(session, [c for _, c in batch]):
        gate = anyio.Semaphore(limit) if limit else None

        async def run(i: int, call: _Call) -> None:
            if gate is None:
                results[i] = await _one(session, call)
            else:
                async with gate:
                    results[i] = await _one(session, call)

        async with anyio.create_task_group() as tg:
            for i, call in batch:
                tg.start_soon(run, i, call)
    else:
        for i, call in batch:
            results[i] = await _one(session, call)
    return [r for r in results if r is not None]
