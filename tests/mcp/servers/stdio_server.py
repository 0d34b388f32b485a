"""toolweave's server over stdio with a tool that reads stdin and prints to stdout;
after the client hangs up it writes what fds 0 and 1 look like to the file in argv[1]."""

from __future__ import annotations

import json
import os
import stat
import sys

import anyio
from toolweave import ToolSetBuilder, tool
from toolweave.mcp import serve_stdio


@tool(blocking=False)
def stray(text: str) -> str:
    """Print ``text`` to stdout and read stdin, as careless tool code might.

    Args:
        text: What to print.
    """
    print(text, flush=True)
    return f"read {len(sys.stdin.read())} characters"


async def main() -> None:
    builder = ToolSetBuilder()
    builder.add(stray)
    await serve_stdio(builder.build().session())


if __name__ == "__main__":
    anyio.run(main)
    report = {
        "stdin_blocking": os.get_blocking(0),
        "stdout_blocking": os.get_blocking(1),
        "stdin_is_pipe": stat.S_ISFIFO(os.fstat(0).st_mode),
        "stdout_is_pipe": stat.S_ISFIFO(os.fstat(1).st_mode),
    }
    partial = f"{sys.argv[1]}.partial"
    with open(partial, "w") as out:
        json.dump(report, out)
    os.replace(partial, sys.argv[1])  # the test sees the whole report or none
