"""The pool's sync, naming and result mapping, against in-process SDK servers (fast)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from toolweave import CallResult, Progress, Session, ToolError, ToolSet, ToolSetConfig
from toolweave.mcp import MCPPool, ServerConfig, ServerState

pytestmark = pytest.mark.anyio

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _tool(name: str, description: str = "", **extra: Any) -> types.Tool:
    return types.Tool(
        name=name, description=description or f"The {name} tool.", input_schema=OBJECT, **extra
    )


class Remote:
    """A low-level SDK server whose tool list and behaviour a test edits."""

    def __init__(self, tools: list[types.Tool], page_size: int = 0) -> None:
        self.tools = tools
        self.page_size = page_size
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.hang_lists = False
        self.holding = anyio.Event()
        """Set when a ``hold*`` call arrives (the first one of each name never answers)."""
        self.bus = InMemorySubscriptionBus()
        self.server = Server(
            "remote",
            on_list_tools=self._list,
            on_call_tool=self._call,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    async def changed(self) -> None:
        await self.bus.publish(ToolsListChanged())

    async def _list(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self.hang_lists:
            await anyio.sleep_forever()
        if not self.page_size:
            return types.ListToolsResult(tools=list(self.tools))
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        more = str(end) if end < len(self.tools) else None
        return types.ListToolsResult(tools=self.tools[start:end], next_cursor=more)

    async def _call(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = params.arguments or {}
        self.calls.append((params.name, args))
        text = [types.TextContent(type="text", text=f"{params.name}:{args.get('text')}")]
        if params.name == "structured":
            return types.CallToolResult(content=text, structured_content={"echo": args.get("text")})
        if params.name == "broken":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="disk full")], is_error=True
            )
        if params.name == "picture":
            image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
            return types.CallToolResult(content=[*text, image])
        if params.name == "refuse":
            raise MCPError(-32050, "quota exceeded")
        if params.name == "reject":
            raise MCPError(types.INVALID_PARAMS, "text must be lowercase")
        if params.name == "silent":
            return types.CallToolResult(content=[], is_error=True)
        if params.name.startswith("hold"):
            self.holding.set()
            if [name for name, _ in self.calls].count(params.name) == 1:
                await anyio.sleep_forever()
        if params.name == "slow":
            for step in range(1, 3):
                await ctx.session.report_progress(step, 2, f"slow {step}")
            await anyio.sleep(0.05)
        return types.CallToolResult(content=text)


def _config(remote: Remote, **options: Any) -> ServerConfig:
    return ServerConfig.in_process(remote.server, **options)


def _listed(session: Session) -> list[str]:
    return [d["name"] for d in session.definitions("neutral")]


async def test_pages_names_schemas_and_versions(host_session: Callable[..., Session]) -> None:
    """Every page of the list becomes a prefixed external tool; versions count the change."""
    remote = Remote([_tool(f"t{i}") for i in range(5)], page_size=2)
    session = host_session()
    before = session.external_version
    async with MCPPool(session, {"mem": _config(remote)}) as pool:
        assert sorted(session.external) == [f"mcp__mem__t{i}" for i in range(5)]
        assert session.external_version - before == 5
        assert pool.version == 1
        entry = session.external["mcp__mem__t3"]
        assert entry.input_schema == OBJECT
        assert entry.description == "The t3 tool."
        assert entry.tool.fqid == "mcp_mem:t3"
        assert entry.tool.source == "mcp:mem"
        assert entry.tool.kind == "other"
        assert entry.timeout == 3.0
        assert pool.tools["mcp__mem__t3"].remote == "t3"
        assert (await session.call("mcp__mem__t3", {"text": "a"})).text == "t3:a"
    assert session.external == {}


async def test_list_changed_updates_adds_and_removes(
    host_session: Callable[..., Session], eventually: Callable[..., Awaitable[None]]
) -> None:
    """After list_changed the pool diffs: changed tools update in place, others stay as they are."""
    remote = Remote([_tool("keep"), _tool("edit"), _tool("drop")])
    session = host_session()
    async with MCPPool(session, {"mem": _config(remote)}) as pool:
        kept = session.external["mcp__mem__keep"]
        remote.tools = [_tool("keep"), _tool("edit", "Edited."), _tool("new")]
        await remote.changed()
        await eventually(lambda: "mcp__mem__new" in session.external)
        assert sorted(session.external) == ["mcp__mem__edit", "mcp__mem__keep", "mcp__mem__new"]
        assert session.external["mcp__mem__edit"].description == "Edited."
        assert session.external["mcp__mem__keep"] is kept
        remote.tools = [*remote.tools, _tool("later")]
        await remote.changed()
        await eventually(lambda: "mcp__mem__later" in session.external)
        assert pool.status("mem").list_changed >= 1
        version, syncs = pool.version, pool.status("mem").syncs
        pool.refresh("mem")
        await eventually(lambda: pool.status("mem").syncs > syncs)
        assert pool.version == version  # an unchanged list changes nothing


async def test_results_errors_and_progress(host_session: Callable[..., Session]) -> None:
    """Structured content, isError, non-text content, JSON-RPC errors and progress map over."""
    names = ["structured", "broken", "picture", "refuse", "slow"]
    remote = Remote([_tool(n) for n in names])
    session = host_session()
    async with MCPPool(session, {"mem": _config(remote)}):
        structured = await session.call("mcp__mem__structured", {"text": "hi"})
        assert structured.output == {"echo": "hi"}
        assert structured.text == "structured:hi"
        broken = await session.call("mcp__mem__broken", {"text": "x"})
        assert broken.error is not None
        assert (broken.error.kind, broken.error.message) == ("execution_error", "disk full")
        picture = await session.call("mcp__mem__picture", {"text": "p"})
        assert picture.text == "picture:p\n[image: image/png]"
        assert picture.output[1] == {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        refused = await session.call("mcp__mem__refuse", {"text": "x"})
        assert refused.error is not None
        assert refused.error.kind == "execution_error"
        assert "quota exceeded" in refused.text
        items = [i async for i in session.stream("mcp__mem__slow", {"text": "s"})]
        assert [i.message for i in items if isinstance(i, Progress)] == ["slow 1", "slow 2"]
        assert isinstance(items[-1], CallResult)
        assert items[-1].text == "slow:s"
        bad = await session.call("mcp__mem__slow", {"text": 1})
        assert bad.error is not None
        assert bad.error.kind == "invalid_params"
        assert [c[0] for c in remote.calls] == names


async def test_names_prefixes_and_permissions() -> None:
    """Odd remote names are made safe and short; one prefix (the server's, else the set's)
    goes before them, configured names are used as given; permissions come from config."""
    long_name = "x" * 100
    remote = Remote(
        [
            _tool("weird.name with/spaces"),
            _tool(long_name),
            _tool("reader", annotations=types.ToolAnnotations(read_only_hint=True)),
            _tool("renamed"),
        ]
    )
    session = ToolSet([], config=ToolSetConfig(external_prefix="ext_")).session()
    servers = {
        "m": _config(remote, names={"renamed": "pretty"}),
        "ro": _config(remote, prefix="p_", permission="read_only"),
    }
    async with MCPPool(session, servers):
        names = sorted(session.external)
        assert "ext_m__weird_name_with_spaces" in names
        assert "pretty" in names
        assert "p_ro__reader" in names
        assert not any(n.startswith("ext_p_") for n in names)
        long = [n for n in names if "xxxx" in n]
        assert [n[:7] for n in long] == ["ext_m__", "p_ro__x"]
        assert all(len(n) == 64 for n in long)
        assert session.external["ext_m__reader"].tool.read_only
        assert not session.external["pretty"].tool.read_only
        assert session.external["p_ro__renamed"].tool.read_only
        assert (await session.call("ext_m__weird_name_with_spaces", {"text": "w"})).text == (
            "weird.name with/spaces:w"
        )


async def test_prefix_is_applied_once_whatever_sets_it() -> None:
    """A prefix set both on the tool set and on a server is not doubled; an empty set
    prefix turns it off; a configured name is used as given."""
    remote = Remote([_tool("t"), _tool("u")])
    session = ToolSet([], config=ToolSetConfig(external_prefix="mcp__")).session()
    servers = {"m": _config(remote, prefix="mcp__", names={"u": "U"}), "n": _config(remote)}
    async with MCPPool(session, servers):
        assert sorted(session.external) == ["U", "mcp__m__t", "mcp__n__t", "mcp__n__u"]
    bare = ToolSet([], config=ToolSetConfig(external_prefix="")).session()
    async with MCPPool(bare, {"m": _config(remote)}):
        assert sorted(bare.external) == ["m__t", "m__u"]
    own = ToolSet([], config=ToolSetConfig(external_prefix="ext_")).session()
    async with MCPPool(own, {"m": _config(remote)}, prefix="r_"):
        assert sorted(own.external) == ["r_m__t", "r_m__u"]


async def test_read_only_sets_take_only_read_only_remote_tools() -> None:
    """In a read-only set, remote tools that may change things are left out, with the reason."""
    remote = Remote(
        [_tool("look", annotations=types.ToolAnnotations(read_only_hint=True)), _tool("poke")]
    )
    session = ToolSet([], config=ToolSetConfig(mode="read_only")).session()
    async with MCPPool(session, {"m": _config(remote)}) as pool:
        assert sorted(session.external) == ["mcp__m__look"]
        assert "read_only" in pool.status("m").skipped["poke"]


async def test_invalid_remote_schema_is_skipped(host_session: Callable[..., Session]) -> None:
    """A tool whose input schema is not a JSON Schema is left out, with the reason."""
    bad = types.Tool(name="bad", input_schema={"type": "object", "properties": {"x": {"type": 5}}})
    remote = Remote([_tool("good"), bad])
    session = host_session()
    async with MCPPool(session, {"mem": _config(remote)}) as pool:
        assert sorted(session.external) == ["mcp__mem__good"]
        assert "invalid input schema" in pool.status("mem").skipped["bad"]


async def test_missed_heartbeats_take_tools_out_until_reconnected(
    host_session: Callable[..., Session], eventually: Callable[..., Awaitable[None]]
) -> None:
    """A server that stops answering goes offline: its tools leave the listing but calls
    to them answer ``unavailable`` with a hint; it comes back when it answers."""
    remote = Remote([_tool("t")])
    session = host_session()
    config = _config(remote, heartbeat_interval=50, timeout=200, connect_timeout=300)
    async with MCPPool(session, {"mem": config}) as pool:
        handle = session.external["mcp__mem__t"].tool
        version, pool_version = session.external_version, pool.version
        remote.hang_lists = True
        await eventually(lambda: "mcp__mem__t" not in _listed(session), within=5)
        assert session.unlisted == {"mcp__mem__t"}
        assert session.external["mcp__mem__t"].tool is handle
        assert session.external_version == version + 1
        assert pool.version == pool_version + 1
        assert pool.status("mem").state is not ServerState.ONLINE
        assert pool.status("mem").tools == ()
        assert "mcp__mem__t" in pool.tools
        assert "heartbeat" in (pool.status("mem").error or "")
        result = await session.call("mcp__mem__t", {"text": "x"})
        assert result.error is not None
        assert result.error.kind == "unavailable"
        assert "MCP server 'mem' is" in result.text
        assert "try again" in result.text
        assert handle.open_stream is not None
        with pytest.raises(ToolError) as info:
            await handle.open_stream(None, {"text": "x"}).__anext__()
        assert info.value.kind == "unavailable"
        assert "MCP server 'mem' is" in info.value.message
        assert "try again" in info.value.message
        remote.hang_lists = False
        await eventually(lambda: "mcp__mem__t" in _listed(session), within=10)
        assert session.unlisted == frozenset()
        assert pool.status("mem").tools == ("mcp__mem__t",)
        assert pool.status("mem").connects == 2
        assert (await session.call("mcp__mem__t", {"text": "y"})).text == "t:y"


async def test_servers_are_added_removed_and_reloaded(host_session: Callable[..., Session]) -> None:
    """Servers join and leave a running pool; reload applies a new configuration as a diff."""
    one, two = Remote([_tool("a")]), Remote([_tool("b")])
    session = host_session()
    async with MCPPool(session) as pool:
        assert pool.servers == {}
        status = await pool.add_server("one", _config(one))
        assert status is not None
        assert status.tools == ("mcp__one__a",)
        changes = await pool.reload({"one": _config(one, timeout=500), "two": _config(two)})
        assert changes == {"one": "reconnected", "two": "added"}
        assert session.external["mcp__one__a"].timeout == 0.5
        assert sorted(session.external) == ["mcp__one__a", "mcp__two__b"]
        assert await pool.reload({"two": _config(two)}) == {"one": "removed"}
        assert sorted(session.external) == ["mcp__two__b"]
        assert await pool.remove_server("two")
        assert not await pool.remove_server("two")
        assert session.external == {}
        assert await pool.add_server("off", _config(one, enabled=False)) is None
        off = pool.status("off")
        assert (off.state, off.error, off.tools) == (ServerState.DISABLED, None, ())
        assert pool.servers["off"].state.value == "disabled"


async def test_calls_after_removal_and_legacy_memory_servers(
    host_session: Callable[..., Session],
) -> None:
    """The 2025 era works in process too; a removed server's stale handle answers ``unavailable``."""
    remote = Remote([_tool("t")])
    session = host_session()
    async with MCPPool(session, {"old": _config(remote, mode="legacy")}) as pool:
        assert pool.status("old").protocol_version == "2025-11-25"
        handle = session.external["mcp__old__t"].tool
        assert (await session.call("mcp__old__t", {"text": "1"})).text == "t:1"
        await pool.remove_server("old")
        assert handle.open_stream is not None
        stream = handle.open_stream(None, {"text": "2"})
        with pytest.raises(ToolError) as info:
            await stream.__anext__()
        assert info.value.kind == "unavailable"
        assert "removed from the configuration" in info.value.message
        assert len(remote.calls) == 1


async def test_blocking_calls_get_progress_only_when_someone_listens(
    host_session: Callable[..., Session],
) -> None:
    """A blocking call with a progress callback receives the server's progress; one
    without is awaited directly and still returns the result."""
    remote = Remote([_tool("slow")])
    session = host_session()
    async with MCPPool(session, {"mem": _config(remote)}):
        seen: list[str] = []
        heard = await session.call(
            "mcp__mem__slow", {"text": "a"}, on_progress=lambda p: seen.append(p.message)
        )
        assert (heard.text, seen) == ("slow:a", ["slow 1", "slow 2"])
        plain = await session.call("mcp__mem__slow", {"text": "b"})
        assert plain.text == "slow:b"
        assert [c[1]["text"] for c in remote.calls] == ["a", "b"]


async def test_cancelling_a_finished_pending_call_leaves_its_scope_alone() -> None:
    """PendingCall.cancel after the outcome arrived does not cancel the call's scope;
    before it does, and drops what comes later."""
    from toolweave.mcp._connection import PendingCall

    finished = PendingCall("mcp__s__t", "t")
    finished.finish(("out", "text"))
    finished.cancel()
    assert not finished.scope.cancel_called
    assert finished.outcome == ("out", "text")
    running = PendingCall("mcp__s__t", "t")
    running.cancel()
    assert running.scope.cancel_called
    running.finish(("late", "late"))
    assert running.outcome is None


async def test_a_call_in_flight_when_its_connection_drops(
    host_session: Callable[..., Session],
) -> None:
    """A call awaited in the caller's task whose connection ends under it answers
    ``unavailable`` at once (not at its deadline); an idempotent one is sent again on
    the new connection and answers."""
    idempotent = types.ToolAnnotations(idempotent_hint=True)
    remote = Remote([_tool("hold"), _tool("hold_again", annotations=idempotent)])
    session = host_session()
    results: dict[str, CallResult] = {}
    async with MCPPool(session, {"mem": _config(remote, mode="legacy", timeout=5000)}) as pool:
        for name in ("hold", "hold_again"):
            remote.holding = anyio.Event()

            async def call(name: str = name) -> None:
                results[name] = await session.call(f"mcp__mem__{name}", {"text": "x"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await remote.holding.wait()
                pool.reconnect("mem")
            assert await pool.wait_online("mem")
    lost = results["hold"]
    assert lost.error is not None
    assert lost.error.kind == "unavailable", lost.text
    assert lost.error.message.startswith("mcp__mem__hold: the MCP server 'mem' closed"), lost.text
    assert results["hold_again"].text == "hold_again:x"
    assert [name for name, _ in remote.calls] == ["hold", "hold_again", "hold_again"]


async def test_waiting_for_a_connecting_server_ends_inside_the_deadline(
    host_session: Callable[..., Session], eventually: Callable[..., Awaitable[None]]
) -> None:
    """A call to a server that is still connecting waits for it, within the call's own
    budget: it answers ``unavailable`` (with the state) before the session's deadline
    would make it a ``timeout``."""
    remote = Remote([_tool("t")])
    session = host_session()
    config = _config(remote, timeout=400, connect_timeout=10_000, heartbeat_interval=60_000)
    async with MCPPool(session, {"mem": config}) as pool:
        assert (await session.call("mcp__mem__t", {"text": "1"})).text == "t:1"
        remote.hang_lists = True
        pool.reconnect("mem")
        await eventually(lambda: pool.status("mem").state is ServerState.CONNECTING)
        result = await session.call("mcp__mem__t", {"text": "2"})
        assert result.error is not None
        assert result.error.kind == "unavailable", result.text
        assert result.error.message.startswith("mcp__mem__t is unavailable: the MCP server")
        assert "is connecting" in result.text
        assert [args["text"] for _, args in remote.calls] == ["1"]


@pytest.mark.parametrize(
    "bad",
    [
        {"a": "x", "b": [{"c": [1, "y", float("inf")]}]},
        {"a": {"b": {"c": float("-inf")}}},
        {"list": ["x", 2, [3.5, [float("nan")]]]},
    ],
)
async def test_non_finite_numbers_anywhere_in_structured_output_are_refused(
    bad: dict[str, Any],
) -> None:
    """NaN or Infinity nested at any depth (after strings, in lists and objects) makes the
    result an ``execution_error``; the same shapes with finite numbers pass unchanged."""
    from toolweave.mcp._convert import result_from_mcp

    text = [types.TextContent(type="text", text="t")]
    with pytest.raises(ToolError) as info:
        result_from_mcp(
            types.CallToolResult(content=text, structured_content=bad), "mcp__s__t", "t", "s"
        )
    assert info.value.kind == "execution_error"
    assert "NaN or Infinity" in info.value.message
    assert info.value.message.startswith("mcp__s__t on MCP server 's' returned")
    good = {"a": "x", "b": [{"c": [1, "y", 2.5, True, None]}], "d": {"e": -0.0}}
    output, shown = result_from_mcp(
        types.CallToolResult(content=text, structured_content=good), "mcp__s__t", "t", "s"
    )
    assert (output, shown) == (good, "t")


async def test_errors_name_the_tool_by_its_client_name(
    host_session: Callable[..., Session],
) -> None:
    """Every error of a remote call names the tool as the model knows it; the remote name
    follows, labelled, only when the client name does not end with it."""
    from toolweave import Context

    names = {"refuse": "quota", "reject": "picky", "silent": "mute"}
    remote = Remote([_tool(n) for n in ["refuse", "reject", "silent", "t"]])
    session = host_session()
    servers = {"mem": _config(remote, names=names), "plain": _config(remote)}
    async with MCPPool(session, servers) as pool:

        async def message(name: str) -> str:
            result = await session.call(name, {"text": "x"})
            assert result.error is not None, result.text
            return result.error.message

        assert await message("quota") == (
            "quota (remote name 'refuse') failed on MCP server 'mem': quota exceeded"
        )
        assert await message("mcp__plain__refuse") == (
            "mcp__plain__refuse failed on MCP server 'plain': quota exceeded"
        )
        assert await message("picky") == (
            "picky (remote name 'reject'): the MCP server 'mem' rejected the arguments: "
            "text must be lowercase"
        )
        assert await message("mute") == (
            "mute (remote name 'silent') failed on MCP server 'mem' without a message"
        )
        streamed = [i async for i in session.stream("quota", {"text": "x"})]
        assert isinstance(streamed[-1], CallResult)
        assert streamed[-1].error is not None
        assert streamed[-1].error.message.startswith("quota (remote name 'refuse') failed")
        entry = session.external["mcp__mem__t"]
        await pool.remove_server("mem")
        assert entry.tool.open_stream is not None
        with pytest.raises(ToolError) as info:
            await entry.tool.open_stream(Context(session, entry, "c1"), {"text": "x"}).__anext__()
        assert info.value.message.startswith(
            "mcp__mem__t is unavailable: the MCP server 'mem' was removed"
        )


@pytest.mark.parametrize(
    ("code", "kind", "message"),
    [
        (
            types.REQUEST_TIMEOUT,
            "timeout",
            "now (remote name 'get_time') did not answer within 1500 ms (MCP server 'time') "
            "and was cancelled; try a smaller request",
        ),
        (
            types.CONNECTION_CLOSED,
            "unavailable",
            "now (remote name 'get_time'): the MCP server 'time' closed the connection during "
            "the call; it may or may not have taken effect. Check before repeating it.",
        ),
        (
            types.METHOD_NOT_FOUND,
            "unimplemented",
            "now is unusable: the MCP server 'time' does not serve tool calls",
        ),
    ],
)
def test_protocol_errors_name_the_client_name(code: int, kind: str, message: str) -> None:
    """JSON-RPC errors of a call become typed errors naming the client name first."""
    from toolweave.mcp._convert import error_from_mcp

    error = error_from_mcp(MCPError(code, "boom"), "now", "get_time", "time", 1500)
    assert (error.kind, error.message) == (kind, message)


def test_connection_failures_name_the_client_name() -> None:
    """A transport failure during a call (retryable) and a result the SDK cannot read
    (not retryable) name the client name, with the remote name when it differs."""
    from toolweave.mcp._connection import _call_failure

    broken = _call_failure(anyio.BrokenResourceError(), "mcp__s__t", "t", "s")
    assert (broken.transient, broken.error.kind) == (True, "unavailable")
    assert broken.error.message == (
        "mcp__s__t: the connection to MCP server 's' failed during the call: BrokenResourceError"
    )
    unreadable = _call_failure(ValueError("bad content"), "t2", "t", "s")
    assert (unreadable.transient, unreadable.error.kind) == (False, "execution_error")
    assert unreadable.error.message == (
        "t2 (remote name 't') on MCP server 's' returned an unusable result: "
        "ValueError: bad content"
    )


async def test_a_streamed_call_cut_by_a_reconnect_names_the_client_name(
    host_session: Callable[..., Session],
) -> None:
    """A streamed call whose connection drops answers ``unavailable`` naming the tool by
    its client name, and says the call may have taken effect."""
    remote = Remote([_tool("hold")])
    session = host_session()
    items: list[Any] = []
    async with MCPPool(session, {"mem": _config(remote, mode="legacy", timeout=5000)}) as pool:

        async def stream() -> None:
            items.extend([i async for i in session.stream("mcp__mem__hold", {"text": "x"})])

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            await remote.holding.wait()
            pool.reconnect("mem")
    result = items[-1]
    assert isinstance(result, CallResult)
    assert result.error is not None
    assert result.error.kind == "unavailable", result.text
    assert result.error.message.startswith("mcp__mem__hold: the "), result.text
    assert "may or may not have taken effect" in result.error.message


def test_retry_policy_fits_every_retry_in_the_call_timeout() -> None:
    """Retries stop 10 % (at most 100 ms) before the call's timeout; each waits
    ``retry_delay`` doubled per retry, and is made only while ``retry_min_remaining``
    is left after the wait."""
    from toolweave.mcp._forward import retry_budget, retry_wait

    assert retry_budget(0.7) == pytest.approx(0.63)
    assert retry_budget(3.0) == pytest.approx(2.9)
    remote = Remote([])
    config = _config(remote, timeout=700)
    assert retry_wait(config, 0, 0.53) == pytest.approx(0.05)
    assert retry_wait(config, 1, 0.4) == pytest.approx(0.1)
    assert retry_wait(config, 2, 0.4) is None  # retries (2) used up
    assert retry_wait(config, 0, 0.14) is None  # 90 ms would be left after the wait
    patient = _config(remote, retries=5, retry_delay=200, retry_min_remaining=0)
    assert retry_wait(patient, 2, 10.0) == pytest.approx(0.8)
    assert retry_wait(patient, 0, 0.2) == pytest.approx(0.2)
    assert retry_wait(_config(remote, retries=0), 0, 10.0) is None


async def test_a_short_timeout_still_retries_across_a_reconnect(
    host_session: Callable[..., Session],
) -> None:
    """With a 700 ms timeout, an idempotent call cut by a reconnect is sent again and
    answers; a server that does not come back answers ``unavailable`` (not ``timeout``)
    within the call's deadline, without sending the call again."""
    idempotent = types.ToolAnnotations(idempotent_hint=True)
    remote = Remote([_tool("hold_again", annotations=idempotent)])
    session = host_session()
    config = _config(remote, mode="legacy", timeout=700, heartbeat_interval=60_000)
    results: list[CallResult] = []

    async def call() -> None:
        results.append(await session.call("mcp__mem__hold_again", {"text": "x"}))

    async with MCPPool(session, {"mem": config}) as pool:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await remote.holding.wait()
            pool.reconnect("mem")
        assert results[0].text == "hold_again:x"
        assert len(remote.calls) == 2
        remote.calls.clear()
        remote.holding = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await remote.holding.wait()
            remote.hang_lists = True  # the next connection never completes
            pool.reconnect("mem")
    gone = results[1]
    assert gone.error is not None
    assert gone.error.kind == "unavailable", gone.text
    assert "is connecting" in gone.error.message
    assert len(remote.calls) == 1


async def test_a_tool_added_to_a_running_server_is_listed_last(
    host_session: Callable[..., Session], eventually: Callable[..., Awaitable[None]]
) -> None:
    """External tools are listed in arrival order: a tool a running server adds goes to
    the end, in the session's listing and in what the session serves over MCP, so what
    was listed before keeps its bytes (the prompt prefix)."""
    from mcp import Client
    from toolweave.mcp import SessionServer

    remote = Remote([_tool("m"), _tool("z")])
    session = host_session()
    async with MCPPool(session, {"mem": _config(remote)}):
        served = SessionServer(session)
        before = session.definitions_json("anthropic")
        assert _listed(session) == ["echo", "mcp__mem__m", "mcp__mem__z"]
        remote.tools = [_tool("a"), *remote.tools]
        await remote.changed()
        await eventually(lambda: "mcp__mem__a" in session.external)
        assert _listed(session) == ["echo", "mcp__mem__m", "mcp__mem__z", "mcp__mem__a"]
        after = session.definitions_json("anthropic")
        assert after.startswith(before[:-1])  # the same bytes up to the closing bracket
        async with Client(served.server) as client:
            names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["echo", "mcp__mem__m", "mcp__mem__z", "mcp__mem__a"]
