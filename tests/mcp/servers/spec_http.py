"""A hand-written MCP server on streamable HTTP (JSON answers only, 2025 handshake)
that lists the tools a JSON file holds, read again at every ``tools/list``; every call
answers ``ok``.

Usage: ``spec_http.py SPEC_FILE``. Serves on a free loopback port and prints
``serving MCP on http://127.0.0.1:PORT/mcp`` on stdout once it listens.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SPEC = Path(sys.argv[1])


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request.get("method"), request.get("params") or {}
    result: dict[str, Any] | None = None
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "spec-http", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": json.loads(SPEC.read_text())["tools"]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    if result is None:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length))
        if "id" not in request:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps(answer(request)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"serving MCP on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
