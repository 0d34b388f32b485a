"""A ``FastMCP`` server with the benchmark tool, over stdio (run as a script)."""

from __future__ import annotations

from fastmcp import FastMCP


async def join(a: str, b: int, c: list[str] | None = None) -> str:
    """Join a word and a number.

    Args:
        a: A word.
        b: A number.
        c: Optional tags.
    """
    return f"{a}:{b}"


def make_server() -> FastMCP:
    """A ``FastMCP`` server holding the one tool."""
    server = FastMCP("bench-fastmcp")
    server.tool(join)
    return server


if __name__ == "__main__":
    make_server().run(transport="stdio", show_banner=False)
