"""edit_file needs a read tool in the set: the model must read before it edits."""

from __future__ import annotations

import pytest
import toolweave_fs
from toolweave import ConfigError, PackManager, ToolSetBuilder


def _builder() -> ToolSetBuilder:
    packs = PackManager(strict=True)
    packs.add("fs", toolweave_fs.pack)
    return packs.builder()


def test_edit_without_a_read_tool_fails_the_build() -> None:
    """Configuring edit_file without any tool of kind read is one clear dependency problem."""
    with pytest.raises(ConfigError) as caught:
        _builder().build({"tools": ["edit_file", "write_file"]})
    [issue] = caught.value.issues
    assert (issue.tag, issue.tool_id, issue.path) == ("dependency", "fs:edit_file", "tools[0]")
    assert issue.message == (
        "fs:edit_file requires `kind:read` (a tool of kind 'read'), which the configured "
        "set does not meet; configure what it needs or leave fs:edit_file out"
    )


def test_any_read_tool_meets_it() -> None:
    """read_file under another name, or any tool configured as kind read, will do."""
    renamed = _builder().build({"tools": ["edit_file", {"id": "read_file", "name": "Read"}]})
    assert renamed.names == ["edit_file", "Read"]
    rekinded = _builder().build({"tools": ["edit_file", {"id": "list_dir", "kind": "read"}]})
    assert rekinded.names == ["edit_file", "list_dir"]


def test_without_a_configuration_edit_stays_with_read() -> None:
    """The whole pack builds with edit_file; read-only mode drops it (it is not read-only)."""
    assert "edit_file" in _builder().build().names
    read_only = _builder().build({"mode": "read_only"})
    assert "edit_file" not in read_only.names
    assert "read_file" in read_only.names
