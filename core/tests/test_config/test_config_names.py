"""A client name never changes silently: tools of two origins that share a bare id are a
build error naming both, unless the configuration names them apart."""

from __future__ import annotations

import pytest
from toolweave import ConfigError, ToolSetBuilder, load_packs, tool

PACK_ORIGIN = "pack fs (toolweave-fs 0.1.0)"


@tool(blocking=False)
def read_file(path: str) -> str:
    """The host's own read_file.

    Args:
        path: A path.
    """
    return f"host:{path}"


@tool(id="read_file", namespace="fs", blocking=False)
def pack_read_file(path: str) -> str:
    """A pack's read_file.

    Args:
        path: A path.
    """
    return f"pack:{path}"


@pytest.fixture
def builder() -> ToolSetBuilder:
    """A pack's fs:read_file, and the host's main:read_file."""
    builder = ToolSetBuilder()
    builder.add(pack_read_file, origin=PACK_ORIGIN)
    builder.add(read_file)
    return builder


def test_same_bare_id_from_host_and_pack_fails_the_build(builder: ToolSetBuilder) -> None:
    """Without a configuration the build fails, naming both tools and both origins."""
    with pytest.raises(ConfigError) as info:
        builder.build()
    [issue] = info.value.issues
    assert issue.tag == "duplicate_name"
    assert issue.actual == "read_file"
    assert issue.expected == ["fs:read_file", "main:read_file"]
    assert PACK_ORIGIN in issue.message
    assert "from host" in issue.message
    assert "`name`" in issue.message


def test_configuring_both_without_names_fails_too(builder: ToolSetBuilder) -> None:
    """Listing both tools without a name is the same error, at the second entry."""
    issues = builder.validate({"tools": ["fs:read_file", "main:read_file"]})
    assert [(i.tag, i.path) for i in issues] == [("duplicate_name", "tools[1].name")]


def test_a_configured_name_resolves_the_clash(builder: ToolSetBuilder) -> None:
    """A configured name for one of them builds; the other keeps the bare id."""
    toolset = builder.build(
        {"tools": ["fs:read_file", {"id": "main:read_file", "name": "host_read_file"}]}
    )
    assert toolset.names == ["read_file", "host_read_file"]
    assert toolset["read_file"].tool.fqid == "fs:read_file"


def test_one_of_them_alone_keeps_the_bare_name(builder: ToolSetBuilder) -> None:
    """Configuring only one of the two gives it its bare id, not a namespaced name."""
    assert builder.build({"tools": ["main:read_file"]}).names == ["read_file"]


def test_a_host_tool_beside_the_real_fs_pack_fails_the_build() -> None:
    """The reported case: @tool read_file next to toolweave-fs's read_file."""
    builder = load_packs(include=["fs"], autoload=False).builder()
    builder.add(read_file)
    with pytest.raises(ConfigError) as info:
        builder.build()
    messages = [i.message for i in info.value.issues if i.tag == "duplicate_name"]
    assert len(messages) == 1
    assert "toolweave-fs" in messages[0]
    assert "host" in messages[0]
