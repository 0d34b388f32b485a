"""The memory pack as a host sees it: discovery, kinds, read-only flags, no stray files."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import Kind, Resources, load_packs
from toolweave_memory import MemoryStore

pytestmark = pytest.mark.anyio


def test_entry_point_registers_three_memory_tools() -> None:
    """``load_packs(include=["memory"])`` finds the three tools, all of kind memory_search;
    only the search is read-only."""
    packs = load_packs(include=["memory"], strict=True)
    info = packs.packs["memory"]
    assert (info.status, info.dist, info.target) == (
        "loaded",
        "toolweave-memory",
        "toolweave_memory:pack",
    )
    toolset = packs.build()
    assert toolset.names == ["memory_save", "memory_search", "memory_delete"]
    assert {entry.definition.kind for entry in toolset} == {Kind.MEMORY_SEARCH.value}
    read_only = {entry.name: entry.definition.read_only for entry in toolset}
    assert read_only == {"memory_save": False, "memory_search": True, "memory_delete": False}


async def test_searching_an_empty_workspace_creates_nothing(workspace: Path) -> None:
    """A session that only searches leaves no database behind."""
    session = load_packs(include=["memory"], strict=True).build().session(workspace=workspace)
    result = await session.call("memory_search", {"query": "anything"})
    assert result.error is None, result.text
    assert result.text == "No memories found."
    assert not (workspace / ".toolweave").exists()


async def test_host_store_is_used(workspace: Path, tmp_path: Path) -> None:
    """A MemoryStore the host provides replaces the workspace's file."""
    host = Resources()
    store = MemoryStore(tmp_path / "elsewhere" / "mem.db")
    host.insert(store)
    toolset = load_packs(include=["memory"], strict=True).build()
    session = toolset.session(workspace=workspace, resources=host)
    saved = await session.call("memory_save", {"content": "kept elsewhere"})
    assert saved.error is None, saved.text
    assert store.count() == 1
    assert not (workspace / ".toolweave").exists()
