"""The one call pipeline: every entry point passes each call hook exactly once; hooks
refuse, rewrite (re-validated), add text, and fail in isolation (fail-closed or skipped)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import mcp.types as types
import pytest
from mcp import Client
from pydantic import BaseModel
from toolweave import (
    CallHook,
    CallResult,
    Context,
    ErrorKind,
    HookCall,
    PackManager,
    Progress,
    Tool,
    ToolError,
    ToolSetBuilder,
    hookimpl,
    tool,
)
from toolweave.mcp import SessionServer

pytestmark = pytest.mark.anyio


@tool(blocking=False)
def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: What to say.
    """
    return text


@tool(blocking=False)
def write_note(text: str) -> str:
    """Write a note (changes things).

    Args:
        text: The note.
    """
    return f"wrote {text}"


@tool
async def relay(ctx: Context, text: str) -> str:
    """Call echo through the context.

    Args:
        text: What echo should say.
    """
    inner = await ctx.call("echo", {"text": text})
    return f"relayed {inner.text}"


class Upto(BaseModel):
    """How far to count."""

    upto: int
    """The last number."""


class Count(Tool[Upto, str]):
    """Count with progress. Not for anything else."""

    id = "count"

    async def stream(self, ctx: Context, args: Upto) -> AsyncIterator[Progress | str]:
        """A progress item per number, then the result."""
        for i in range(1, args.upto + 1):
            yield Progress(str(i))
            await anyio.lowlevel.checkpoint()
        yield f"counted to {args.upto}"


@tool
async def nap(seconds: float) -> str:
    """Sleep.

    Args:
        seconds: How long.
    """
    await anyio.sleep(seconds)
    return "rested"


class Recorder(CallHook):
    """Counts what each step saw, per tool name."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()
        self.depths: list[tuple[str, int]] = []

    def admit(self, call: HookCall) -> None:
        assert call.arguments is None
        self.seen["admit", call.name] += 1
        self.depths.append((call.name, call.depth))

    def before(self, call: HookCall) -> None:
        assert call.arguments is not None
        self.seen["before", call.name] += 1

    async def after(self, call: HookCall, result: CallResult) -> None:
        self.seen["after", call.name] += 1

    def on_error(self, call: HookCall, result: CallResult) -> None:
        self.seen["on_error", call.name] += 1


def _toolset() -> Any:
    builder = ToolSetBuilder()
    for fn in (echo, write_note, relay, Count, nap):
        builder.add(fn)
    return builder.build()


def _once(recorder: Recorder, name: str, *, failed: bool = False) -> None:
    end = "on_error" if failed else "after"
    assert recorder.seen["admit", name] == 1
    assert recorder.seen["before", name] == 1
    assert recorder.seen[end, name] == 1
    assert sum(v for (_, n), v in recorder.seen.items() if n == name) == 3


async def test_every_entry_point_passes_each_hook_exactly_once(tmp_path: Any) -> None:
    """call, stream (streaming and plain tools), a tool's inner call, call_many,
    run_tool_calls and the MCP server each take a call through the hooks once."""
    toolset = _toolset()

    async def check(run: Any, names: list[str]) -> None:
        recorder = Recorder()
        session = toolset.session(workspace=tmp_path, hooks=[recorder])
        await run(session)
        for name in names:
            _once(recorder, name)
        assert sum(recorder.seen.values()) == 3 * len(names)

    async def by_call(s: Any) -> None:
        assert (await s.call("echo", {"text": "a"}, "c1")).text == "a"

    async def by_call_with_progress(s: Any) -> None:
        got: list[Progress] = []
        result = await s.call("count", {"upto": 2}, "c1", on_progress=got.append)
        assert result.text == "counted to 2"
        assert [p.message for p in got] == ["1", "2"]

    async def by_stream(s: Any) -> None:
        async with s.stream("count", {"upto": 3}, "c1") as items:
            got = [item async for item in items]
        assert [type(i).__name__ for i in got] == ["Progress"] * 3 + ["CallResult"]

    async def by_stream_of_a_plain_tool(s: Any) -> None:
        async with s.stream("echo", {"text": "x"}) as items:
            (only,) = [item async for item in items]
        assert only.text == "x"

    async def by_inner_call(s: Any) -> None:
        assert (await s.call("relay", {"text": "z"})).text == "relayed z"

    async def by_call_many(s: Any) -> None:
        results = await s.call_many([("echo", {"text": "1"}, "a"), ("write_note", {"text": "2"})])
        assert [r.text for r in results] == ["1", "wrote 2"]

    async def by_run_tool_calls(s: Any) -> None:
        reply = {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "q"}'},
                }
            ],
        }
        (message,) = await s.run_tool_calls(reply, provider="openai")
        assert message["content"] == "q"

    async def by_mcp_server(s: Any) -> None:
        async with Client(SessionServer(s).server) as client:
            result = await client.call_tool("echo", {"text": "m"})
        assert isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == "m"

    await check(by_call, ["echo"])
    await check(by_call_with_progress, ["count"])
    await check(by_stream, ["count"])
    await check(by_stream_of_a_plain_tool, ["echo"])
    await check(by_inner_call, ["relay", "echo"])
    await check(by_call_many, ["echo", "write_note"])
    await check(by_run_tool_calls, ["echo"])
    await check(by_mcp_server, ["echo"])


async def test_inner_calls_carry_their_depth(tmp_path: Any) -> None:
    """A call a tool makes reaches the hooks with depth 1, its caller with depth 0."""
    recorder = Recorder()
    session = _toolset().session(workspace=tmp_path, hooks=[recorder])
    await session.call("relay", {"text": "a"})
    assert recorder.depths == [("relay", 0), ("echo", 1)]


class Deny(CallHook):
    """Refuses tools that change things, before validation."""

    def admit(self, call: HookCall) -> ToolError | None:
        if call.entry.read_only:
            return None
        return ToolError(ErrorKind.PERMISSION_DENIED, f"{call.name} is off")


async def test_admit_refuses_before_validation_and_on_error_sees_it(tmp_path: Any) -> None:
    """A refusal in admit answers even invalid arguments with permission_denied, and the
    on_error step sees the refused call."""
    recorder = Recorder()
    session = _toolset().session(workspace=tmp_path, hooks=[Deny(), recorder])
    refused = await session.call("write_note", {"nope": 1})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert refused.text == "write_note is off"
    assert recorder.seen == Counter({("on_error", "write_note"): 1})


class Shout(CallHook):
    """Rewrites echo's text to upper case; a rewrite to garbage when asked to."""

    def before(self, call: HookCall) -> dict[str, Any] | None:
        if call.name != "echo":
            return None
        text = call.arguments["text"]
        if text == "break":
            return {"text": 42, "extra": True}
        return {"text": text.upper()}


async def test_before_rewrites_arguments_and_they_are_validated_again(tmp_path: Any) -> None:
    """New arguments from a hook reach the tool; invalid ones are invalid_params."""
    session = _toolset().session(workspace=tmp_path, hooks=[Shout()])
    assert (await session.call("echo", {"text": "hi"})).text == "HI"
    broken = await session.call("echo", {"text": "break"})
    assert broken.error is not None
    assert broken.error.kind is ErrorKind.INVALID_PARAMS


class Note(CallHook):
    """Adds a line after every successful call and after every failure."""

    async def after(self, call: HookCall, result: CallResult) -> str:
        return f"(audited {call.name})"

    def on_error(self, call: HookCall, result: CallResult) -> str:
        return "(failure noted)"


async def test_after_and_on_error_add_text_for_the_model(tmp_path: Any) -> None:
    """Text returned by after / on_error follows the result's text."""
    session = _toolset().session(workspace=tmp_path, hooks=[Note()])
    assert (await session.call("echo", {"text": "a"})).text == "a\n\n(audited echo)"
    bad = await session.call("echo", {})
    assert bad.text.endswith("\n\n(failure noted)")


class Broken(CallHook):
    """Raises in every step."""

    def __init__(self, fail_closed: bool) -> None:
        self.fail_closed = fail_closed
        self.name = "broken-check"

    def before(self, call: HookCall) -> None:
        raise RuntimeError("hook bug")

    def after(self, call: HookCall, result: CallResult) -> None:
        raise RuntimeError("hook bug after")


async def test_a_failing_hook_is_isolated_fail_closed(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A fail-closed hook that raises refuses the call, logged with the hook's name; the
    next hook still sees the refusal."""
    recorder = Recorder()
    session = _toolset().session(workspace=tmp_path, hooks=[Broken(True), recorder])
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        result = await session.call("echo", {"text": "a"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert "broken-check" in caplog.text
    assert "hook bug" in caplog.text
    assert recorder.seen["on_error", "echo"] == 1


async def test_a_failing_after_hook_withholds_the_output(tmp_path: Any) -> None:
    """When a fail-closed after step fails, the output is withheld (a redaction or
    audit that failed must not let it through)."""

    class BrokenAfter(CallHook):
        def after(self, call: HookCall, result: CallResult) -> None:
            raise RuntimeError("redaction failed")

    session = _toolset().session(workspace=tmp_path, hooks=[BrokenAfter()])
    result = await session.call("echo", {"text": "secret"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert result.output is None
    assert "secret" not in result.text


async def test_a_failing_hook_is_skipped_when_not_fail_closed(tmp_path: Any) -> None:
    """With fail_closed off, a hook that raises is skipped and the call goes on."""
    session = _toolset().session(workspace=tmp_path, hooks=[Broken(False)])
    result = await session.call("echo", {"text": "a"})
    assert result.error is None
    assert result.text == "a"


class Abort(BaseException):
    """A BaseException class of a hook's own."""


class Aborting(CallHook):
    """Raises its own BaseException (or GeneratorExit) in every step."""

    def __init__(self, fail_closed: bool, raised: type[BaseException]) -> None:
        self.fail_closed = fail_closed
        self.name = "aborting-check"
        self.raised = raised

    def before(self, call: HookCall) -> None:
        raise self.raised("hook abort")

    def after(self, call: HookCall, result: CallResult) -> None:
        raise self.raised("hook abort after")


class AbortingAsync(Aborting):
    """:class:`Aborting` whose steps are async and raise after a suspension."""

    async def before(self, call: HookCall) -> None:  # type: ignore[override]
        await anyio.lowlevel.checkpoint()
        raise self.raised("hook abort")

    async def after(self, call: HookCall, result: CallResult) -> None:  # type: ignore[override]
        await anyio.lowlevel.checkpoint()
        raise self.raised("hook abort after")


@pytest.mark.parametrize("raised", [Abort, GeneratorExit])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_hook_raising_a_base_exception_is_isolated_like_any_failure(
    tmp_path: Any, raised: type[BaseException], is_async: bool
) -> None:
    """A hook (a pack's before_call, say) raising a BaseException of its own or a
    GeneratorExit escaped session.call; it is isolated like any hook failure:
    fail-closed, the call is refused; otherwise the hook is skipped."""
    kind = AbortingAsync if is_async else Aborting
    closed = _toolset().session(workspace=tmp_path, hooks=[kind(True, raised)])
    refused = await closed.call("echo", {"text": "a"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    lenient = _toolset().session(workspace=tmp_path, hooks=[kind(False, raised)])
    result = await lenient.call("echo", {"text": "a"})
    assert result.error is None
    assert result.text == "a"


async def test_hooks_apply_only_where_they_say(tmp_path: Any) -> None:
    """applies_to is asked once per entry; a hook that does not apply is not run."""
    asked: list[str] = []

    class OnlyEcho(Recorder):
        def applies_to(self, entry: Any) -> bool:
            asked.append(entry.name)
            return entry.name == "echo"

    hook = OnlyEcho()
    session = _toolset().session(workspace=tmp_path, hooks=[hook])
    for _ in range(3):
        await session.call("echo", {"text": "a"})
        await session.call("write_note", {"text": "b"})
    assert asked == ["echo", "write_note"]
    assert hook.seen["after", "echo"] == 3
    assert ("after", "write_note") not in hook.seen


async def test_hooks_can_be_added_and_removed_while_the_session_runs(tmp_path: Any) -> None:
    """add_hook returns a remover; removed hooks stop running."""
    session = _toolset().session(workspace=tmp_path)
    remove = session.add_hook(Deny())
    assert (await session.call("write_note", {"text": "x"})).error is not None
    remove()
    assert (await session.call("write_note", {"text": "x"})).text == "wrote x"
    assert session.hooks == ()


async def test_a_pack_provides_call_hooks(tmp_path: Any) -> None:
    """provide_call_hooks of a pack adds hooks to every new session."""

    class Pack:
        @hookimpl
        def register_tools(self, builder: ToolSetBuilder) -> None:
            builder.add(write_note)

        @hookimpl
        def provide_call_hooks(self, session: Any) -> list[CallHook]:
            return [Deny()]

    packs = PackManager(strict=True)
    packs.add("deny", Pack())
    session = packs.build().session(workspace=tmp_path)
    refused = await session.call("write_note", {"text": "x"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED


async def test_deadline_and_cancel_behave_the_same_on_every_path(tmp_path: Any) -> None:
    """A tool past its deadline is a timeout with one message, whether called, streamed,
    or called by another tool; cancel by id works for call and stream alike."""

    @tool(timeout=30)
    async def nap_relay(ctx: Context, seconds: float) -> str:
        """Call nap through the context.

        Args:
            seconds: How long.
        """
        return (await ctx.call("nap", {"seconds": seconds})).text

    builder = ToolSetBuilder()
    for fn in (nap, nap_relay):
        builder.add(fn)
    session = builder.build().session(workspace=tmp_path, default_timeout=0.2)

    called = await session.call("nap", {"seconds": 30})
    async with session.stream("nap", {"seconds": 30}) as items:
        (streamed,) = [item async for item in items]
    relayed = await session.call("nap_relay", {"seconds": 30})
    for result in (called, streamed):
        assert isinstance(result, CallResult)
        assert result.error is not None
        assert result.error.kind is ErrorKind.TIMEOUT
        assert result.text == called.text
    assert relayed.text == called.text  # the inner call timed out first

    slow = builder.build().session(workspace=tmp_path, default_timeout=60)
    results: dict[str, CallResult] = {}

    async def run_call() -> None:
        results["call"] = await slow.call("nap", {"seconds": 60}, "a")

    async def run_stream() -> None:
        async with slow.stream("nap", {"seconds": 60}, "b") as items:
            async for item in items:
                assert isinstance(item, CallResult)
                results["stream"] = item

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_call)
        tg.start_soon(run_stream)
        with anyio.fail_after(30):
            while set(slow.running) != {"a", "b"}:  # noqa: ASYNC110 - polls session state
                await anyio.sleep(0.01)
        assert slow.cancel("a")
        assert slow.cancel("b")
    assert {k: r.error.kind for k, r in results.items() if r.error} == {
        "call": ErrorKind.CANCELLED,
        "stream": ErrorKind.CANCELLED,
    }


async def test_the_hooks_view_of_a_call_is_the_tools_context(tmp_path: Any) -> None:
    """No hooks: the tool gets a plain ``Context`` (the fast path builds nothing for
    hooks). With a hook: the tool's context is the very ``HookCall`` the hook saw, with
    the call's depth, so a call costs one object either way."""
    seen: list[Any] = []

    @tool
    def probe(ctx: Context, text: str) -> str:
        """Record the context.

        Args:
            text: Anything.
        """
        seen.append(ctx)
        return text

    @tool
    async def outer(ctx: Context) -> str:
        """Call probe from inside."""
        result = await ctx.call("probe", {"text": "inner"})
        return result.text

    class Saw(CallHook):
        def __init__(self) -> None:
            self.calls: list[HookCall] = []

        def before(self, call: HookCall) -> None:
            self.calls.append(call)

    builder = ToolSetBuilder()
    builder.add(probe)
    builder.add(outer)
    session = builder.build().session(workspace=tmp_path)
    await session.call("probe", {"text": "a"})
    assert type(seen[0]) is Context
    saw = Saw()
    session.add_hook(saw)
    await session.call("probe", {"text": "b"})
    assert seen[1] is saw.calls[0]
    assert isinstance(seen[1], HookCall)
    assert saw.calls[0].arguments == {"text": "b"}
    await session.call("outer", {})
    assert [c.name for c in saw.calls] == ["probe", "outer", "probe"]
    assert [c.depth for c in saw.calls] == [0, 0, 1]
    assert seen[2] is saw.calls[2]


async def test_a_stop_waits_for_the_tools_shielded_scope(tmp_path: Any) -> None:
    """A deadline or cancel reaching a tool inside ``CancelScope(shield=True)`` (starting or
    killing a process) is delivered once the shield is left, as anyio does; the shielded
    work completes, in the inline first step's scope and in a later one."""
    finished: list[str] = []

    @tool
    async def careful(where: str) -> str:
        """Do shielded work, then wait.

        Args:
            where: "first" to enter the shield before the first wait, "later" after it.
        """
        if where == "later":
            await anyio.sleep(0.05)
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.5)
            finished.append(where)
        await anyio.sleep(30)
        return "never"

    builder = ToolSetBuilder()
    builder.add(careful)
    session = builder.build().session(workspace=tmp_path, default_timeout=0.2)
    for where in ("first", "later"):
        result = await session.call("careful", {"where": where})
        assert result.error is not None
        assert result.error.kind is ErrorKind.TIMEOUT
    assert finished == ["first", "later"]
    async with session.stream("careful", {"where": "first"}, "s1") as items:
        async for item in items:
            assert isinstance(item, CallResult)
            assert item.error is not None
    assert finished == ["first", "later", "first"]


async def test_error_text_is_valid_utf8_whatever_the_tool_raised(tmp_path: Any) -> None:
    """A tool raising with a lone surrogate in its message (a ToolError or any exception)
    still gives model text a host can encode."""

    @tool(blocking=False)
    def echo_bad(text: str) -> str:
        """Fail with the text.

        Args:
            text: What to fail with.
        """
        if text == "tool_error":
            raise ToolError(ErrorKind.NOT_FOUND, "no \ud800 here")
        raise ValueError("bad \udfff value")

    builder = ToolSetBuilder()
    builder.add(echo_bad)
    session = builder.build().session(workspace=tmp_path)
    for text in ("tool_error", "other"):
        result = await session.call("echo_bad", {"text": text})
        assert result.error is not None
        result.text.encode("utf-8")
        result.model_text.encode("utf-8")


async def test_refresh_hooks_asks_applies_to_again(tmp_path: Any) -> None:
    """``applies_to`` is asked once per entry; ``refresh_hooks`` makes the session ask
    again on the next call, so a hook can follow a mode that changes."""
    asked: list[str] = []

    class WhenOn(CallHook):
        on = False

        def applies_to(self, entry: Any) -> bool:
            asked.append(entry.name)
            return self.on

        def admit(self, call: HookCall) -> ToolError:
            return ToolError(ErrorKind.PERMISSION_DENIED, "off limits")

    hook = WhenOn()
    session = _toolset().session(workspace=tmp_path, hooks=[hook])
    assert (await session.call("echo", {"text": "a"})).error is None
    hook.on = True
    assert (await session.call("echo", {"text": "b"})).error is None  # compiled while off
    assert asked == ["echo"]
    session.refresh_hooks()
    refused = await session.call("echo", {"text": "c"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert asked == ["echo", "echo"]
