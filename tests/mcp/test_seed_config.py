"""The registry center design's ``.mcp_servers.json``, loaded as written: ``command`` as
a list, ``permission`` as a role list, ``heartbeat_interval`` in seconds, ``timeout`` in
milliseconds, ``group`` feeding the center; mcp-server-time and toolweave's own server
stand in for its commands."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import ConfigError, Session
from toolweave.center import Center
from toolweave.mcp import MCPPool, load_servers, parse_servers

from .conftest import PY

pytestmark = pytest.mark.anyio

Eventually = Callable[..., Awaitable[None]]


def seed_file(folder: Path, demo_url: str) -> Path:
    """The design's example, with our stand-ins for its commands and URL."""
    path = folder / ".mcp_servers.json"
    path.write_text(
        json.dumps(
            {
                "mcp_servers": {
                    "file_server": {
                        "type": "stdio",
                        "command": [PY, "-m", "mcp_server_time", "--local-timezone", "UTC"],
                        "group": "mcp_file",
                        "permission": ["admin"],
                        "auto_reconnect": True,
                        "heartbeat_interval": 10,
                    },
                    "order_server": {
                        "type": "http",
                        "url": demo_url,
                        "group": "mcp_order",
                        "permission": ["user", "admin"],
                        "timeout": 5000,
                    },
                }
            }
        )
    )
    return path


def test_the_design_form_reads_with_its_meanings(tmp_path: Path) -> None:
    servers = load_servers(seed_file(tmp_path, "http://127.0.0.1:8002/mcp/v1"))
    files, orders = servers["file_server"], servers["order_server"]
    assert (files.command, files.args[:2]) == (PY, ["-m", "mcp_server_time"])
    assert (files.group, files.roles, files.permission) == ("mcp_file", ("admin",), "auto")
    assert files.heartbeat_interval == 10_000  # 10 seconds
    assert (orders.type, orders.url, orders.timeout_s) == (
        "http",
        "http://127.0.0.1:8002/mcp/v1",
        5.0,
    )
    assert (orders.group, orders.roles) == ("mcp_order", ("user", "admin"))
    assert orders.poll_interval == 60_000
    assert orders.heartbeat_interval == 10_000


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"command": "x", "heartbeat_interval": 0.05}, "heartbeat_interval", "in seconds"),
        ({"command": "x", "heartbeat_interval": 10_000}, "heartbeat_interval", "got 10000"),
        ({"command": "x", "heartbeat_interval": "10"}, "heartbeat_interval", "seconds"),
        ({"command": []}, "command", "program and its arguments"),
        ({"command": ["python", 3]}, "command", "program and its arguments"),
        ({"command": "x", "permission": ["admin", ""]}, "permission", "role names"),
        ({"command": "x", "permission": "everyone"}, "permission", ""),
    ],
)
def test_absurd_design_values_are_refused(entry: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_servers({"mcp_servers": {"s": entry}})
    issue = caught.value.issues[0]
    assert issue.path == f"mcp_servers.s.{field}"
    assert words in issue.message


def test_unknown_top_level_keys_are_an_error() -> None:
    with pytest.raises(ConfigError, match="unknown top-level key `mcp_server`"):
        parse_servers({"mcp_servers": {"s": {"command": "x"}}, "mcp_server": {}})
    both = parse_servers(
        {"mcp_servers": {"a": {"command": ["x"]}}, "mcpServers": {"b": {"command": "y"}}}
    )
    assert sorted(both) == ["a", "b"]


async def test_the_design_file_feeds_the_center(
    tmp_path: Path,
    demo_http: str,
    host_session: Callable[..., Session],
    eventually: Eventually,
) -> None:
    """Both servers connect; their tools join the center with their group and role
    whitelist, so a ``user`` session sees the order server's tools and not the
    admin-only file server's, and a group disable takes one server's tools away."""
    path = seed_file(tmp_path, demo_http)
    center = Center.open(tmp_path / "center.db", poll_interval=0.05)
    user = host_session(workspace=tmp_path)
    admin = host_session(workspace=tmp_path)
    center.attach(user, role="user")
    center.attach(admin, role="admin")
    try:
        async with (
            MCPPool(user, config_path=path, center=center) as pool,
            MCPPool(admin, config_path=path, center=center),
        ):
            assert {s.state.value for s in pool.servers.values()} == {"online"}

            def listed(session: Session) -> set[str]:
                return {d["function"]["name"] for d in session.definitions()}

            await eventually(lambda: "mcp__order_server__add" in listed(user), within=30)
            time_tools = {n for n in pool.tools if n.startswith("mcp__file_server__")}
            assert time_tools
            assert not time_tools & listed(user)
            assert time_tools <= listed(admin)
            state = center.tool(sorted(time_tools)[0])
            assert (state.groups, state.roles, state.record.source) == (
                ("mcp_file",),
                ("admin",),
                "mcp:file_server",
            )
            refused = await user.call(sorted(time_tools)[0], {"timezone": "UTC"})
            assert refused.error is not None
            assert refused.error.kind.value == "permission_denied"
            center.disable(group="mcp_order", reason="orders are down")
            assert "mcp__order_server__add" not in listed(user)
            assert "mcp__order_server__add" not in listed(admin)
    finally:
        center.close()


async def test_hot_reload_adds_retires_and_restores_a_server(
    tmp_path: Path,
    demo_http: str,
    host_session: Callable[..., Session],
    eventually: Eventually,
) -> None:
    """Editing the file adds a server (its tools registered in the center), removing it
    marks its tools offline in the center (kept, audited), adding it back enables them."""
    path = tmp_path / ".mcp_servers.json"
    entry = {"type": "http", "url": demo_http, "group": "mcp_order"}
    path.write_text(json.dumps({"mcp_servers": {}}))
    center = Center.open(tmp_path / "center.db", poll_interval=0.05)
    session = host_session(workspace=tmp_path)
    center.attach(session)
    name = "mcp__orders__add"

    def listed() -> set[str]:
        return {d["function"]["name"] for d in session.definitions()}

    try:
        async with MCPPool(session, config_path=path, center=center, reload_interval=0.1):
            path.write_text(json.dumps({"mcp_servers": {"orders": entry}}))
            await eventually(lambda: name in listed(), within=30)
            assert center.tool(name).groups == ("mcp_order",)
            path.write_text(json.dumps({"mcp_servers": {}}))
            await eventually(lambda: name not in listed(), within=30)
            state = center.tool(name)
            assert state.status.value == "offline"
            assert "removed from the configuration" in state.reason
            path.write_text(json.dumps({"mcp_servers": {"orders": entry}}))
            await eventually(lambda: name in listed(), within=30)
            assert center.tool(name).status.value == "enabled"
            trail = [e.outcome for e in center.audit(type="change", tool=name)]
            assert trail[:2] == ["enable", "offline"]
    finally:
        center.close()
