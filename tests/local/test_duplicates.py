"""A name defined twice — by a plugin file and a pack, or by two plugin files — is an
alert for the later file naming both sources; the first definition stays in charge."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave.center import Center
from toolweave.local import PluginFolders

from .conftest import host_toolset, listed, write

pytestmark = pytest.mark.anyio

GREET = """
from toolweave.local import BaseLocalTool, register_tool

@register_tool
class Greet(BaseLocalTool):
    tool_name = "greet"
    tool_desc = "Greet from a plugin file."
    def run(self, params):
        return {"ok": True, "from": "plugin"}
"""


def test_a_folder_and_a_pack_with_one_name_under_a_center(tmp_path: Path) -> None:
    """The pack registered first keeps the name; the plugin file's alert carries the
    center's error naming pack:hostpack and dir:<folder>."""
    folder = tmp_path / "plugins"
    write(folder / "greet.py", GREET)
    with Center.open(tmp_path / "center.db") as center:
        session = host_toolset().session()
        center.attach(session)
        plugins = PluginFolders([folder], center=center)
        plugins.attach(session)
        alerts = plugins.load()
        assert len(alerts) == 1
        message = alerts[0].message
        assert "pack:hostpack" in message
        assert f"dir:{folder.resolve()}" in message
        assert alerts[0].file == (folder / "greet.py").resolve()
        assert center.tool("greet").record.source == "pack:hostpack"
        assert listed(session)["greet"]["description"].startswith("Greet someone")
        plugins.close()


def test_a_folder_and_a_pack_with_one_name_without_a_center(tmp_path: Path) -> None:
    """Without a center the session's own tool set tells the clash, naming both sources,
    whichever of load and attach comes first."""
    folder = tmp_path / "plugins"
    write(folder / "greet.py", GREET)
    session = host_toolset().session()
    plugins = PluginFolders([folder])
    assert plugins.load() == []  # no session yet: nothing to clash with
    late = plugins.attach(session)
    assert len(late) == 1
    assert "pack:hostpack" in late[0].message
    assert f"dir:{folder.resolve()}" in late[0].message
    assert listed(session)["greet"]["description"].startswith("Greet someone")
    assert plugins.alerts == late  # kept with the file's alerts

    other = host_toolset().session()
    second = PluginFolders([folder])
    second.attach(other)
    alerts = second.load()
    assert len(alerts) == 1
    assert "pack:hostpack" in alerts[0].message
    plugins.close()
    second.close()


def test_two_files_with_one_name(tmp_path: Path) -> None:
    """The first file (in path order) keeps the name; the second is reported naming
    both files."""
    folder = tmp_path / "plugins"
    write(folder / "a.py", GREET.replace("greet", "hello"))
    write(folder / "b.py", GREET.replace("greet", "hello").replace("plugin", "b"))
    session = host_toolset().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    alerts = plugins.load()
    assert len(alerts) == 1
    assert alerts[0].file.name == "b.py"
    assert "a.py" in alerts[0].message
    assert "b.py" in alerts[0].message
    assert plugins.tools["hello"].file.name == "a.py"
    plugins.close()


def test_two_folders_with_one_name_under_a_center(tmp_path: Path) -> None:
    """Two folders are two sources: the center's error names both."""
    first, second = tmp_path / "one", tmp_path / "two"
    write(first / "a.py", GREET.replace("greet", "hello"))
    write(second / "a.py", GREET.replace("greet", "hello"))
    with Center.open(tmp_path / "center.db") as center:
        plugins = PluginFolders([first, second], center=center)
        alerts = plugins.load()
        assert len(alerts) == 1
        assert f"dir:{first.resolve()}" in alerts[0].message
        assert f"dir:{second.resolve()}" in alerts[0].message
        plugins.close()
