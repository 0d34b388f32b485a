"""A small pack served over MCP by the tests (``python -m toolweave.mcp --pack demo_pack:pack``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Progress, Tool, ToolError, hookimpl, tool
from toolweave.catalog import external_tool


@tool(kind=Kind.READ, read_only=True, blocking=False)
def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: What to repeat.
    """
    return text


@tool(blocking=False)
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return {"sum": a + b}


@tool(blocking=False)
def fail(message: str, kind: str = "execution_error") -> str:
    """Always fail with the message.

    Args:
        message: The failure text.
        kind: The error kind to fail with.
    """
    raise ToolError(ErrorKind(kind), f"failed on purpose: {message}")


@tool()
async def nap(ctx: Context, seconds: float) -> str:
    """Sleep, then say so; leaves a note in the workspace when cancelled.

    Args:
        seconds: How long to sleep.
    """
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        (ctx.session.workspace / "nap-cancelled").write_text("yes")
        raise
    return "rested"


@tool(blocking=False)
def toggle_extra(ctx: Context, on: bool) -> str:
    """Add or remove the external tool ``extra`` of this session.

    Args:
        on: Add it (true) or remove it (false).
    """
    session = ctx.session
    if not on:
        return "removed" if session.unregister_external("extra") else "absent"

    async def call(_ctx: Any, arguments: dict[str, Any]) -> str:
        return f"extra got {arguments['x']}"

    session.register_external(
        external_tool(
            id="extra",
            namespace="demo",
            description="An extra tool added at run time.",
            input_schema={
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            },
            call=call,
        )
    )
    return "added"


class CountArgs(BaseModel):
    steps: int = Field(3, description="How many progress steps.")


class Countdown(Tool[CountArgs, str]):
    """Counts down with a progress item per step."""

    id = "countdown"
    description = "Count down, reporting progress at each step."

    async def stream(self, ctx: Context, args: CountArgs) -> AsyncIterator[Progress | str]:
        for i in range(1, args.steps + 1):
            yield Progress(message=f"step {i}/{args.steps}", progress=i, total=args.steps)
        yield f"counted {args.steps}"


class Pack:
    """The pack object."""

    @hookimpl
    def register_tools(self, builder: Any) -> None:
        for t in (echo, add, fail, nap, toggle_extra, Countdown):
            builder.add(t)


pack = Pack()
