"""The plumbing of the hand-written MCP servers: JSON-RPC lines on stdio, the 2025
handshake and ping answered, everything else asked of the server's own ``handle``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

Handle = Callable[[str, dict[str, Any]], dict[str, Any] | None]
"""``(method, params)`` → the result, or ``None`` for an unknown method."""


def serve(name: str, handle: Handle) -> None:
    """Answer requests from stdin until it closes (notifications get no answer)."""
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        method, params = request.get("method"), request.get("params") or {}
        result: dict[str, Any] | None
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": name, "version": "1"},
            }
        elif method == "ping":
            result = {}
        else:
            result = handle(str(method), params)
        if result is None:
            error = {"code": -32601, "message": f"no method {method}"}
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "error": error}
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")  # allow_nan: NaN, Infinity as written
        sys.stdout.flush()
