"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_agents._task import Task


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register the ``task`` tool."""
    builder.add(Task)
