"""The pool against toolweave's own server (stdio and HTTP), and config hot reload."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import CallResult, ConfigError, Progress, Session
from toolweave.mcp import MCPPool, ServerConfig, ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_pool_over_toolweave_stdio_server(
    host_session: Callable[..., Session],
    demo_server: Callable[..., Any],
    eventually: Callable[..., Awaitable[None]],
) -> None:
    """Names, structured output, errors with their kinds, progress and run-time tool changes
    cross the wire."""
    session = host_session()
    async with MCPPool(session, {"demo": demo_server()}) as pool:
        assert pool.servers["demo"].protocol_version == "2026-07-28"
        assert (await session.call("mcp__demo__echo", {"text": "hi"})).text == "hi"
        assert (await session.call("echo", {"text": "hi"})).text == "local hi"
        assert session.external["mcp__demo__echo"].tool.read_only

        added = await session.call("mcp__demo__add", {"a": 1, "b": 2})
        assert added.output == {"sum": 3}
        failed = await session.call("mcp__demo__fail", {"message": "x"})
        assert failed.error is not None
        assert (failed.error.kind, failed.text) == ("execution_error", "failed on purpose: x")
        for kind in ("permission_denied", "not_found", "rate_limited"):
            denied = await session.call("mcp__demo__fail", {"message": "no", "kind": kind})
            assert denied.error is not None
            assert (denied.error.kind, denied.text) == (kind, "failed on purpose: no")

        items = [i async for i in session.stream("mcp__demo__countdown", {"steps": 2})]
        assert [i.message for i in items if isinstance(i, Progress)] == ["step 1/2", "step 2/2"]
        assert isinstance(items[-1], CallResult)
        assert items[-1].text == "counted 2"

        version = session.external_version
        await session.call("mcp__demo__toggle_extra", {"on": True})
        await eventually(lambda: "mcp__demo__extra" in session.external)
        assert session.external_version > version
        assert (await session.call("mcp__demo__extra", {"x": 4})).text == "extra got 4"
        await session.call("mcp__demo__toggle_extra", {"on": False})
        await eventually(lambda: "mcp__demo__extra" not in session.external)


async def test_pool_over_toolweave_http_server(
    host_session: Callable[..., Session], demo_http: str
) -> None:
    """A streamable-HTTP server on loopback joins the session like a stdio one; error kinds
    cross it in both protocol eras."""
    session = host_session()
    config = ServerConfig(type="http", url=demo_http, headers={"X-Test": "1"})
    legacy = ServerConfig(type="http", url=demo_http, mode="legacy")
    async with MCPPool(session, {"web": config, "old": legacy}) as pool:
        assert pool.servers["web"].state is ServerState.ONLINE
        assert pool.servers["old"].protocol_version == "2025-11-25"
        assert (await session.call("mcp__web__echo", {"text": "over http"})).text == "over http"
        assert (await session.call("mcp__old__add", {"a": 2, "b": 2})).output == {"sum": 4}
        for sid in ("web", "old"):
            denied = await session.call(
                f"mcp__{sid}__fail", {"message": "no", "kind": "permission_denied"}
            )
            assert denied.error is not None
            assert denied.error.kind == "permission_denied", sid
            assert denied.text == "failed on purpose: no"


async def test_server_file_is_followed(
    tmp_path: Path,
    host_session: Callable[..., Session],
    fault_server: Callable[..., Any],
    eventually: Callable[..., Awaitable[None]],
) -> None:
    """Editing the server file adds, removes and reconnects servers; a bad edit changes nothing."""

    def entry(tag: str, **extra: Any) -> dict[str, Any]:
        config = fault_server(f"--tag={tag}")
        return {"command": config.command, "args": config.args, **extra}

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcp_servers": {"a": entry("a:")}}))
    session = host_session()
    async with MCPPool(session, config_path=path, reload_interval=0.05) as pool:
        assert (await session.call("mcp__a__echo", {"text": "1"})).text == "a:1"

        path.write_text(json.dumps({"mcp_servers": {"b": entry("b:")}}))
        await eventually(lambda: "mcp__b__echo" in session.external, within=15)
        assert not any(n.startswith("mcp__a__") for n in session.external)
        assert (await session.call("mcp__b__echo", {"text": "2"})).text == "b:2"

        path.write_text(json.dumps({"mcp_servers": {"b": {"command": 1}}}))
        await eventually(lambda: pool.reload_error is not None, within=5)
        assert isinstance(pool.reload_error, ConfigError)
        assert pool.reload_error.issues[0].path == "mcp_servers.b.command"
        assert "mcp__b__echo" in session.external

        path.write_text(json.dumps({"mcp_servers": {"b": entry("b:", timeout=900)}}))
        await eventually(
            lambda: (
                "mcp__b__echo" in session.external
                and session.external["mcp__b__echo"].timeout == 0.9
            ),
            within=15,
        )
        current: ConfigError | None = pool.reload_error
        assert current is None
        assert (await session.call("mcp__b__echo", {"text": "3"})).text == "b:3"


async def test_foreign_results_nan_and_plain_errors(host_session: Callable[..., Session]) -> None:
    """A foreign server's NaN/Infinity output is refused as a typed error naming server and
    tool; its isError results stay execution_error, whatever their text or _meta say."""
    session = host_session()
    script = Path(__file__).parent / "servers" / "raw_server.py"
    config = ServerConfig(command=sys.executable, args=[str(script)], mode="legacy")
    async with MCPPool(session, {"raw": config}) as pool:
        assert pool.servers["raw"].state is ServerState.ONLINE
        nan = await session.call("mcp__raw__nan", {})
        assert nan.error is not None
        assert nan.error.kind == "execution_error"
        assert "nan on MCP server 'raw'" in nan.text
        assert "NaN or Infinity" in nan.text
        assert nan.output is None
        refused = await session.call("mcp__raw__refuse", {})
        assert refused.error is not None
        assert (refused.error.kind, refused.text) == (
            "execution_error",
            "permission_denied: not yours",
        )
        spoofed = await session.call("mcp__raw__spoof", {})
        assert spoofed.error is not None
        assert (spoofed.error.kind, spoofed.text) == ("execution_error", "spoofed")
