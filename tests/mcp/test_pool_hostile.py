"""Servers that misbehave in ways that must not reach the host: processes left behind,
secrets and floods on stderr, schemas no tool can be called with."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import Session
from toolweave.mcp import MCPPool, ServerConfig

from .conftest import PY, SERVERS

pytestmark = pytest.mark.anyio

Eventually = Callable[..., Awaitable[None]]
ECHO = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}


def _spec_server(path: Path, spec: dict[str, Any], **config: Any) -> ServerConfig:
    """A stdio configuration of ``servers/spec_server.py`` doing what ``spec`` says."""
    path.write_text(json.dumps({"tools": [ECHO], **spec}))
    return ServerConfig(command=PY, args=[str(SERVERS / "spec_server.py"), str(path)], **config)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended: only its exit status is left


async def test_processes_a_server_started_end_with_it(
    tmp_path: Path, host_session: Callable[..., Session], eventually: Eventually
) -> None:
    pid_file = tmp_path / "child.pid"
    config = _spec_server(tmp_path / "spec.json", {"child_pid_file": str(pid_file)})
    session = host_session()
    try:
        async with MCPPool(session, {"s": config}) as pool:
            assert await pool.wait_online("s")
            child = int(pid_file.read_text())
            assert _alive(child)
        # The server exits at once when its stdin closes; its child is killed with it.
        await eventually(lambda: not _alive(child), within=10)
    finally:
        if pid_file.exists():
            _end_sleeper(int(pid_file.read_text()))


def _end_sleeper(pid: int) -> None:
    """Kill the server's ``sleep`` child if a failed test left it running."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if _alive(pid) and command.startswith(b"sleep\0"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_secrets_on_stderr_stay_out_of_model_errors_status_and_logs(
    tmp_path: Path,
    host_session: Callable[..., Session],
    eventually: Eventually,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-live-SECRET-777"
    spec = {
        "stderr": f"fatal: bad credentials API_KEY={secret} token=tok-Bearer-42",
        "exit": 1,
        "started_file": str(tmp_path / "started"),
        "tools": [ECHO, {"name": "exit", "inputSchema": {"type": "object"}}],
    }
    config = _spec_server(
        tmp_path / "spec.json",
        spec,
        env={"API_KEY": secret, "AUTH": "Bearer tok-Bearer-42", "DEBUG": "1"},
    )
    session = host_session()
    async with MCPPool(session, {"c": config}) as pool:
        assert (await session.call("mcp__c__echo", {})).text == "ok"
        await session.call("mcp__c__exit", {})  # it exits; started again, it fails
        await eventually(lambda: "fatal" in (pool.status("c").error or ""))
        status = pool.status("c")
        assert status.error is not None
        assert "fatal: bad credentials API_KEY=*** token=***" in status.error  # for operators
        result = await session.call("mcp__c__echo", {})
        assert result.error is not None
        assert result.error.kind == "unavailable"
        assert "the MCP server 'c' is offline" in result.text
        assert "fatal" not in result.text  # the server's stderr is not for the model
    assert caplog.records
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for text in (status.error, result.text, logged):
        assert secret not in text
        assert "tok-Bearer-42" not in text


async def test_a_reload_of_an_unreadable_file_reports_its_own_error(
    tmp_path: Path, host_session: Callable[..., Session], eventually: Eventually
) -> None:
    config = _spec_server(tmp_path / "spec.json", {})
    entry = {"command": config.command, "args": config.args}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcp_servers": {"s": entry}}))
    session = host_session()
    async with MCPPool(session, config_path=path, reload_interval=0.05) as pool:
        assert await pool.wait_online("s")
        path.write_text(json.dumps({"mcp_servers": {"s": {"command": 1}}}))
        await eventually(lambda: pool.reload_error is not None, within=10)
        path.write_bytes('{"mcp_servers": {"caf\xe9": {"command": "x"}}}'.encode("latin-1"))
        await eventually(lambda: "UTF-8" in str(pool.reload_error), within=10)
        assert "mcp__s__echo" in session.external  # the running configuration is kept


async def test_tools_whose_schema_cannot_be_used_are_skipped(
    tmp_path: Path, host_session: Callable[..., Session]
) -> None:
    infinite = {"type": "object", "properties": {"n": {"type": "number", "maximum": 1e999}}}
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    tools = [
        ECHO,
        {"name": "inf", "inputSchema": infinite},
        {"name": "badref", "inputSchema": dangling},
    ]
    config = _spec_server(tmp_path / "spec.json", {"tools": tools})
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        status = pool.status("s")
        assert status.tools == ("mcp__s__echo",)
        assert "JSON cannot carry" in status.skipped["inf"]
        assert "#/$defs/missing" in status.skipped["badref"]
        json.dumps(session.definitions(), allow_nan=False)  # the listing stays valid JSON


def _skip_logs(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    """The warnings that said the tool ``name`` was skipped."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelname == "WARNING" and f"tool {name!r} skipped" in r.getMessage()
    ]


async def test_a_tool_whose_input_schema_is_no_object_schema_is_skipped_not_its_server(
    tmp_path: Path, host_session: Callable[..., Session], caplog: pytest.LogCaptureFixture
) -> None:
    tools = [
        ECHO,
        {"name": "text", "inputSchema": {"type": "string"}},
        {"name": "list", "inputSchema": {"type": "array", "items": {"type": "integer"}}},
        {"name": "shapeless", "inputSchema": {"items": {"type": "string"}}},
        {"name": "nullable", "inputSchema": {"type": ["object", "null"]}},
        {"name": "numbers", "inputSchema": [1, 2]},
        {"name": "bare"},
    ]
    config = _spec_server(tmp_path / "spec.json", {"tools": tools})
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s")
        status = pool.status("s")
        assert status.state == "online"
        assert status.tools == ("mcp__s__echo",)
        assert set(status.skipped) == {"text", "list", "shapeless", "nullable", "numbers", "bare"}
        assert status.skipped["text"] == (
            "invalid input schema: inputSchema.type: Input should be 'object' (got 'string')"
        )
        assert "inputSchema.type: Field required" in status.skipped["shapeless"]
        assert "inputSchema: Field required" in status.skipped["bare"]
        assert (await session.call("mcp__s__echo", {})).text == "ok"
        json.dumps(session.definitions(), allow_nan=False)
    assert _skip_logs(caplog, "text") == [
        f"MCP server 's': tool 'text' skipped: {status.skipped['text']}"
    ]


@pytest.fixture
def spec_http(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """``servers/spec_http.py`` listing the tools of a spec file the test writes: the
    file, and the server's URL. Killed at the end."""
    spec = tmp_path / "spec-http.json"
    spec.write_text(json.dumps({"tools": [ECHO]}))
    proc = subprocess.Popen(
        [PY, str(SERVERS / "spec_http.py"), str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving MCP on http://127.0.0.1:" in line, line
        yield spec, line.rsplit(" ", 1)[1].strip()
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


async def test_over_http_too_a_tool_whose_schema_is_no_object_schema_is_skipped(
    spec_http: tuple[Path, str], host_session: Callable[..., Session]
) -> None:
    spec, url = spec_http
    text = {"name": "text", "inputSchema": {"type": "string"}}
    spec.write_text(json.dumps({"tools": [ECHO, text]}))
    session = host_session()
    async with MCPPool(session, {"h": ServerConfig(type="http", url=url)}) as pool:
        assert await pool.wait_online("h")
        status = pool.status("h")
        assert status.tools == ("mcp__h__echo",)
        assert "inputSchema.type: Input should be 'object'" in status.skipped["text"]
        assert (await session.call("mcp__h__echo", {})).text == "ok"


async def test_tools_with_unusable_properties_required_or_names_are_skipped(
    tmp_path: Path, host_session: Callable[..., Session]
) -> None:
    tools = [
        ECHO,
        {"name": "props", "inputSchema": {"type": "object", "properties": ["a", "b"]}},
        {"name": "prop", "inputSchema": {"type": "object", "properties": {"a": "string"}}},
        {"name": "req", "inputSchema": {"type": "object", "required": "a"}},
        {"name": "reqs", "inputSchema": {"type": "object", "required": [1]}},
        {"name": 7, "inputSchema": {"type": "object"}},
        "not a tool",
        {"name": "out", "inputSchema": {"type": "object"}, "outputSchema": {"type": "string"}},
    ]
    config = _spec_server(tmp_path / "spec.json", {"tools": tools})
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s")
        status = pool.status("s")
        assert status.tools == ("mcp__s__echo",)
        assert status.skipped == {
            "props": "invalid input schema: inputSchema.properties: Input should be a valid "
            "dictionary",
            "prop": "invalid input schema: inputSchema.properties.a.dict[str,any]: Input "
            "should be a valid dictionary (got 'string'); inputSchema.properties.a.bool: "
            "Input should be a valid boolean, unable to interpret input (got 'string')",
            "req": "invalid input schema: inputSchema.required: Input should be a valid list "
            "(got 'a')",
            "reqs": "invalid input schema: inputSchema.required.0: Input should be a valid "
            "string (got 1)",
            "tools[5]": "invalid tool definition: name: Input should be a valid string (got 7)",
            "tools[6]": "invalid tool definition: (the tool): Input should be a valid "
            "dictionary or instance of Tool (got 'not a tool')",
            "out": "invalid tool definition: outputSchema.type: Input should be 'object' "
            "(got 'string')",
        }
        assert (await session.call("mcp__s__echo", {})).text == "ok"


async def test_a_tool_with_an_empty_name_is_skipped(
    tmp_path: Path, host_session: Callable[..., Session]
) -> None:
    tools = [ECHO, {"name": "", "inputSchema": {"type": "object"}}]
    config = _spec_server(tmp_path / "spec.json", {"tools": tools})
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s")
        status = pool.status("s")
        assert status.tools == ("mcp__s__echo",)
        assert status.skipped == {"": "invalid tool definition: the name is empty"}


async def test_a_skipped_tool_listed_again_unchanged_is_neither_said_nor_counted_again(
    tmp_path: Path,
    host_session: Callable[..., Session],
    eventually: Eventually,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    config = _spec_server(
        tmp_path / "spec.json", {"tools": [ECHO, {"name": "badref", "inputSchema": dangling}]}
    )
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s")
        version, syncs = pool.version, pool.status("s").syncs
        for more in (1, 2):
            pool.refresh("s")
            await eventually(lambda more=more: pool.status("s").syncs >= syncs + more)
        assert pool.version == version  # nothing changed, so nobody is told of a change
        assert "badref" in pool.status("s").skipped
    assert len(_skip_logs(caplog, "badref")) == 1


async def test_a_tool_whose_schema_turns_bad_leaves_and_comes_back_alone(
    tmp_path: Path,
    host_session: Callable[..., Session],
    eventually: Eventually,
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = {"name": "calc", "inputSchema": {"type": "object"}}
    bad = {"name": "calc", "inputSchema": {"type": "number"}}
    spec = tmp_path / "spec.json"
    config = _spec_server(spec, {"tools": [ECHO, good]})
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s")
        assert pool.status("s").tools == ("mcp__s__calc", "mcp__s__echo")

        async def sync() -> None:
            syncs = pool.status("s").syncs
            pool.refresh("s")
            await eventually(lambda: pool.status("s").syncs > syncs)

        spec.write_text(json.dumps({"tools": [ECHO, bad]}))
        await sync()
        await sync()  # listed again unchanged: skipped, said once
        status = pool.status("s")
        assert status.state == "online"
        assert status.tools == ("mcp__s__echo",)
        assert "got 'number'" in status.skipped["calc"]
        assert len(_skip_logs(caplog, "calc")) == 1
        spec.write_text(json.dumps({"tools": [ECHO, good]}))
        await sync()
        status = pool.status("s")
        assert status.tools == ("mcp__s__calc", "mcp__s__echo")
        assert status.skipped == {}


async def test_a_flood_on_stderr_is_cut_back_to_its_end(
    tmp_path: Path, host_session: Callable[..., Session], eventually: Eventually
) -> None:
    pid_file = tmp_path / "server.pid"
    spec = {"stderr_mb": 12, "stderr": "the last words", "pid_file": str(pid_file)}
    config = _spec_server(tmp_path / "spec.json", spec)
    session = host_session()
    async with MCPPool(session, {"s": config}) as pool:
        assert await pool.wait_online("s", within=30)
        stderr = Path(f"/proc/{pid_file.read_text()}/fd/2")  # the server's stderr file
        await eventually(lambda: stderr.stat().st_size <= 4 * 1024 * 1024, within=10)
        assert (await anyio.Path(stderr).read_bytes()).rstrip().endswith(b"the last words")
        assert (await session.call("mcp__s__echo", {})).text == "ok"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
async def test_starting_a_stdio_server_marks_the_host_not_dumpable(
    tmp_path: Path, host_session: Callable[..., Session]
) -> None:
    """A stdio server runs as the host's user: before it starts, the host is marked not
    dumpable, so the server cannot read the host's /proc/<pid>/environ or memory."""
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE 1, as an ordinary process starts
    config = _spec_server(tmp_path / "spec.json", {"tools": [ECHO]})
    async with MCPPool(host_session(), {"s": config}) as pool:
        assert await pool.wait_online("s")
        assert prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE
