"""`toolweave serve --plugins DIR` follows the folder while an MCP client (the official
SDK, over stdio) is connected: a new file's tool is listed and callable, a changed
schema is in the next listing, a reload that fails keeps the last good version (the
error on the server's stderr with file and line), a deleted file's tool leaves the
listing and is disabled in the center; clients get tools/list_changed."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from toolweave.center import Center, Status

from .conftest import DEADLINE, until, write
from .test_reload import LATER, V1, V2

pytestmark = pytest.mark.slow


def _console_script() -> str:
    found = shutil.which("toolweave", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the toolweave console script is not installed next to this Python")
    return found


def test_serve_follows_plugin_edits(tmp_path: Path) -> None:
    """Add, change, break and delete plugin files under a serving process."""
    pytest.importorskip("mcp", reason="the mcp SDK is not installed")
    import mcp.types as types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    folder = tmp_path / "plugins"
    note = write(folder / "note.py", V1)
    db = tmp_path / "center.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWEAVE_")}
    params = StdioServerParameters(
        command=_console_script(),
        args=["serve", "--plugins", str(folder), "--no-mcp", "--center", str(db), "--role", "dev"],
        cwd=str(tmp_path),
        env=env,
    )
    changes: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    async def talk(errlog: TextIO) -> None:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode="legacy", message_handler=on_message) as client:
            tools: dict[str, Any] = {}

            async def listing(check: Any, what: str) -> None:
                async def poll() -> bool:
                    tools.clear()
                    tools.update({t.name: t for t in (await client.list_tools()).tools})
                    return bool(check())

                end = anyio.current_time() + DEADLINE
                while not await poll():
                    if anyio.current_time() > end:
                        raise AssertionError(f"not within {DEADLINE:g} s: {what}")
                    await anyio.sleep(0.1)

            await listing(lambda: "note" in tools, "the plugin tool is served")
            later = write(folder / "later.py", LATER)
            await listing(lambda: "later" in tools, "the new file's tool is served")
            result = await client.call_tool("later", {"n": 4})
            assert "8" in "".join(getattr(c, "text", "") for c in result.content)

            write(note, V2)
            await listing(
                lambda: "tag" in tools["note"].input_schema["properties"],
                "the changed schema is served",
            )
            write(note, V2 + "\ndef oops(:\n")
            log = tmp_path / "serve.log"
            await until(lambda: "note.py:" in log.read_text(), "the broken reload is reported")
            result = await client.call_tool("note", {"text": "a", "tag": "kept"})
            assert not result.is_error
            assert "kept" in "".join(getattr(c, "text", "") for c in result.content)
            assert "tag" in tools["note"].input_schema["properties"]

            later.unlink()
            await listing(lambda: "later" not in tools, "the deleted file's tool is gone")
            assert changes, "no tools/list_changed was sent"

    with open(tmp_path / "serve.log", "w") as errlog:
        anyio.run(talk, errlog)
    log = (tmp_path / "serve.log").read_text()
    assert f"{note.resolve()}:{V2.strip().count(chr(10)) + 3}" in log.replace("\n", "")
    with Center.open(db) as center:
        state = center.tool("later")
        assert state.status is Status.DISABLED
        assert "later.py" in state.reason
        assert center.tool("note").record.source == f"dir:{folder.resolve()}"


def test_serve_http_with_plugins_stops_on_ctrl_c(tmp_path: Path) -> None:
    """Over HTTP with a plugin folder, Ctrl-C stops the server with exit 0 and no
    traceback (the plugin watcher runs beside it)."""
    import signal
    import subprocess

    folder = tmp_path / "plugins"
    write(folder / "note.py", V1.replace(', permission=["dev"]', ""))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWEAVE_")}
    with subprocess.Popen(
        [_console_script(), "serve", "--http", "127.0.0.1:0", "--plugins", str(folder), "--no-mcp"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "http://127.0.0.1:" in line, line
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
        rest = server.stderr.read()
    assert "Traceback" not in rest, rest
