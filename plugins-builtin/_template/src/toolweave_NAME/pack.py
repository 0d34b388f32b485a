"""The ``NAME`` pack: the hooks toolweave calls through the ``toolweave.packs`` entry point."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_NAME._greet import Greet

__all__ = ["TOOLS", "register_tools"]

TOOLS = (Greet,)
"""The pack's tools, in listing order."""


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register every tool of the pack."""
    builder.add_all(TOOLS)
