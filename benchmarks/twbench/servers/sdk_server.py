"""The ``mcp`` SDK's own server with the benchmark tool, over stdio (run as a script)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer


async def join(a: str, b: int, c: list[str] | None = None) -> str:
    """Join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    return f"{a}:{b}"


def make_server() -> MCPServer:
    """An ``MCPServer`` holding the one tool."""
    server = MCPServer("bench-sdk")
    server.add_tool(join)
    return server


if __name__ == "__main__":
    make_server().run()
