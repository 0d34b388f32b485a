"""toolweave's MCP server against the official SDK client: stdio and HTTP, both eras."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client
from toolweave import Progress, Session
from toolweave.catalog import external_tool
from toolweave.mcp import SessionServer

from .conftest import DEMO_ARGS, PY, SERVERS, serving_http

pytestmark = pytest.mark.anyio

ERAS = ["auto", "legacy"]


@asynccontextmanager
async def tool_list_changes(client: Client) -> AsyncIterator[anyio.Event]:
    """An event set by the next ``tools/list_changed``, in whichever era the client speaks."""
    changed = anyio.Event()
    if client.protocol_version == "2026-07-28":
        async with client.listen(tools_list_changed=True) as sub, anyio.create_task_group() as tg:

            async def first() -> None:
                async for _ in sub:
                    changed.set()
                    return

            tg.start_soon(first)
            yield changed
            tg.cancel_scope.cancel()
    else:
        yield changed


async def exercise(client: Client, legacy_seen: list[Any], workspace: Path | None) -> None:
    """List, call, progress, errors, list_changed and cancellation against the demo pack."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"echo", "add", "fail", "countdown", "toggle_extra", "nap"} <= set(tools)
    assert tools["echo"].description == "Repeat the text."
    assert tools["echo"].input_schema["required"] == ["text"]
    assert tools["echo"].input_schema["properties"]["text"]["type"] == "string"
    assert tools["echo"].annotations is not None
    assert tools["echo"].annotations.read_only_hint

    result = await client.call_tool("echo", {"text": "hi"})
    assert not result.is_error
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "hi"
    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"sum": 5}

    seen: list[tuple[float, float | None, str | None]] = []
    all_seen = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if len(seen) == 3:
            all_seen.set()

    counted = await client.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)
    assert isinstance(counted.content[0], types.TextContent)
    assert counted.content[0].text == "counted 3"
    with anyio.fail_after(5):  # progress callbacks run as tasks, maybe after the result
        await all_seen.wait()
    assert sorted(seen) == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]

    failed = await client.call_tool("fail", {"message": "x"})
    assert failed.is_error
    assert isinstance(failed.content[0], types.TextContent)
    assert failed.content[0].text == "execution_error: failed on purpose: x"
    assert failed.structured_content == {
        "kind": "execution_error",
        "message": "failed on purpose: x",
    }
    assert failed.meta is not None
    assert failed.meta["toolweave/error_kind"] == "execution_error"
    denied = await client.call_tool("fail", {"message": "no", "kind": "permission_denied"})
    assert denied.is_error
    assert isinstance(denied.content[0], types.TextContent)
    assert denied.content[0].text == "permission_denied: failed on purpose: no"
    assert denied.meta is not None
    assert denied.meta["toolweave/error_kind"] == "permission_denied"
    invalid = await client.call_tool("echo", {"text": 3})
    assert invalid.is_error
    assert invalid.structured_content is not None
    assert invalid.structured_content["kind"] == "invalid_params"
    unknown = await client.call_tool("nope", {})
    assert unknown.is_error
    assert unknown.structured_content is not None
    assert unknown.structured_content["kind"] == "not_found"

    for on in (True, False):
        before = len(legacy_seen)
        async with tool_list_changes(client) as changed:
            await client.call_tool("toggle_extra", {"on": on})
            with anyio.fail_after(5):
                if client.protocol_version == "2026-07-28":
                    await changed.wait()
                else:
                    while len(legacy_seen) == before:  # noqa: ASYNC110 - the handler appends
                        await anyio.sleep(0.01)
        names = {t.name for t in (await client.list_tools()).tools}
        assert ("extra" in names) is on
        if on:
            extra = await client.call_tool("extra", {"x": 7})
            assert isinstance(extra.content[0], types.TextContent)
            assert extra.content[0].text == "extra got 7"

    if workspace is not None:
        with anyio.move_on_after(0.5):
            await client.call_tool("nap", {"seconds": 30})
        with anyio.fail_after(5):
            while not (workspace / "nap-cancelled").exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
        (workspace / "nap-cancelled").unlink()


def _recorder(into: list[Any]) -> MessageHandlerFnT:
    async def handler(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            into.append(message)

    return handler


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_stdio_with_the_official_client(
    mode: str, tmp_path: Path, demo_server: Callable[..., Any]
) -> None:
    """Over stdio, the SDK client lists, calls, sees progress, errors and list_changed."""
    config = demo_server()
    params = StdioServerParameters(
        command=config.command, args=[*config.args, "--workspace", str(tmp_path)], env=config.env
    )
    seen: list[Any] = []
    async with Client(params, mode=mode, message_handler=_recorder(seen)) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        caps = client.server_capabilities.tools
        assert caps is not None
        assert caps.list_changed
        await exercise(client, seen, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_http_with_the_official_client(mode: str, demo_http: str) -> None:
    """Over streamable HTTP on loopback, the SDK client does the same in both eras."""
    seen: list[Any] = []
    async with Client(demo_http, mode=mode, message_handler=_recorder(seen)) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        caps = client.server_capabilities.tools
        assert caps is not None
        assert caps.list_changed
        await exercise(client, seen, None)


async def test_stdio_keeps_stray_output_off_the_wire_and_restores_the_streams(
    tmp_path: Path,
) -> None:
    """While serving on pipes, a tool's prints go to stderr and its reads see EOF; the
    process gets its standard streams back, blocking, when the client hangs up."""
    import sys

    report = tmp_path / "report.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).parent / "servers" / "stdio_server.py"), str(report)],
    )
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            for i in range(3):
                result = await client.call_tool("stray", {"text": f"stray-{i}"})
                assert isinstance(result.content[0], types.TextContent)
                assert result.content[0].text == "read 0 characters"
    with anyio.fail_after(10):
        while not report.exists():  # noqa: ASYNC110 - written whole (renamed into place)
            await anyio.sleep(0.02)
    assert json.loads(report.read_text()) == {
        "stdin_blocking": True,
        "stdout_blocking": True,
        "stdin_is_pipe": True,
        "stdout_is_pipe": True,
    }
    assert all(f"stray-{i}" in errors.read_text() for i in range(3))


def test_stdio_falls_back_to_the_sdk_transport_off_pipes(tmp_path: Path) -> None:
    """With stdin a regular file, the streams are left to the SDK's transport."""
    source = tmp_path / "input.txt"
    source.write_text("")
    code = (
        "import asyncio\n"
        "from toolweave.mcp._stdio import _Pipes\n"
        "async def main():\n"
        "    print(_Pipes.claim() is None)\n"
        "asyncio.run(main())\n"
    )
    with source.open() as stdin:
        done = subprocess.run(
            [sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True, check=True
        )
    assert done.stdout.strip() == "True"


# -- in process (fast): the mapping details --------------------------------------------


async def test_progress_without_numbers_still_counts_up(
    host_session: Callable[..., Session],
) -> None:
    """Progress items without a number become increasing MCP progress values."""
    session = host_session()

    async def lines(_ctx: Any, _args: dict[str, Any]) -> AsyncIterator[Any]:
        yield Progress(message="one")
        yield Progress(message="two")
        yield Progress(message="half", progress=5, total=10)
        yield "done"

    session.register_external(
        external_tool(
            id="lines",
            namespace="t",
            description="Lines.",
            input_schema={"type": "object"},
            stream=lines,
        )
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(SessionServer(session).server) as client:
        result = await client.call_tool("lines", {}, progress_callback=on_progress)
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "done"
    assert seen == [(1, None, "one"), (2, None, "two"), (5, 10, "half")]


async def test_listing_follows_external_tools(host_session: Callable[..., Session]) -> None:
    """The served list is the session's listing, rebuilt after external tools change."""
    session = host_session()
    served = SessionServer(session)

    async def call(_ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
        return {"got": args}

    async with Client(served.server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
        session.register_external(
            external_tool(
                id="ext",
                namespace="t",
                description="External.",
                input_schema={"type": "object", "properties": {"v": {"type": "integer"}}},
                call=call,
                read_only=True,
            ),
            name="ext",
        )
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["echo", "ext"]
        assert tools["ext"].annotations is not None
        assert tools["ext"].annotations.read_only_hint
        result = await client.call_tool("ext", {"v": 1})
        assert result.structured_content == {"got": {"v": 1}}
        session.unregister_external("ext")
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]


@pytest.mark.parametrize("mode", ERAS)
async def test_list_changed_reaches_in_process_clients(
    mode: str, host_session: Callable[..., Session]
) -> None:
    """Adding an external tool at run time notifies clients of both eras."""
    session = host_session()
    served = SessionServer(session, watch_interval=0.01)
    seen: list[Any] = []

    async def call(_ctx: Any, _args: dict[str, Any]) -> str:
        return "ok"

    async with anyio.create_task_group() as tg:
        tg.start_soon(served.watch)
        async with Client(served.server, mode=mode, message_handler=_recorder(seen)) as client:
            await client.list_tools()
            async with tool_list_changes(client) as changed:
                session.register_external(
                    external_tool(
                        id="late",
                        namespace="t",
                        description="Late.",
                        input_schema={"type": "object"},
                        call=call,
                    )
                )
                with anyio.fail_after(5):
                    while not (changed.is_set() or seen):  # noqa: ASYNC110
                        await anyio.sleep(0.01)
            assert "late" in {t.name for t in (await client.list_tools()).tools}
        tg.cancel_scope.cancel()


async def test_unknown_tools_and_closed_clients_do_not_break_the_server(
    host_session: Callable[..., Session],
) -> None:
    """An unknown tool is an error result; a notification to a gone client is dropped."""
    session = host_session()
    served = SessionServer(session)
    async with Client(served.server, mode="legacy") as client:
        result = await client.call_tool("missing", {})
        assert result.is_error
        await client.list_tools()
    await served.notify_tools_changed()  # the legacy client is gone: no exception
    async with Client(served.server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]


def test_cancelling_serve_http_is_clean_and_frees_the_port() -> None:
    """Cancelling ``serve_http`` from code while clients of both eras hold streams open
    returns without a traceback or an error line (asyncio's exit included), and the port
    can be served again at once."""
    script = Path(__file__).parent / "servers" / "cancel_http.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["returned", "returned", "served", "again"]
    assert "Traceback" not in done.stderr, done.stderr
    assert "ERROR" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("read_only", "scope", "hints"),
    [
        (
            True,
            "workspace",
            {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        ),
        (
            True,
            "network",
            {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": True,
            },
        ),
        (False, "none", {"readOnlyHint": False, "openWorldHint": False}),
        (False, "network", {"readOnlyHint": False, "openWorldHint": True}),
        (False, "system", {"readOnlyHint": False}),
        (False, "external", {"readOnlyHint": False}),
    ],
)
def test_annotations_claim_only_what_the_capabilities_say(
    read_only: bool, scope: str, hints: dict[str, bool]
) -> None:
    """Read-only tools are not destructive and are idempotent; the open world follows the
    scope; a hint the capabilities do not support is left out of the wire form."""
    from toolweave import Capabilities
    from toolweave.mcp._convert import annotations_for

    annotations = annotations_for(Capabilities(read_only=read_only, scope=scope), read_only)
    assert annotations.model_dump(by_alias=True, exclude_none=True) == hints


async def test_served_tools_carry_the_hints_of_their_capabilities() -> None:
    """A served session lists each tool with the hints of its capabilities, and a remote
    tool's ``openWorldHint`` becomes scope ``network`` when imported, so serving it again
    keeps the hint."""
    from toolweave import ToolSetBuilder, tool
    from toolweave.mcp import MCPPool, ServerConfig

    @tool(blocking=False, read_only=True, scope="network")
    def lookup(term: str) -> str:
        """Look a term up on the web. Not for local files.

        Args:
            term: What to look up.
        """
        return term

    @tool(blocking=False, read_only=False, scope="system")
    def run(command: str) -> str:
        """Run a command. Not for reading files.

        Args:
            command: The command line.
        """
        return command

    builder = ToolSetBuilder()
    builder.add(lookup)
    builder.add(run)
    served = SessionServer(builder.build().session())
    async with Client(served.server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["lookup"].annotations == types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
    )
    assert tools["run"].annotations == types.ToolAnnotations(read_only_hint=False)
    importer = ToolSetBuilder().build().session()
    async with MCPPool(importer, {"up": ServerConfig.in_process(served.server)}):
        assert importer.external["mcp__up__lookup"].tool.capabilities.scope == "network"
        assert importer.external["mcp__up__lookup"].tool.read_only
        assert importer.external["mcp__up__run"].tool.capabilities.scope == "external"
        again = {t.name: t.annotations for t in SessionServer(importer).tools()}
    assert again["mcp__up__lookup"] == tools["lookup"].annotations
    assert again["mcp__up__run"] == types.ToolAnnotations(read_only_hint=False)


def test_the_mcp_listing_of_a_session_carries_the_served_hints() -> None:
    """``session.definitions("mcp")`` says what the MCP server serves: the same hints
    for the same capabilities."""
    from toolweave import Capabilities, ToolSetBuilder, tool
    from toolweave.mcp._convert import annotations_for

    @tool(blocking=False, read_only=True, scope="network")
    def lookup(term: str) -> str:
        """Look a term up on the web. Not for local files.

        Args:
            term: What to look up.
        """
        return term

    @tool(blocking=False, scope="system")
    def run(command: str) -> str:
        """Run a command. Not for reading files.

        Args:
            command: The command.
        """
        return command

    builder = ToolSetBuilder()
    builder.add(lookup)
    builder.add(run)
    listed = {d["name"]: d["annotations"] for d in builder.build().session().definitions("mcp")}
    for name, read_only, scope in (("lookup", True, "network"), ("run", False, "system")):
        served = annotations_for(Capabilities(read_only=read_only, scope=scope), read_only)
        assert dict(listed[name]) == served.model_dump(by_alias=True, exclude_none=True)
    assert dict(listed["lookup"])["openWorldHint"] is True
    assert "openWorldHint" not in listed["run"]


# -- HTTP exposure: DNS rebinding and non-loopback addresses -----------------------------


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
"""A client's first message."""


def _worktree_env() -> dict[str, str]:
    """The demo pack's environment, keeping the code under test importable."""
    paths = [str(SERVERS), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _initialize(host: str, port: int, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request(
            "POST",
            "/mcp",
            json.dumps(INITIALIZE).encode(),
            {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_http_refuses_foreign_host_and_origin_on_every_loopback_address(
    host: str, tmp_path: Path
) -> None:
    """Whatever loopback address it is bound to, the server answers its own Host and
    localhost, and refuses a Host or an Origin naming another site (DNS rebinding)."""
    with serving_http(tmp_path, host, _worktree_env()) as url:
        port = urlsplit(url).port
        assert port is not None
        assert _initialize(host, port, {}) == 200
        assert _initialize(host, port, {"Host": f"localhost:{port}"}) == 200
        assert _initialize(host, port, {"Origin": f"http://{host}:{port}"}) == 200
        assert _initialize(host, port, {"Host": "evil.example:80"}) == 421
        assert _initialize(host, port, {"Host": f"attacker.example:{port}"}) == 421
        assert _initialize(host, port, {"Origin": "http://evil.example"}) == 403


def test_http_refuses_a_non_loopback_address_without_allow_remote(tmp_path: Path) -> None:
    """``--http 0.0.0.0:PORT`` is refused before anything listens, unless allowed."""
    done = subprocess.run(
        [PY, *DEMO_ARGS, "--http", "0.0.0.0:0", "--workspace", str(tmp_path)],
        capture_output=True,
        env=_worktree_env(),
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve MCP on 0.0.0.0" in done.stderr
    assert "--allow-remote" in done.stderr


def test_toolweave_serve_refuses_a_non_loopback_address(tmp_path: Path) -> None:
    """The ``toolweave serve`` command refuses ``--http 0.0.0.0:PORT`` without
    ``--allow-remote``."""
    from toolweave.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app,
        ["serve", "--http", "0.0.0.0:0", "--packs", "none", "--no-config", "--no-plugins",
         "--no-mcp", "--workspace", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--allow-remote" in result.output


def test_wildcard_addresses_allow_the_machine_names_and_loopback_only() -> None:
    """On ``0.0.0.0`` (served with ``allow_remote``) the allowed Hosts are the loopback
    names and this machine's names on the port, never any Host."""
    from toolweave.mcp._server import check_exposure, security_settings

    check_exposure("0.0.0.0", allow_remote=True)  # no error
    settings = security_settings("0.0.0.0", 8765)
    assert settings.enable_dns_rebinding_protection
    assert {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"} <= set(settings.allowed_hosts)
    assert all(host.endswith(":8765") for host in settings.allowed_hosts)
    assert "0.0.0.0:8765" not in settings.allowed_hosts
    assert set(settings.allowed_origins) == {f"http://{h}" for h in settings.allowed_hosts}


def _sse_result(response: Any) -> dict[str, Any]:
    """The JSON-RPC message of a POST's answer (an SSE stream or JSON)."""
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(next(d for d in data if d)))


def test_http_refuses_requests_whose_id_is_not_a_string_or_an_integer(tmp_path: Path) -> None:
    """Over HTTP a request whose id is null, a boolean, a fraction, an object or an
    array was taken for a notification: 202, no body, never run. It now gets 400 with
    a JSON-RPC error (-32600, id null); real notifications and responses stay 202,
    the body limit and the Host check still come first, and the session goes on."""
    import httpx2 as httpx

    headers = {"Accept": "application/json, text/event-stream"}
    with (
        serving_http(tmp_path, "127.0.0.1", _worktree_env()) as url,
        httpx.Client(timeout=30, headers=headers) as client,
    ):
        opened = client.post(url, json=INITIALIZE)
        assert opened.status_code == 200
        session = {
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }

        def post(message: Any, **extra: str) -> Any:
            return client.post(url, json=message, headers={**session, **extra})

        assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        expected = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid Request: the id must be a string or an integer",
            },
        }
        for bad in (None, True, 1.5, {}, []):
            answer = post({"jsonrpc": "2.0", "id": bad, "method": "tools/list"})
            assert answer.status_code == 400, (bad, answer.text)
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == expected
        bad_call = {"jsonrpc": "2.0", "id": None, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "x"}}}  # fmt: skip
        assert post(bad_call).status_code == 400
        chunked = client.post(  # sent in pieces (Transfer-Encoding: chunked): read whole
            url,
            content=iter([b'{"jsonrpc": "2.0", "id"', b": null, ", b'"method": "tools/list"}']),
            headers={**session, "Content-Type": "application/json"},
        )
        assert chunked.status_code == 400, chunked.text
        assert chunked.json() == expected
        # A notification (no "id") and a response (an error with id null) stay 202.
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 99, "reason": "none"}}  # fmt: skip
        assert post(cancel).status_code == 202
        response = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}}
        assert post(response).status_code == 202
        # The body limit (4 MiB) and the Host check answer before the id is looked at.
        bad_list = {"jsonrpc": "2.0", "id": None, "method": "tools/list"}
        padded = {**bad_list, "params": {"pad": "x" * (4 * 1024 * 1024)}}
        assert post(padded).status_code == 413
        assert post(bad_list, Host="evil.example:80").status_code == 421
        # The session still serves.
        echoed = post(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "still here"}},
            }
        )
        assert echoed.status_code == 200
        result = _sse_result(echoed)
        assert result["id"] == 9
        assert result["result"]["content"][0]["text"] == "still here"
        listed = _sse_result(post({"jsonrpc": "2.0", "id": "s", "method": "tools/list"}))
        assert "echo" in {tool["name"] for tool in listed["result"]["tools"]}


# -- stdio: lines that are not JSON-RPC messages are answered ------------------------------


def _exchange(workspace: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Every reply of the stdio server over the demo pack to ``lines``, sent after
    initialising and followed by a ``tools/list`` with id 3, up to its answer.

    The server reads its input in order and answers an unreadable line before it
    reads the next one, so every error comes before the answer to the last request.
    """
    proc = subprocess.Popen(
        [PY, *DEMO_ARGS, "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_worktree_env(),
        text=True,
    )
    watchdog = threading.Timer(40, proc.kill)  # a reply missing: fail, do not hang
    watchdog.start()
    replies: list[dict[str, Any]] = []
    sent = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *lines,
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    ]
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write("\n".join(sent) + "\n")
        proc.stdin.flush()
        while not replies or replies[-1].get("id") != 3:
            line = proc.stdout.readline()
            assert line, f"the server stopped before answering everything: {replies}"
            replies.append(json.loads(line))
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return replies


def test_stdio_answers_lines_that_are_not_messages(tmp_path: Path) -> None:
    """Each unreadable line gets a JSON-RPC error (not silence): -32700 with id null for
    a line that is not JSON, -32600 for JSON that is not a message, with the request's
    id when it can be read, also when the message nests too deep to parse; the server
    then goes on serving."""
    deep = (
        '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":'
        '{"path":' + "[" * 100_000 + "]" * 100_000 + "}}}"
    )
    lines = [
        "{not json",
        "",
        "[1,2,3]",
        json.dumps({"jsonrpc": "2.0", "id": 2}),
        json.dumps({"jsonrpc": "2.0", "id": "s", "method": 5}),
        deep,
    ]
    replies = _exchange(tmp_path, lines)
    errors = [(r["id"], r["error"]["code"]) for r in replies if "error" in r]
    assert errors == [
        (None, -32700),
        (None, -32600),
        (2, -32600),
        ("s", -32600),
        (10, -32600),
    ]
    assert [r["id"] for r in replies if "result" in r] == [1, 3]


def test_stdio_answers_requests_whose_id_is_not_a_string_or_an_integer(
    tmp_path: Path,
) -> None:
    """A request whose id is null (which MCP forbids), a boolean, a fraction, an object
    or an array reads as a notification to the SDK, which nobody answers: the client
    waited for ever. Each now gets one -32600 with id null, as do the neighbouring
    malformed requests, and the server goes on serving."""
    tools_list = {"jsonrpc": "2.0", "method": "tools/list"}
    lines = [
        json.dumps({**tools_list, "id": None}),
        json.dumps({**tools_list, "id": True}),
        json.dumps({**tools_list, "id": 1.5}),
        json.dumps({**tools_list, "id": {}}),
        json.dumps({**tools_list, "id": []}),
        json.dumps({"jsonrpc": "2.0", "id": None, "method": "notifications/initialized"}),
        json.dumps({"id": 7, "method": "tools/list"}),  # no "jsonrpc"
        json.dumps([{**tools_list, "id": 8}]),  # MCP has no batches: one error for all
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": 5}),
        json.dumps({"jsonrpc": "2.0", "method": 5}),
        # A response is never answered, even an error with id null (how a peer reports
        # a message it could not tie to a request): answering it could start two peers
        # trading errors for ever. JSON-RPC 2.0 answers requests only (section 5).
        json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}}),
    ]
    replies = _exchange(tmp_path, lines)
    errors = [(r["id"], r["error"]["code"]) for r in replies if "error" in r]
    assert errors == [
        *[(None, -32600)] * 6,
        (7, -32600),
        (None, -32600),
        (9, -32600),
        (None, -32600),
    ]
    assert [r["id"] for r in replies if "result" in r] == [1, 3]
    assert replies[-1]["result"]["tools"]


def test_the_id_of_a_message_too_deep_to_parse_is_read_at_the_top_level_only() -> None:
    from toolweave.mcp._stdio import _top_level_id

    deep = "[" * 50_000 + "]" * 50_000
    assert _top_level_id('{"params":{"id":7,"x":' + deep + '},"id":"a b"}') == "a b"
    assert _top_level_id('{"a":"\\"id\\":3","id" : 4}') == 4
    assert _top_level_id('{"x":' + deep + "}") is None
    assert _top_level_id('{"id":true}') is None
    assert _top_level_id("[1]") is None


# -- stdio: the end of the input does not lose answers -----------------------------------


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def _nap(request_id: int, seconds: float) -> str:
    return _request(request_id, "tools/call", {"name": "nap", "arguments": {"seconds": seconds}})


def _run_to_eof(
    args: list[str], lines: list[str], workspace: Path, stdin: str = "pipe"
) -> tuple[int, list[dict[str, Any]], str]:
    """Start a stdio server, give it the initialize handshake and ``lines``, end its
    input (closed pipe, or the end of a file) and read everything it writes until it
    exits: its exit code, its replies and its standard error."""
    sent = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *lines,
    ]
    text = "\n".join(sent) + "\n"
    source = workspace / "input.jsonl"
    source.write_text(text)
    with source.open() as file:
        proc = subprocess.Popen(
            [PY, *args],
            stdin=subprocess.PIPE if stdin == "pipe" else file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_worktree_env(),
            text=True,
        )
        try:
            out, err = proc.communicate(text if stdin == "pipe" else None, timeout=60)
        finally:
            if proc.poll() is None:  # a hang guard only
                proc.kill()
                proc.communicate()
    return proc.returncode, [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_stdio_answers_the_requests_read_before_the_end_of_input(
    stdin: str, tmp_path: Path
) -> None:
    """A client that writes its requests and closes the pipe gets every answer: the
    requests still being handled at the end of the input (a tool call that sleeps, a
    ping behind it) are finished and answered before the server exits. Before, the
    call got -32000 "Connection closed" and the ping no answer at all."""
    lines = [
        _nap(2, 1),
        _request(3, "ping"),
        _request(4, "tools/call", {"name": "echo", "arguments": {"text": "last"}}),
    ]
    code, replies, err = _run_to_eof(
        [*DEMO_ARGS, "--workspace", str(tmp_path)], lines, tmp_path, stdin
    )
    assert code == 0, err
    answers = {r["id"]: r for r in replies}
    assert sorted(answers) == [1, 2, 3, 4], replies
    assert answers[2]["result"]["content"][0]["text"] == "rested"
    assert answers[3]["result"] == {}
    assert answers[4]["result"]["content"][0]["text"] == "last"
    assert not (tmp_path / "nap-cancelled").exists()


def test_stdio_does_not_wait_at_the_end_of_input_for_a_cancelled_request(
    tmp_path: Path,
) -> None:
    """A request the client cancelled is not answered (MCP), so the end of the input
    does not wait for it: the server exits long before the call would end, the call is
    stopped, and the other requests are answered."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    lines = [_nap(2, 600), _request(3, "ping"), json.dumps(cancel)]
    code, replies, err = _run_to_eof(
        [*DEMO_ARGS, "--workspace", str(tmp_path)], lines, tmp_path
    )  # the hang guard (60 s) is far below the nap and the grace (125 s)
    assert code == 0, err
    assert sorted(r["id"] for r in replies) == [1, 3], replies
    assert (tmp_path / "nap-cancelled").exists()


def test_stdio_stops_waiting_for_answers_after_the_grace_period(tmp_path: Path) -> None:
    """At the end of the input a call that outlasts the grace period does not keep the
    server alive: it is stopped (answered with -32000), a warning says so, and the
    server exits."""
    code = (
        "import anyio, sys\n"
        "from toolweave.mcp import SessionServer\n"
        "from toolweave.plugins import PackManager\n"
        "import demo_pack\n"
        "manager = PackManager()\n"
        "manager.add('demo', demo_pack.pack)\n"
        "session = manager.build().session(workspace=sys.argv[1])\n"
        "anyio.run(SessionServer(session, eof_grace=1).run_stdio)\n"
    )
    lines = [_nap(2, 600), _request(3, "ping")]
    status, replies, err = _run_to_eof(["-c", code, str(tmp_path)], lines, tmp_path)
    assert status == 0, err
    answers = {r["id"]: r for r in replies}
    assert sorted(answers) == [1, 2, 3], replies
    assert answers[2]["error"]["code"] == -32000
    assert "1 request(s) unanswered after 1 s" in err
    assert (tmp_path / "nap-cancelled").exists()
