"""MCP servers for W5: the same tool behind the SDK's server, fastmcp's, and toolweave's."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FASTMCP_SERVER", "SDK_SERVER"]

SDK_SERVER = Path(__file__).with_name("sdk_server.py")
"""Script: the ``mcp`` SDK's ``MCPServer`` with the tool, over stdio."""

FASTMCP_SERVER = Path(__file__).with_name("fastmcp_server.py")
"""Script: a ``FastMCP`` server with the tool, over stdio."""
