"""A hand-written MCP server whose messages are long lines.

Usage: ``long_lines.py [PREAMBLE_MIB]``: first writes one line of that many MiB of
filler (no JSON) on stdout, written in small pieces, then serves. Its tool ``big``
answers a text of ``size`` characters (a digit pattern), in one line.
"""

from __future__ import annotations

import sys
from typing import Any

from _jsonrpc import serve

preamble = int(sys.argv[1]) if len(sys.argv) > 1 else 0
for _ in range(preamble * 64):
    sys.stdout.write("x" * 16384)
    sys.stdout.flush()
if preamble:
    sys.stdout.write("\n")
    sys.stdout.flush()

BIG = {
    "name": "big",
    "description": "A long text.",
    "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}},
}


def handle(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return {"tools": [BIG]}
    if method == "tools/call":
        size = int(params.get("arguments", {}).get("size", 0))
        text = ("0123456789" * (size // 10 + 1))[:size]
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return None


serve("long-lines", handle)
