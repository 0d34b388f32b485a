"""A hand-written MCP server (JSON-RPC lines on stdio, 2025 handshake) that does what a
JSON file says, read again at every ``tools/list``: a test rewrites the file to play a
server that changes its tools.

Usage: ``spec_server.py SPEC_FILE``. The file holds ``{"tools": [...]}`` (listed as
written, so anything JSON can say, ``Infinity`` included) and optionally, read once at
start: ``"stderr_mb": n`` (that many MiB of filler lines on stderr), ``"stderr": text``
(written to stderr after them, before serving), ``"pid_file": path`` (write the server's pid there),
``"child_pid_file": path`` (start a ``sleep``
child in the server's process group and write its pid there), ``"exit": code`` (exit
before serving), ``"started_file": path`` (the first start creates it and skips
``stderr`` and ``exit``: a server that fails only when started again). A call of a tool
named ``exit`` ends the process; every other call answers ``ok``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _jsonrpc import serve

SPEC = Path(sys.argv[1])
start = json.loads(SPEC.read_text())
if start.get("pid_file"):
    Path(start["pid_file"]).write_text(str(os.getpid()))
if start.get("child_pid_file"):
    child = subprocess.Popen(
        ["sleep", "300"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    Path(start["child_pid_file"]).write_text(str(child.pid))
again = True
if start.get("started_file"):
    again = Path(start["started_file"]).exists()
    Path(start["started_file"]).touch()
for _ in range(int(start.get("stderr_mb", 0)) * 1024):
    sys.stderr.write("E" * 1023 + "\n")
if again and start.get("stderr"):
    sys.stderr.write(start["stderr"] + "\n")
sys.stderr.flush()
if again and "exit" in start:
    sys.exit(int(start["exit"]))


def handle(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return {"tools": json.loads(SPEC.read_text())["tools"]}
    if method == "tools/call":
        if params.get("name") == "exit":
            os._exit(3)
        return {"content": [{"type": "text", "text": "ok"}], "isError": False}
    return None


serve("spec", handle)
