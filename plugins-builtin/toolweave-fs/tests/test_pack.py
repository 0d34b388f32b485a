"""The fs pack as a host sees it: discovery, metadata, resources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import toolweave_fs
from toolweave import ErrorKind, Kind, Resources, Session, ToolSetBuilder, load_packs
from toolweave_fs import FileSystem

pytestmark = pytest.mark.anyio

EXPECTED_KINDS = {
    "read_file": Kind.READ,
    "write_file": Kind.WRITE,
    "edit_file": Kind.EDIT,
    "delete": Kind.DELETE,
    "move": Kind.MOVE,
    "list_dir": Kind.LIST_DIR,
}


async def test_entry_point_discovery_loads_the_pack(workspace: Path) -> None:
    """load_packs(include=["fs"]) finds the installed entry point and its six tools."""
    packs = load_packs(include=["fs"], strict=True)
    info = packs.packs["fs"]
    assert info.status == "loaded"
    assert info.dist == "toolweave-fs"
    assert info.target == "toolweave_fs:pack"
    toolset = packs.build()
    assert toolset.names == list(EXPECTED_KINDS)
    assert sorted(info.tools) == sorted(f"fs:{name}" for name in EXPECTED_KINDS)
    (workspace / "hello.txt").write_text("hi\n")
    result = await toolset.session(workspace=workspace).call("read_file", {"path": "hello.txt"})
    assert result.text == "     1\thi"


def test_kinds_read_only_and_descriptions(session: Session) -> None:
    """Every tool has its kind, read-only where it changes nothing, and says when not to use it."""
    definitions = {d.name: d for d in (e.definition for e in session.toolset)}
    for name, kind in EXPECTED_KINDS.items():
        definition = definitions[name]
        assert definition.kind == kind.value
        assert definition.read_only is (kind in {Kind.READ, Kind.LIST_DIR})
        assert "Do not use it" in definition.description
        assert "{" not in definition.description


def test_provide_resources_gives_each_session_a_filesystem(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """Each new session gets its own FileSystem over its workspace."""
    other = workspace / "other"
    other.mkdir()
    first = make_session(workspace)
    second = make_session(other)
    assert first.resources.require(FileSystem).root == workspace.resolve()
    assert second.resources.require(FileSystem).root == other.resolve()


async def test_host_filesystem_is_kept(workspace: Path) -> None:
    """A FileSystem the host provides wins over the pack's default."""
    jail = workspace / "jail"
    jail.mkdir()
    (workspace / "top.txt").write_text("x")
    host = Resources()
    host.insert(FileSystem(jail, fsync=False))
    packs = load_packs(include=["fs"], strict=True)
    session = packs.build().session(workspace=workspace, resources=host)
    assert session.resources.require(FileSystem).root == jail.resolve()
    result = await session.call("read_file", {"path": "../top.txt"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED


async def test_tools_work_without_the_pack_hooks(workspace: Path) -> None:
    """Tools registered directly (no provide_resources) build their FileSystem on demand."""
    builder = ToolSetBuilder()
    builder.add_all(toolweave_fs.pack.TOOLS)
    session = builder.build().session(workspace=workspace)
    assert FileSystem not in session.resources
    result = await session.call("write_file", {"path": "x.txt", "content": "y"})
    assert result.error is None
    assert FileSystem in session.resources
    assert (workspace / "x.txt").read_text() == "y"
