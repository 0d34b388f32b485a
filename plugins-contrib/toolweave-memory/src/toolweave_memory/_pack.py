"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import Resources, Session, ToolSetBuilder, hookimpl

from toolweave_memory._delete import MemoryDelete
from toolweave_memory._save import MemorySave
from toolweave_memory._scopes import provide_store
from toolweave_memory._search import MemorySearch


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``memory_save``, ``memory_search`` and ``memory_delete``."""
    builder.add(MemorySave)
    builder.add(MemorySearch)
    builder.add(MemoryDelete)


@hookimpl
def provide_resources(resources: Resources, session: Session) -> None:
    """The workspace's memory store (``.toolweave/memory.db``), unless the host gave one."""
    provide_store(resources, session)
