"""A scripted language server for the tests (run as ``python fake_server.py MODE``).

It answers ``initialize`` and ``shutdown``, and ``textDocument/documentSymbol`` as MODE
says:

- ``deep``: the first answer is nested 5,000 levels deep (too deep for a JSON parser),
  the later ones are one function ``ok`` (the server goes on working);
- ``tall``: an outline nested 40 levels deep (each level a class ``level-N``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def send_raw(body: bytes) -> None:
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def receive() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def symbol(name: str, children: list[Any] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "kind": 5, "range": RANGE, "selectionRange": RANGE}
    if children is not None:
        found["children"] = children
    return found


def deep_answer(ident: int, levels: int) -> bytes:
    """An answer nested ``levels`` symbols deep, written as text (``json.dumps`` would
    itself hit the recursion limit)."""
    head = '{"name": "a", "kind": 12, "range": ' + json.dumps(RANGE) + ', "children": ['
    nested = head * levels + "]}" * levels
    return ('{"jsonrpc": "2.0", "id": ' + str(ident) + ', "result": [' + nested + "]}").encode()


def main() -> None:
    mode = sys.argv[1]
    asked = 0
    while True:
        message = receive()
        if message is None:
            return
        if "id" not in message:
            if message.get("method") == "exit":
                return
            continue
        method, ident = message.get("method"), message["id"]
        if method == "initialize":
            capabilities = {"documentSymbolProvider": True}
            send({"jsonrpc": "2.0", "id": ident, "result": {"capabilities": capabilities}})
        elif method == "textDocument/documentSymbol":
            asked += 1
            if mode == "deep" and asked == 1:
                send_raw(deep_answer(ident, 5000))
                continue
            if mode == "tall":
                tree: list[Any] = []
                for level in range(40, 0, -1):
                    tree = [symbol(f"level-{level}", tree)]
                send({"jsonrpc": "2.0", "id": ident, "result": tree})
                continue
            send({"jsonrpc": "2.0", "id": ident, "result": [symbol("ok")]})
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": None})


if __name__ == "__main__":
    main()
