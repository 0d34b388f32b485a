"""The tools every framework runs, and fresh copies of them under distinct names.

The simple tool, ``(a: str, b: int, c: list[str] | None = None) -> str`` returning
``f"{a}:{b}"``, is called with ``{"a": "hello", "b": 42, "c": ["x", "y"]}``; it comes as an
async tool, a sync tool, and an async tool that waits 10 ms (W6). The realistic tool
(``rich``) takes 8 arguments the way real tools do: nested pydantic models, lists, an
enum, optionals and constraints (``Field(ge=…, max_length=…)``). :func:`fresh` copies a
kind under a new name and docstring, so that a workload that builds 1,000 tools builds
1,000 distinct functions.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import types
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "ANSWER",
    "ARGS",
    "RAW_ARGS",
    "RICH_ANSWER",
    "RICH_RAW",
    "SLEEP_S",
    "TODO_RAW",
    "TODO_RAW_NEXT",
    "Assignee",
    "FloorArgs",
    "Kind",
    "Location",
    "Priority",
    "RichArgs",
    "Role",
    "answer_for",
    "file_issue",
    "floor_adapter",
    "fresh",
    "fresh_many",
    "join_async",
    "join_sleep",
    "join_sync",
    "raw_for",
    "reply_for",
]

Kind = Literal["async", "sync", "sleep", "rich"]

RAW_ARGS = '{"a": "hello", "b": 42, "c": ["x", "y"]}'
"""The simple tool's arguments as a model sends them: JSON text."""

ARGS: dict[str, Any] = {"a": "hello", "b": 42, "c": ["x", "y"]}
"""The same arguments, parsed."""

ANSWER = "hello:42"
"""What every framework must return for the simple tool before it is timed."""

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


# -- the realistic tool ---------------------------------------------------------------


class Priority(StrEnum):
    """How urgent an issue is."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class Role(StrEnum):
    """What an assignee does on an issue."""

    OWNER = "owner"
    REVIEWER = "reviewer"
    WATCHER = "watcher"


class Location(BaseModel):
    """Where in the code an issue is."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=4096, description="File path, relative.")
    """File path, relative to the repository root."""
    line: int = Field(ge=1, description="1-based line number.")
    """1-based line number."""
    column: int | None = Field(default=None, ge=1, description="1-based column, if known.")
    """1-based column, if known."""


class Assignee(BaseModel):
    """A person on an issue."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, description="User name.")
    """User name."""
    role: Role = Field(default=Role.WATCHER, description="What they do on the issue.")
    """What they do on the issue."""


async def file_issue(
    title: Annotated[str, Field(min_length=1, max_length=200)],
    body: Annotated[str, Field(max_length=10_000)],
    priority: Priority,
    labels: Annotated[list[str], Field(max_length=10)],
    location: Location,
    assignees: Annotated[list[Assignee] | None, Field(max_length=5)] = None,
    due_in_days: Annotated[int | None, Field(ge=0, le=365)] = None,
    draft: bool = False,
) -> str:
    """File an issue against a place in the code.

    Args:
        title: One-line summary.
        body: What happens and how to reproduce it.
        priority: How urgent it is.
        labels: Labels to attach (at most 10).
        location: Where in the code.
        assignees: People on the issue (at most 5).
        due_in_days: Days until it is due (0 to 365), if there is a due date.
        draft: Keep the issue as a draft.
    """
    people = "+".join(f"{a.name}/{a.role.value}" for a in assignees or ())
    return (
        f"{title}|{priority.value}|{','.join(labels)}|{location.path}:{location.line}"
        f"|{people}|{due_in_days}|{draft}"
    )


RICH_ARGS: dict[str, Any] = {
    "title": "Crash when saving a file",
    "body": "Open a file, edit it, save: the editor exits with a traceback.",
    "priority": "high",
    "labels": ["bug", "editor"],
    "location": {"path": "src/app/editor.py", "line": 120, "column": 8},
    "assignees": [{"name": "ada", "role": "owner"}, {"name": "lin", "role": "reviewer"}],
    "due_in_days": 7,
    "draft": False,
}
"""The realistic tool's arguments, parsed."""

RICH_RAW = json.dumps(RICH_ARGS)
"""The realistic tool's arguments as a model sends them."""

RICH_ANSWER = (
    "Crash when saving a file|high|bug,editor|src/app/editor.py:120|ada/owner+lin/reviewer|7|False"
)
"""What every framework must return for the realistic tool."""


class RichArgs(BaseModel):
    """The realistic tool's arguments as one plain pydantic model (the floor's validator)."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200)
    """One-line summary."""
    body: str = Field(max_length=10_000)
    """What happens."""
    priority: Priority
    """How urgent."""
    labels: list[str] = Field(max_length=10)
    """Labels."""
    location: Location
    """Where."""
    assignees: list[Assignee] | None = Field(default=None, max_length=5)
    """People."""
    due_in_days: int | None = Field(default=None, ge=0, le=365)
    """Days until due."""
    draft: bool = False
    """A draft."""


TODO_RAW = json.dumps(
    {
        "todos": [
            {"content": "Write the parser", "status": "in_progress"},
            {"content": "Add tests for the parser", "status": "pending"},
            {"content": "Update the docs", "status": "pending"},
        ]
    }
)
"""The arguments of the plan pack's ``todo_write`` that W1's state-writing rows send."""

TODO_RAW_NEXT = TODO_RAW.replace(
    '"Write the parser", "status": "in_progress"', '"Write the parser", "status": "completed"'
).replace(
    '"Add tests for the parser", "status": "pending"',
    '"Add tests for the parser", "status": "in_progress"',
)
"""The next version of the list (first item done, second started): W1 alternates the
two, so every ``todo_write`` changes what is stored."""


_KINDS: dict[str, Callable[..., Any]] = {
    "async": join_async,
    "sync": join_sync,
    "sleep": join_sleep,
    "rich": file_issue,
}


def raw_for(kind: str) -> str:
    """The JSON arguments a call of a tool of ``kind`` sends."""
    return RICH_RAW if kind == "rich" else RAW_ARGS


def answer_for(kind: str) -> str:
    """The text every framework must answer for a tool of ``kind``."""
    return RICH_ANSWER if kind == "rich" else ANSWER


def reply_for(name: str, kind: str, call_id: str = "call_1") -> dict[str, Any]:
    """A provider reply as a host receives it: an OpenAI chat completion's message (a
    dict) with one tool call of ``name``."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": raw_for(kind)},
            }
        ],
    }


def fresh(kind: Kind, name: str, doc: str | None = None) -> Callable[..., Any]:
    """A new function object of ``kind`` named ``name`` (same code, own identity).

    Args:
        kind: ``async``, ``sync``, ``sleep`` or ``rich``.
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
    """``count`` distinct functions named ``{prefix}{i}``, each with its own docstring
    (the kind's summary line gets ``(variant i)``)."""
    summary, _, rest = inspect.cleandoc(_KINDS[kind].__doc__ or "").partition("\n")
    stem = summary.rstrip(".")
    return [fresh(kind, f"{prefix}{i}", f"{stem} (variant {i}).\n{rest}\n") for i in range(count)]


class FloorArgs(BaseModel):
    """The simple tool's arguments as one plain pydantic model (the floor's validator)."""

    a: str
    """A word."""
    b: int
    """A number."""
    c: list[str] | None = None
    """Optional tags."""


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def floor_adapter(kind: str = "async") -> TypeAdapter[Any]:
    """The cached ``TypeAdapter`` the floor validates a ``kind`` tool's arguments with."""
    model: type[BaseModel] = RichArgs if kind == "rich" else FloorArgs
    adapter = _ADAPTERS.get(model.__name__)
    if adapter is None:
        adapter = _ADAPTERS[model.__name__] = TypeAdapter(model)
    return adapter
