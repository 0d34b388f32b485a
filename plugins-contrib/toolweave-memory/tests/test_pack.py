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


@pytest.mark.parametrize("link", [".toolweave", ".toolweave/memory.db"])
async def test_a_workspace_cannot_send_its_memories_elsewhere_through_a_link(
    link: str, workspace: Path, tmp_path: Path
) -> None:
    """A workspace (a cloned repository) whose .toolweave folder or memory.db is a
    symbolic link: every memory tool refuses with permission_denied and names the link,
    and the file the link points to (another workspace's memories) stays as it was."""
    other = tmp_path / "other"
    other.mkdir()
    other_session = load_packs(include=["memory"], strict=True).build().session(workspace=other)
    assert (await other_session.call("memory_save", {"content": "private note"})).error is None
    await other_session.aclose()
    before = (other / ".toolweave" / "memory.db").read_bytes()
    if link == ".toolweave":
        (workspace / ".toolweave").symlink_to(other / ".toolweave")
    else:
        (workspace / ".toolweave").mkdir()
        (workspace / link).symlink_to(other / ".toolweave" / "memory.db")
    session = load_packs(include=["memory"], strict=True).build().session(workspace=workspace)
    calls = [
        ("memory_save", {"content": "planted"}),
        ("memory_search", {"query": "private"}),
        ("memory_delete", {"ids": [1]}),
    ]
    for name, args in calls:
        result = await session.call(name, args)
        assert result.error is not None, result.text
        assert result.error.kind == "permission_denied", result.text
        assert "symbolic link" in result.text
        assert "private" not in result.text
    await session.aclose()
    assert (other / ".toolweave" / "memory.db").read_bytes() == before


async def test_memories_stay_out_of_the_repository_and_the_workspace_must_exist(
    workspace: Path, tmp_path: Path
) -> None:
    """The first memory makes .toolweave with a .gitignore (memories are private, not
    source); a session on a workspace that does not exist does not create it."""
    toolset = load_packs(include=["memory"], strict=True).build()
    saved = await toolset.session(workspace=workspace).call("memory_save", {"content": "x"})
    assert saved.error is None, saved.text
    assert (workspace / ".toolweave" / ".gitignore").read_text().splitlines()[-1] == "*"
    missing = tmp_path / "typo" / "ws"
    failed = await toolset.session(workspace=missing).call("memory_save", {"content": "x"})
    assert failed.error is not None
    assert "does not exist" in failed.text, failed.text
    assert not (tmp_path / "typo").exists()
