"""MCP: tool definitions as an MCP server lists them (``tools/list``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolweave.formats._frozen import Prefrozen
from toolweave.formats._schema import untitled

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition

__all__ = ["tool"]


def tool(d: ToolDefinition) -> dict[str, Any]:
    """An MCP ``Tool``: name, description, ``inputSchema`` (without titles) and a
    read-only hint (read-only, as listings are)."""
    return Prefrozen(
        name=d.name,
        description=d.description,
        inputSchema=untitled(d.input_schema),
        annotations=Prefrozen(readOnlyHint=d.read_only),
    )
