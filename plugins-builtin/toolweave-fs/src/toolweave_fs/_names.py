"""Other tools of the session, named in messages as the model sees them."""

from __future__ import annotations

from toolweave import Context, Kind

__all__ = ["with_tool"]


def with_tool(ctx: Context, kind: Kind) -> str:
    """`` with <name>``, naming the session's tool of ``kind`` by its client name, or
    ``""`` when the set has none (the sentence then reads on without it)."""
    name = ctx.tool_name(kind)
    return f" with {name}" if name else ""
