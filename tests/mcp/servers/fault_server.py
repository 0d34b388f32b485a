"""An MCP server (official SDK) that misbehaves on request, for the pool's fault tests.

Flags: ``--garbage`` writes lines that are not JSON-RPC to the real stdout at start and
before every answer; ``--mute`` never answers anything (a server that hangs at start);
``--tag=X`` makes ``echo`` answer ``X<text>`` (to tell servers apart); ``--pid-file=PATH``
writes the process id there first.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

PID_FILE = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--pid-file=")), "")
if PID_FILE:  # before the slow imports: the test kills the server soon
    Path(PID_FILE).write_text(str(os.getpid()))

import anyio  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

GARBAGE = "--garbage" in sys.argv
TAG = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--tag=")), "")
if "--mute" in sys.argv:
    time.sleep(3600)

_wire = os.dup(1)  # the SDK points fd 1 at stderr while serving; keep the real pipe
counts = {"strict": 0, "hang_started": 0, "hang_cancelled": 0}
server = MCPServer("faults", version="1")


def _junk(text: str) -> None:
    if GARBAGE:
        os.write(_wire, f"{text}\n".encode())


@server.tool()
def echo(text: str) -> str:
    """Repeat the text (after the server's tag, if it has one)."""
    _junk("this line is not JSON-RPC")
    return f"{TAG}{text}"


@server.tool()
async def die(after: float = 0.1) -> str:
    """Exit the process in the middle of the call."""
    await anyio.sleep(after)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def flaky(marker: str) -> str:
    """Exit the first time (no marker file yet); answer on later calls (idempotent)."""
    path = Path(marker)
    if not path.exists():
        path.write_text("crashed once")
        os._exit(4)
    return "second time lucky"


@server.tool()
async def hang() -> str:
    """Never answer (until cancelled)."""
    counts["hang_started"] += 1
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        counts["hang_cancelled"] += 1
        raise
    return "unreachable"


@server.tool()
async def freeze(seconds: float) -> str:
    """Block the whole server (it stops answering anything, heartbeats included)."""
    time.sleep(seconds)  # noqa: ASYNC251 - blocking the event loop is the point
    return "thawed"


@server.tool()
async def burst(ctx: Context, n: int = 1000) -> str:
    """Send n tools/list_changed notifications (both protocol eras), then add a tool."""

    def after_burst() -> str:
        """Appears after a burst."""
        return "new"

    server.add_tool(after_burst)
    for _ in range(n):
        await ctx.notify_tools_changed()
        await ctx.session.send_tool_list_changed()
    return f"sent {n}"


@server.tool()
def strict(count: int, label: str) -> str:
    """Accept only an integer count and a label."""
    counts["strict"] += 1
    return f"{label}:{count}"


@server.tool()
def stats() -> dict[str, int]:
    """How often each counted tool ran."""
    return dict(counts)


@server.tool()
async def steps(ctx: Context, n: int = 3) -> str:
    """Report n progress steps, then finish."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"done {n}"


if __name__ == "__main__":
    _junk("garbage before the handshake")
    _junk("{not json either")
    server.run()
