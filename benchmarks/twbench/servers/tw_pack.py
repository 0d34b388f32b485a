"""A pack with the benchmark tool, for serving a toolweave session over MCP."""

from __future__ import annotations

from typing import Any

from toolweave import hookimpl, tool


@tool(id="join")
async def join(a: str, b: int, c: list[str] | None = None) -> str:
    """Join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    return f"{a}:{b}"


class _Pack:
    @hookimpl
    def register_tools(self, builder: Any) -> None:
        builder.add(join)


pack = _Pack()
"""The pack object (``twbench.servers.tw_pack:pack``)."""
