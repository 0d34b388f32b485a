"""The builder: tools are registered here, then frozen into an immutable ToolSet."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, final

from toolweave._erasure import ErasedTool, erase
from toolweave.registry import ExecutionRegistry
from toolweave.tool import Tool
from toolweave.toolset import ToolEntry, ToolSet

if TYPE_CHECKING:
    from toolweave.plugins import PackManager

__all__ = ["ToolSetBuilder"]

ToolLike = Tool[Any, Any] | type[Tool[Any, Any]] | ErasedTool


@final
class ToolSetBuilder:
    """Collects tools (from packs and from the host) and builds a :class:`ToolSet`.

    Packs receive the builder in their ``register_tools`` hook and call :meth:`add`.

    Example:
        >>> from toolweave import tool
        >>> @tool(blocking=False)
        ... def echo(text: str) -> str:
        ...     '''Repeat the text.'''
        ...     return text
        >>> builder = ToolSetBuilder()
        >>> _ = builder.add(echo)
        >>> builder.build().names
        ['echo']
    """

    def __init__(self, *, packs: PackManager | None = None) -> None:
        self.registry = ExecutionRegistry()
        self.packs = packs
        self.origin = "host"
        """Origin recorded for registrations; the pack loader sets it per pack."""

    def add(self, tool: ToolLike, *, origin: str | None = None) -> ErasedTool:
        """Register one tool (an instance, a class, or an already erased handle).

        Raises:
            DuplicateToolError: The id (and version) is already registered; names both origins.
            TypeError: The object is not a usable tool.
        """
        erased = tool if isinstance(tool, ErasedTool) else erase(tool, origin or self.origin)
        self.registry.register(erased)
        return erased

    def add_all(self, tools: Iterable[ToolLike], *, origin: str | None = None) -> None:
        """Register several tools."""
        for t in tools:
            self.add(t, origin=origin)

    def build(self) -> ToolSet:
        """Freeze every registered tool into a :class:`ToolSet`, in registration order.

        Each tool appears under its bare id, or under ``namespace:id`` where the bare
        id exists in several namespaces. Effective params are the params model's defaults.
        """
        entries: list[ToolEntry] = []
        counts: dict[str, int] = {}
        for fqid in self.registry:
            bare = fqid.split(":", 1)[1]
            counts[bare] = counts.get(bare, 0) + 1
        for fqid in self.registry:
            tool = self.registry.latest(fqid)
            assert tool is not None
            bare = tool.id
            name = bare if counts[bare] == 1 else f"{tool.namespace}__{bare}"
            params = tool.params_type() if tool.params_type is not None else None
            entries.append(ToolEntry(name, tool, params=params))
        return ToolSet(entries, packs=self.packs)
