"""fastmcp: a ``FastMCP`` server's own tool-call path, in process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from twbench.frameworks._mcp_style import MCPStyleServer

__all__ = ["FastMCPServer"]


class FastMCPServer(MCPStyleServer):
    """``FastMCP().tool(fn)`` + ``FastMCP.call_tool``."""

    key: ClassVar[str] = "fastmcp"
    label: ClassVar[str] = "fastmcp"
    dists: ClassVar[tuple[str, ...]] = ("fastmcp", "fastmcp-slim")
    modules: ClassVar[tuple[str, ...]] = ("fastmcp",)
    sync_note: ClassVar[str] = "worker thread"
    build_path: ClassVar[str] = "FastMCP(); server.tool(fn) per function"
    definitions_path: ClassVar[str] = (
        "await FastMCP.list_tools() -> tool.to_mcp_tool() -> OpenAI function dict per tool"
    )
    call_path: ClassVar[str] = (
        "FastMCP.call_tool(name, json.loads(raw)) -> ToolResult (server's run path, with middleware)"
    )

    def _server(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from fastmcp import FastMCP

        server = FastMCP("bench")
        for fn in fns:
            server.tool(fn)
        return server

    def _mcp_tool(self, listed: Any) -> Any:
        return listed.to_mcp_tool()
