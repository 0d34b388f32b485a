"""A pool that follows a registry center applies every valid pushed MCP server entry
and leaves out only an invalid one (reported in ``pool.center_error`` and the log):
one bad entry no longer freezes the servers of every pool that follows the center.
The bad entries are written to the store directly, as another version (or a center
that did not check them) may have stored them. Real server processes over stdio."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from toolweave import ToolSetBuilder
from toolweave.center import Center
from toolweave.errors import ConfigError
from toolweave.mcp import MCPPool

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "servers" / "error_server.py"
GOOD = {"command": sys.executable, "args": [str(SERVER)]}


def _store(center: Center, server_id: str, value: Any) -> None:
    """Write a pushed entry as it is, past any check of the center's own."""
    center.store.update_flag(
        "mcp", server_id, "config", lambda _: value, actor="old-version", reason="",
        action="push_mcp",
    )  # fmt: skip
    center.refresh()


async def _eventually(check: Callable[[], bool], within: float = 20.0) -> None:
    with anyio.fail_after(within):
        while not check():  # noqa: ASYNC110 - polling a plain condition
            await anyio.sleep(0.05)


def _states(pool: MCPPool) -> dict[str, str]:
    return {sid: status.state.value for sid, status in pool.servers.items()}


async def test_a_bad_entry_holds_up_no_removal_addition_or_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With an invalid entry stored (``args`` a string, as ``uvx``'s users write it),
    removing another server disconnects it and drops its tools, and a new server
    connects; only the bad entry is left out, with its problem in ``center_error``
    and one warning in the log. Before, the pool read all entries together and
    applied none of them: the removed server stayed online and callable."""
    caplog.set_level(logging.WARNING, logger="toolweave.mcp")
    center = Center.open(tmp_path / "center.db", poll_interval=0.05)
    session = ToolSetBuilder().build().session()
    try:
        center.push_mcp_server("good", GOOD)
        async with MCPPool(session, center=center) as pool:
            await _eventually(lambda: _states(pool) == {"good": "online"})
            _store(center, "typo", {"command": "uvx", "args": "mcp-server-time"})
            _store(center, "junk", "uvx mcp-server-time")  # not even a mapping: the center
            # itself leaves that row out (it names it in its health), so no pool sees it
            await _eventually(lambda: pool.center_error is not None)
            assert center.remove_mcp_server("good")
            await _eventually(lambda: "mcp__good__echo" not in session.external)
            assert "good" not in pool.servers
            gone = await session.call("mcp__good__echo", {"x": "still here"})
            assert gone.error is not None
            center.push_mcp_server("later", GOOD)
            await _eventually(lambda: _states(pool) == {"later": "online"})
            later = await session.call("mcp__later__echo", {"x": 1})
            assert later.error is None, later.text

            error = pool.center_error
            assert isinstance(error, ConfigError)
            paths = sorted(issue.path for issue in error.issues)
            assert paths == ["mcpServers.typo.args"]
            assert "junk" in (center.health().degraded or "")
            assert "typo" not in pool.servers
            assert "junk" not in pool.servers
            warnings = [
                r.getMessage()
                for r in caplog.records
                if r.name == "toolweave.mcp" and "left out" in r.getMessage()
            ]
            assert len(warnings) == 1, warnings  # said once, not at every look
            assert "mcpServers.typo.args" in warnings[0]

            # Fixed in the center: applied, and the report is cleared.
            _store(center, "typo", GOOD)
            center.remove_mcp_server("junk")
            await _eventually(lambda: _states(pool) == {"later": "online", "typo": "online"})
            assert pool.center_error is None
    finally:
        center.close()


async def test_a_server_whose_entry_turns_bad_keeps_its_last_valid_one(tmp_path: Path) -> None:
    """An entry changed into an invalid one is not applied: its server stays connected
    as it was (a bad edit does not take a working server down), and the problem is
    reported; the other servers follow the center as usual."""
    center = Center.open(tmp_path / "center.db", poll_interval=0.05)
    session = ToolSetBuilder().build().session()
    try:
        center.push_mcp_server("kept", GOOD)
        center.push_mcp_server("other", GOOD)
        async with MCPPool(session, center=center) as pool:
            await _eventually(lambda: _states(pool) == {"kept": "online", "other": "online"})
            _store(center, "kept", {"command": sys.executable, "args": 7})
            await _eventually(lambda: pool.center_error is not None)
            assert center.remove_mcp_server("other")
            await _eventually(lambda: "mcp__other__echo" not in session.external)
            assert _states(pool) == {"kept": "online"}
            assert pool.status("kept").connects == 1  # not reconnected
            result = await session.call("mcp__kept__echo", {"x": 1})
            assert result.error is None, result.text
            assert pool.center_error is not None
            assert [i.path for i in pool.center_error.issues] == ["mcpServers.kept.args"]
    finally:
        center.close()
