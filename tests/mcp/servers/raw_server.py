"""A hand-written MCP server (JSON-RPC lines on stdio, 2025 handshake) that answers what
the SDK's servers never send: numbers JSON cannot hold, and foreign ``isError`` results.

Tools: ``nan`` (structured output with NaN and Infinity, written by ``json.dumps``),
``refuse`` (``isError`` whose text merely starts like a toolweave kind), ``spoof``
(``isError`` with an unknown kind under toolweave's ``_meta`` key).
"""

from __future__ import annotations

from typing import Any

from _jsonrpc import serve

TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}}
    for name in ("nan", "refuse", "spoof")
]

CALLS: dict[str, dict[str, Any]] = {
    "nan": {
        "content": [{"type": "text", "text": "measured"}],
        "structuredContent": {"ratio": float("nan"), "values": [1.0, float("inf")]},
        "isError": False,
    },
    "refuse": {
        "content": [{"type": "text", "text": "permission_denied: not yours"}],
        "isError": True,
    },
    "spoof": {
        "content": [{"type": "text", "text": "spoofed"}],
        "isError": True,
        "_meta": {"toolweave/error_kind": "world_domination"},
    },
}


def handle(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") in CALLS:
        return CALLS[params["name"]]
    return None


serve("raw", handle)
