"""The one tool every framework runs, and fresh copies of it under distinct names.

``(a: str, b: int, c: list[str] | None = None) -> str`` returning ``f"{a}:{b}"``, called with
``{"a": "hello", "b": 42, "c": ["x", "y"]}``. Three kinds: an async tool, a sync tool, and an
async tool that waits 10 ms (W6). :func:`fresh` copies a kind under a new name and docstring,
so that a workload that builds 1,000 tools builds 1,000 distinct functions.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

__all__ = [
    "ANSWER",
    "ARGS",
    "RAW_ARGS",
    "SLEEP_S",
    "FloorArgs",
    "Kind",
    "floor_adapter",
    "fresh",
    "fresh_many",
    "join_async",
    "join_sleep",
    "join_sync",
]

Kind = Literal["async", "sync", "sleep"]

RAW_ARGS = '{"a": "hello", "b": 42, "c": ["x", "y"]}'
"""The arguments as a model sends them: JSON text."""

ARGS: dict[str, Any] = {"a": "hello", "b": 42, "c": ["x", "y"]}
"""The same arguments, parsed."""

ANSWER = "hello:42"
"""What every framework must return before it is timed."""

SLEEP_S = 0.010
"""How long the W6 tool waits."""


async def join_async(a: str, b: int, c: list[str] | None = None) -> str:
    """Join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    return f"{a}:{b}"


def join_sync(a: str, b: int, c: list[str] | None = None) -> str:
    """Join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    return f"{a}:{b}"


async def join_sleep(a: str, b: int, c: list[str] | None = None) -> str:
    """Wait 10 ms, then join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    await asyncio.sleep(SLEEP_S)
    return f"{a}:{b}"


_KINDS: dict[str, Callable[..., Any]] = {
    "async": join_async,
    "sync": join_sync,
    "sleep": join_sleep,
}


def fresh(kind: Kind, name: str, doc: str | None = None) -> Callable[..., Any]:
    """A new function object of ``kind`` named ``name`` (same code, own identity).

    Args:
        kind: ``async``, ``sync`` or ``sleep``.
        name: The function's ``__name__`` (the tool name every framework derives).
        doc: The docstring (default: the kind's own).
    """
    base = _KINDS[kind]
    fn = types.FunctionType(
        base.__code__, base.__globals__, name, base.__defaults__, base.__closure__
    )
    fn.__kwdefaults__ = base.__kwdefaults__
    fn.__annotations__ = dict(base.__annotations__)
    fn.__doc__ = doc if doc is not None else base.__doc__
    fn.__qualname__ = name
    fn.__module__ = base.__module__
    return fn


def fresh_many(kind: Kind, count: int, prefix: str) -> list[Callable[..., Any]]:
    """``count`` distinct functions named ``{prefix}{i}``, each with its own docstring."""
    return [
        fresh(
            kind,
            f"{prefix}{i}",
            f"Join a word and a number (variant {i}).\n\n"
            "Args:\n    a: A word.\n    b: A number.\n    c: Optional tags.\n",
        )
        for i in range(count)
    ]


class FloorArgs(BaseModel):
    """The tool's arguments as one plain pydantic model (the floor's validator)."""

    a: str
    """A word."""
    b: int
    """A number."""
    c: list[str] | None = None
    """Optional tags."""


_FLOOR_ADAPTER: TypeAdapter[FloorArgs] | None = None


def floor_adapter() -> TypeAdapter[FloorArgs]:
    """The cached ``TypeAdapter`` the floor validates with."""
    global _FLOOR_ADAPTER
    if _FLOOR_ADAPTER is None:
        _FLOOR_ADAPTER = TypeAdapter(FloorArgs)
    return _FLOOR_ADAPTER
