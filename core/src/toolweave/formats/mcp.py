"""MCP: tool definitions as an MCP server lists them (``tools/list``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolweave.formats._frozen import Prefrozen
from toolweave.formats._schema import untitled

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition

__all__ = ["hints", "tool"]

_CLOSED_SCOPES = frozenset({"workspace", "none"})
"""Scopes whose tools reach nothing outside the host's workspace: a closed world."""


def hints(read_only: bool, scope: str) -> dict[str, bool]:
    """The MCP tool annotations a tool's capabilities support, and no others (a hint
    left out is unknown).

    - ``readOnlyHint``: whether the tool changes nothing;
    - ``destructiveHint`` ``false`` and ``idempotentHint`` ``true`` for a read-only tool
      (nothing is destroyed and a repeat changes nothing); left out for the others,
      whose capabilities do not say which of their changes are destructive or
      repeatable;
    - ``openWorldHint``: ``true`` for scope ``network``; ``false`` for ``workspace`` and
      ``none``; left out for ``system`` (a command may reach anything) and other scopes.
    """
    out = {"readOnlyHint": read_only}
    if read_only:
        out["destructiveHint"] = False
        out["idempotentHint"] = True
    if scope == "network":
        out["openWorldHint"] = True
    elif scope in _CLOSED_SCOPES:
        out["openWorldHint"] = False
    return out


def tool(d: ToolDefinition) -> dict[str, Any]:
    """An MCP ``Tool``: name, description, ``inputSchema`` (without titles) and the
    annotations its capabilities support (:func:`hints`); read-only, as listings are."""
    return Prefrozen(
        name=d.name,
        description=d.description,
        inputSchema=untitled(d.input_schema),
        annotations=Prefrozen(hints(d.read_only, d.scope)),
    )
