"""Tool definitions rendered in the formats model providers expect.

Each format is a function from a neutral :class:`~toolweave.ToolDefinition` to the
provider's JSON; :func:`render` applies one to a whole listing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolweave.errors import UsageError

if TYPE_CHECKING:
    from toolweave.toolset import ToolDefinition

__all__ = ["FORMATS", "register_format", "render"]

Formatter = Callable[["ToolDefinition"], dict[str, Any]]


def _neutral(d: ToolDefinition) -> dict[str, Any]:
    return d.to_dict()


def _openai(d: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": d.name, "description": d.description, "parameters": d.input_schema},
    }


def _anthropic(d: ToolDefinition) -> dict[str, Any]:
    return {"name": d.name, "description": d.description, "input_schema": d.input_schema}


def _mcp(d: ToolDefinition) -> dict[str, Any]:
    return {"name": d.name, "description": d.description, "inputSchema": d.input_schema}


FORMATS: dict[str, Formatter] = {
    "neutral": _neutral,
    "openai": _openai,
    "anthropic": _anthropic,
    "mcp": _mcp,
}
"""Every known format by name; :func:`register_format` adds more."""


def register_format(name: str, formatter: Formatter) -> None:
    """Make ``formatter`` available as ``definitions(name)``."""
    FORMATS[name] = formatter


def render(definitions: Sequence[ToolDefinition], format: str) -> list[dict[str, Any]]:
    """Render ``definitions`` in ``format``.

    Raises:
        UsageError: The format is unknown; the message lists the known ones.
    """
    formatter = FORMATS.get(format)
    if formatter is None:
        raise UsageError(f"unknown definition format {format!r}; known: {', '.join(FORMATS)}")
    return [formatter(d) for d in definitions]
