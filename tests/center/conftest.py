"""Fixtures for the registry center's tests: a small tool set with two behaviour
versions, a failing tool and a read-only one, over a real SQLite center file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolweave import ToolSet, ToolSetBuilder, tool
from toolweave.center import Center


@tool(id="echo", version="1", blocking=False)
def echo_v1(text: str) -> str:
    """Echo the text back (first behaviour)."""
    return f"v1:{text}"


@tool(id="echo", version="2", blocking=False)
def echo_v2(text: str) -> str:
    """Echo the text back (second behaviour)."""
    return f"v2:{text}"


@tool(blocking=False)
def boom() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool(blocking=False, read_only=True)
def look(path: str) -> str:
    """Read-only: report the path."""
    return path


@tool(blocking=False)
def write(path: str, text: str) -> str:
    """Changes things: report what would be written."""
    return f"{path}={text}"


def make_toolset() -> ToolSet:
    builder = ToolSetBuilder()
    for fn in (echo_v1, echo_v2, boom, look, write):
        builder.add(fn)
    return builder.build(
        {"tools": [{"id": "echo", "version": "1"}, {"id": "boom"}, {"id": "look"}, {"id": "write"}]}
    )


@pytest.fixture
def toolset() -> ToolSet:
    return make_toolset()


@pytest.fixture
def toolset_factory() -> Callable[[], ToolSet]:
    """Builds another set of the same tools (a second host process would)."""
    return make_toolset


@pytest.fixture
def only_v1() -> ToolSet:
    """A set holding only version 1 of ``echo``."""
    builder = ToolSetBuilder()
    builder.add(echo_v1)
    return builder.build()


@pytest.fixture
def center_path(tmp_path: Path) -> Path:
    """An SQLite center file (for the tests of the SQLite store itself)."""
    return tmp_path / "center.db"


@pytest.fixture(params=["sqlite", "redis"])
def center_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the center lives: every store runs the same tests."""
    if request.param == "sqlite":
        return str(tmp_path / "center.db")
    return str(request.getfixturevalue("redis_url"))


@pytest.fixture
def center(center_url: str) -> Iterator[Center]:
    c = Center.open(center_url)
    yield c
    c.close()


@pytest.fixture
def loader_check() -> Iterator[None]:
    """Pushed MCP entries checked with the MCP configuration loader's rules, the way the
    MCP layer installs them (``parse_servers`` on the ``mcpServers`` form: what a pool
    following the center reads the entries with)."""
    from toolweave.center._center import set_mcp_entry_check
    from toolweave.mcp import parse_servers

    def check(server_id: str, entry: Any) -> None:
        parse_servers({"mcpServers": {server_id: entry}}, source="the pushed entry")

    before = set_mcp_entry_check(check)
    try:
        yield
    finally:
        set_mcp_entry_check(before)
