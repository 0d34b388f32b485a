"""MCP server entries pushed to the registry center: a pool that follows the center
connects to them, their tools join the session under the source ``mcp:<server>``, the
center's flags apply to them, and removing the entry drops them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import CenterError, ErrorKind, Session
from toolweave.center import Center
from toolweave.mcp import MCPPool

from .conftest import DEMO_ARGS, DEMO_ENV, PY

pytestmark = pytest.mark.anyio

Eventually = Callable[..., Awaitable[None]]


def _listed(session: Session) -> set[str]:
    return {d["function"]["name"] for d in session.definitions()}


async def test_a_pushed_server_joins_follows_flags_and_leaves(
    tmp_path: Path, host_session: Callable[..., Session], eventually: Eventually
) -> None:
    center = Center.open(tmp_path / "center.db", poll_interval=0.05)
    session = host_session(workspace=tmp_path)
    center.attach(session)
    try:
        async with MCPPool(session, center=center) as pool:
            center.push_mcp_server(
                "demo", {"command": PY, "args": DEMO_ARGS, "env": DEMO_ENV}, actor="ops"
            )
            await eventually(lambda: "mcp__demo__add" in _listed(session), within=30)
            result = await session.call("mcp__demo__add", {"a": 2, "b": 3})
            assert result.error is None
            assert center.tool("mcp__demo__add").record.source == "mcp:demo"
            # The center's flags apply to the pushed server's tools like any others.
            center.disable(source="mcp:demo", reason="maintenance")
            assert "mcp__demo__add" not in _listed(session)
            refused = await session.call("mcp__demo__add", {"a": 2, "b": 3})
            assert refused.error is not None
            assert refused.error.kind is ErrorKind.UNAVAILABLE
            center.enable(source="mcp:demo")
            assert center.remove_mcp_server("demo", actor="ops")
            await eventually(lambda: "mcp__demo__add" not in _listed(session), within=30)
            assert "demo" not in pool.servers
            changes = [c.outcome for c in center.audit(type="change", tool="mcp:demo")]
            assert changes == ["remove_mcp", "push_mcp"]
    finally:
        center.close()


def test_bad_entries_are_refused(tmp_path: Path) -> None:
    with Center.open(tmp_path / "center.db") as center:
        with pytest.raises(CenterError, match="needs a 'command'"):
            center.push_mcp_server("x", {"args": []})
        with pytest.raises(CenterError, match="server id"):
            center.push_mcp_server("bad id!", {"command": "x"})
        bad: Any = ["not", "a", "mapping"]
        with pytest.raises(CenterError):
            center.push_mcp_server("x", bad)
        assert center.mcp_servers() == {}
