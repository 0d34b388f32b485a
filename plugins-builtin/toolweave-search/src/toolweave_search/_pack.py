"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_search._glob import Glob
from toolweave_search._grep import Grep


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``grep`` and ``glob``."""
    builder.add(Grep)
    builder.add(Glob)
