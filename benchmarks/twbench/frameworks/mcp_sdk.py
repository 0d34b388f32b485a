"""The ``mcp`` SDK: an ``MCPServer``'s own tool-call path, in process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from twbench.frameworks._mcp_style import MCPStyleServer

__all__ = ["McpSdk"]


class McpSdk(MCPStyleServer):
    """``MCPServer.add_tool(fn)`` + ``MCPServer.call_tool``."""

    key: ClassVar[str] = "mcp"
    label: ClassVar[str] = "mcp SDK"
    dists: ClassVar[tuple[str, ...]] = ("mcp", "mcp-types")
    modules: ClassVar[tuple[str, ...]] = ("mcp",)
    sync_note: ClassVar[str] = "worker thread: anyio.to_thread"
    build_path: ClassVar[str] = "MCPServer(); server.add_tool(fn) per function"
    definitions_path: ClassVar[str] = (
        "await MCPServer.list_tools() -> OpenAI function dict per tool"
    )
    call_path: ClassVar[str] = (
        "MCPServer.call_tool(name, json.loads(raw)) -> CallToolResult (server's run path)"
    )

    def _server(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("bench")
        for fn in fns:
            server.add_tool(fn)
        return server
