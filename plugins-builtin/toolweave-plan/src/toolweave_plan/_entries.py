"""Finding the pack's own tools in a session's set."""

from __future__ import annotations

from toolweave import ToolEntry, ToolSet

__all__ = ["entry_of"]


def entry_of(toolset: ToolSet, fqid: str) -> ToolEntry | None:
    """The set's entry of the tool ``fqid`` (``namespace:id``), or ``None``."""
    return next((entry for entry in toolset.entries if entry.tool.fqid == fqid), None)
