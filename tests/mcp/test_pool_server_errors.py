"""JSON-RPC errors a server answers with the codes the MCP SDK also uses for its own
failures (-32000 "connection closed", -32001 "request timed out"): they are the
server's errors, shown with its message and never retried; the server stays online.
Real server processes over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from toolweave import ErrorKind, ToolSetBuilder
from toolweave.mcp import MCPPool, ServerConfig

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "servers" / "error_server.py"


def _raw(count: Path, code: int, message: str, mode: str = "legacy") -> ServerConfig:
    args = [str(SERVER), "--count", str(count), "--code", str(code), "--message", message]
    return ServerConfig(command=sys.executable, args=args, mode=mode, timeout=5000)


def _requests(count: Path) -> int:
    return len(count.read_text().split()) if count.exists() else 0


@pytest.mark.parametrize("code", [-32000, -32001])
@pytest.mark.parametrize("streamed", [False, True], ids=["call", "stream"])
async def test_a_server_error_with_an_sdk_code_is_the_servers_and_is_not_retried(
    tmp_path: Path, code: int, streamed: bool
) -> None:
    """A read-only tool whose call the server answers with -32000 (the usual code of a
    server's own errors) or -32001: one request, an ``execution_error`` with the
    server's message, and the server stays online. Before, -32000 read as "the server
    closed the connection" (``unavailable``) and the call was sent three times, and
    -32001 as a ``timeout``."""
    count = tmp_path / "count"
    session = ToolSetBuilder().build().session()
    config = _raw(count, code, "upstream database rejected the query")
    async with MCPPool(session, {"db": config}) as pool:
        if streamed:
            items = [i async for i in session.stream("mcp__db__fail", {})]
            result = items[-1]
        else:
            result = await session.call("mcp__db__fail", {})
        assert result.error is not None
        assert result.error.kind is ErrorKind.EXECUTION_ERROR
        assert result.error.message == (
            "mcp__db__fail failed on MCP server 'db': upstream database rejected the query"
        )
        assert _requests(count) == 1
        status = pool.status("db")
        assert status.state.value == "online"
        assert status.error is None
        echoed = await session.call("mcp__db__echo", {"x": 1})
        assert echoed.error is None, echoed.text


async def test_a_server_that_says_the_connection_closed_is_taken_at_its_word(
    tmp_path: Path,
) -> None:
    """The SDK's own closed-connection error (``Connection closed``, no data), which an
    SDK server also answers the requests it holds with when it shuts down, is still
    ``unavailable``: the call may or may not have taken effect."""
    count = tmp_path / "count"
    session = ToolSetBuilder().build().session()
    config = _raw(count, -32000, "Connection closed")
    async with MCPPool(session, {"db": config}):
        result = await session.call("mcp__db__fail", {})
        assert result.error is not None
        assert result.error.kind is ErrorKind.UNAVAILABLE
        assert "closed the connection during the call" in result.error.message


def test_the_sdks_own_errors_are_told_from_the_servers() -> None:
    """How an error is told apart: the SDK's closed connection by its fixed wording (or
    a failed write), its read timeout by the ``TimeoutError`` it handles."""
    import anyio
    import mcp.types as types
    from mcp.shared.exceptions import MCPError
    from toolweave.mcp._convert import closed_by_sdk, sent_by_server

    closed = MCPError(types.CONNECTION_CLOSED, "Connection closed")
    assert closed_by_sdk(closed)
    assert not sent_by_server(closed)
    abandoned = MCPError(types.CONNECTION_CLOSED, "SSE stream ended without a response")
    assert closed_by_sdk(abandoned)
    generic = MCPError(types.CONNECTION_CLOSED, "upstream database rejected the query")
    assert not closed_by_sdk(generic)
    assert sent_by_server(generic)
    with_data = MCPError(types.CONNECTION_CLOSED, "Connection closed", {"retry": False})
    assert sent_by_server(with_data)

    def raised(code: int, cause: BaseException) -> MCPError:
        try:
            try:
                raise cause
            except type(cause):
                raise MCPError(code, "whatever the text") from None
        except MCPError as exc:
            return exc

    assert closed_by_sdk(raised(types.CONNECTION_CLOSED, anyio.BrokenResourceError()))
    assert not sent_by_server(raised(types.REQUEST_TIMEOUT, TimeoutError()))
    assert sent_by_server(MCPError(types.REQUEST_TIMEOUT, "the backend timed out"))
