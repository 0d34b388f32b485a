"""A raw stdio MCP server for the tests of the MCP pool: newline-delimited JSON-RPC,
written by hand so that it can answer what the SDK's servers never would.

Tools (every one read-only, so that the pool would retry a call it may resend):

- ``echo``: answers its arguments as text;
- ``fail``: answers the call with the JSON-RPC error ``{"code": CODE, "message": TEXT}``
  given as ``--code CODE --message TEXT`` (default ``-32000``).

Each ``tools/call`` request received is counted: one line in the file ``--count PATH``.
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=int, default=-32000)
    parser.add_argument("--message", default="upstream database rejected the query")
    parser.add_argument("--count", default=None)
    args = parser.parse_args()

    def send(message: dict[str, object]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    read_only = {"readOnlyHint": True}
    tools = [
        {"name": "echo", "inputSchema": {"type": "object"}, "annotations": read_only},
        {"name": "fail", "inputSchema": {"type": "object"}, "annotations": read_only},
    ]
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        request_id, method = message.get("id"), message.get("method")
        if request_id is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call":
            if args.count:
                with open(args.count, "a") as file:
                    file.write("call\n")
            params = message.get("params") or {}
            if params.get("name") == "fail":
                error = {"code": args.code, "message": args.message}
                send({"jsonrpc": "2.0", "id": request_id, "error": error})
            else:
                text = json.dumps(params.get("arguments") or {})
                result = {"content": [{"type": "text", "text": text}]}
                send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
