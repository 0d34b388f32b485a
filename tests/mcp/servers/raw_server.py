"""A hand-written MCP server (JSON-RPC lines on stdio, 2025 handshake) that answers what
the SDK's servers never send: numbers JSON cannot hold, and foreign ``isError`` results.

Tools: ``nan`` (structured output with NaN and Infinity, written by ``json.dumps``),
``refuse`` (``isError`` whose text merely starts like a toolweave kind), ``spoof``
(``isError`` with an unknown kind under toolweave's ``_meta`` key).
"""

from __future__ import annotations

import json
import sys
from typing import Any

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


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") in CALLS:
        result = CALLS[params["name"]]
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


for line in sys.stdin:
    reply = answer(json.loads(line))
    if reply is not None:
        sys.stdout.write(json.dumps(reply) + "\n")  # allow_nan: NaN, Infinity as written
        sys.stdout.flush()
