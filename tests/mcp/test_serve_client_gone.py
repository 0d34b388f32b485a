"""``toolweave serve`` over stdio when the client goes away: it stops reading (closes
its end of the server's standard output) or dies with calls in flight. The server
ends quietly (exit 0, no error line, no hint about paths) and cancels the calls in
flight, whether or not its input ended too. Real server processes over real pipes."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

NAP = '''
import anyio
from toolweave import Context, tool


async def nap(ctx: Context, seconds: float) -> str:
    """Sleep, then say so; leaves a note in the workspace when cancelled.

    Args:
        seconds: How long to sleep.
    """
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        (ctx.session.workspace / "nap-cancelled").write_text("yes")
        raise
    (ctx.session.workspace / "nap-done").write_text("yes")
    return "rested"
'''

PLUGIN = NAP.replace("async def nap", "@register_tool()\n@tool()\nasync def nap").replace(
    "from toolweave import Context, tool",
    "from toolweave import Context, tool\nfrom toolweave.local import register_tool",
)

SERVE_STDIO = (
    NAP
    + """
import sys
from toolweave import ToolSetBuilder
from toolweave.mcp import serve

builder = ToolSetBuilder()
builder.add(tool()(nap))
serve(builder.build().session(workspace=sys.argv[1]))
"""
)


def _console_script() -> str:
    found = shutil.which("toolweave", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the toolweave console script is not installed next to this Python")
    return found


def _needs_fs() -> None:
    packs = {ep.name for ep in importlib.metadata.entry_points(group="toolweave.packs")}
    if "fs" not in packs:
        pytest.skip("toolweave-fs is not installed")


def _send(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None
    for message in messages:
        proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server wrote nothing"
    answer: dict[str, Any] = json.loads(line)
    return answer


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _ended(proc: subprocess.Popen[bytes], stderr: IO[bytes], within: float = 20.0) -> str:
    """Wait for the server to exit (a hang guard kills it); its standard error."""
    try:
        proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the server did not exit within {within} s of its client going away")
    stderr.seek(0)
    return stderr.read().decode(errors="replace")


def _quiet(err: str) -> None:
    assert "error:" not in err, err
    assert "hint:" not in err, err
    assert "Traceback" not in err, err


def test_serve_ends_quietly_when_the_client_stops_reading(tmp_path: Path) -> None:
    """The client closes its end of the server's standard output, then sends a ping:
    the server exits with 0 and no error. Before, it exited with 1 and ``error:
    Connection lost`` / ``hint: check the path and its permissions``."""
    _needs_fs()
    args = ["serve", "--packs", "fs", "--no-config", "--no-mcp", "--no-plugins"]
    with (tmp_path / "stderr").open("w+b") as stderr:
        proc = subprocess.Popen(
            [_console_script(), *args, "--workspace", str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        _send(proc, INITIALIZE)
        assert _answer(proc)["id"] == 0
        assert proc.stdout is not None
        assert proc.stdin is not None
        proc.stdout.close()  # the client stops reading
        try:
            _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            time.sleep(0.5)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the server is already gone
        err = _ended(proc, stderr)
    assert proc.returncode == 0, err
    _quiet(err)


def test_serve_cancels_the_calls_in_flight_when_the_client_dies(tmp_path: Path) -> None:
    """The client dies (both pipes closed) while a call runs: the server exits with 0
    at once, the call is cancelled, and nothing but the start line is on standard
    error. Before, it exited with 1 and an empty ``error:`` line with the path hint."""
    _needs_fs()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "napper.py").write_text(PLUGIN)
    args = ["serve", "--packs", "fs", "--no-config", "--no-mcp", "--plugins", str(plugins)]
    with (tmp_path / "stderr").open("w+b") as stderr:
        proc = subprocess.Popen(
            [_console_script(), *args, "--workspace", str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        _send(proc, INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert _answer(proc)["id"] == 0
        listed = _answer(proc)
        assert "nap" in [t["name"] for t in listed["result"]["tools"]], listed
        _send(proc, _call(2, "nap", {"seconds": 600}))
        time.sleep(0.5)
        assert proc.stdout is not None
        assert proc.stdin is not None
        proc.stdout.close()
        proc.stdin.close()
        err = _ended(proc, stderr)
    assert proc.returncode == 0, err
    _quiet(err)
    assert (tmp_path / "nap-cancelled").exists()
    assert not (tmp_path / "nap-done").exists()


def test_a_client_that_only_stops_reading_ends_the_server_at_once(tmp_path: Path) -> None:
    """The client closes its end of standard output and writes nothing more, with a
    call in flight and its own end of standard input still open: the server notices
    at once (nobody can read an answer any more), cancels the call and exits with 0.
    Before, it went on until the call's answer failed to be written, then failed."""
    (tmp_path / "serve_nap.py").write_text(SERVE_STDIO)
    with (tmp_path / "stderr").open("w+b") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(tmp_path / "serve_nap.py"), str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            _send(proc, INITIALIZE, INITIALIZED)
            assert _answer(proc)["id"] == 0
            _send(proc, _call(1, "nap", {"seconds": 600}))
            time.sleep(0.5)
            assert proc.stdout is not None
            proc.stdout.close()
            err = _ended(proc, stderr)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert (tmp_path / "nap-cancelled").exists()
    assert not (tmp_path / "nap-done").exists()
