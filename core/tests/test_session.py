"""Sessions: the error kinds of a call, cancellation, deadlines, the sync facade."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import (
    Capabilities,
    Context,
    DuplicateToolError,
    ErrorKind,
    Kind,
    Tool,
    ToolError,
    ToolSetBuilder,
    tool,
)

pytestmark = pytest.mark.anyio


class Nothing(BaseModel):
    """No arguments."""


class Seconds(BaseModel):
    """How long to wait."""

    seconds: float = 10.0
    """Seconds."""


class Sleeper(Tool[Seconds, str]):
    """Waits asynchronously."""

    id = "sleeper"

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Sleep, then answer."""
        await anyio.sleep(args.seconds)
        return "woke up"


class Quick(Tool[Seconds, str]):
    """Has a short deadline of its own."""

    id = "quick"
    capabilities = Capabilities(timeout=0.1)

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Sleep past the deadline."""
        await anyio.sleep(args.seconds)
        return "never"


class ThreadSleeper(Tool[Seconds, str]):
    """Blocks a worker thread."""

    id = "thread_sleeper"

    def run(self, ctx: Context, args: Seconds) -> str:
        """Sleep in the worker thread."""
        time.sleep(args.seconds)
        return "woke up"


class Terminal:
    """A resource nobody provides."""


class NeedsTerminal(Tool[Nothing, str]):
    """Requires a resource."""

    id = "needs_terminal"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Fail without its terminal."""
        ctx.require(Terminal)
        return "ran"


class Unfinished(Tool[Nothing, str]):
    """Not implemented yet."""

    id = "unfinished"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Raise NotImplementedError."""
        raise NotImplementedError("coming in v2")


class Broken(Tool[Nothing, str]):
    """Raises an ordinary exception."""

    id = "broken"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Fail deep inside."""
        table: dict[str, str] = {}
        return table["missing key"]


class Limited(Tool[Nothing, str]):
    """Fails with a kind of its own."""

    id = "limited"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Refuse politely."""
        raise ToolError(ErrorKind.RATE_LIMITED, "try again in 30 s", data={"retry_after": 30})


class Custom(Tool[Nothing, str]):
    """Fails with the custom kind."""

    id = "custom"

    def run(self, ctx: Context, args: Nothing) -> str:
        """Refuse from a worker thread."""
        raise ToolError("custom", "quota of widgets exhausted")


ALL = (Sleeper, Quick, ThreadSleeper, NeedsTerminal, Unfinished, Broken, Limited, Custom)


# -- error kinds ------------------------------------------------------------------------


async def test_unknown_tool_is_not_found_listing_names(make_session: Any) -> None:
    """An unknown name is not_found, and the message lists the available tools."""
    session = make_session(Sleeper, Broken)
    result = await session.call("slepper", {}, "c1")
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "'slepper'" in result.text
    assert "sleeper, broken" in result.text
    assert result.call_id == "c1"


async def test_unimplemented(make_session: Any) -> None:
    """NotImplementedError inside a tool is unimplemented."""
    result = await make_session(Unfinished).call("unfinished", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNIMPLEMENTED
    assert "coming in v2" in result.text


async def test_invalid_params(make_session: Any) -> None:
    """Bad arguments are invalid_params and the tool never runs."""
    result = await make_session(Sleeper).call("sleeper", {"seconds": "long"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`seconds`" in result.text


async def test_missing_resource_is_unavailable(make_session: Any) -> None:
    """A resource the tool requires but nobody provided makes the call unavailable."""
    result = await make_session(NeedsTerminal).call("needs_terminal", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "Terminal" in result.text
    session = make_session(NeedsTerminal)
    session.set_resource(Terminal())
    assert (await session.call("needs_terminal", {})).text == "ran"


async def test_exception_is_execution_error_without_traceback(
    make_session: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception becomes execution_error with its message; the traceback goes to the log."""
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        result = await make_session(Broken).call("broken", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert result.text == "broken failed: KeyError: 'missing key'"
    assert "Traceback" not in result.text
    assert "File " not in result.text
    records = [r for r in caplog.records if r.exc_info]
    assert records
    assert records[0].exc_info is not None
    assert records[0].exc_info[0] is KeyError


async def test_tool_error_keeps_its_kind_message_and_data(make_session: Any) -> None:
    """A ToolError raised by a tool is the result's error, unchanged."""
    session = make_session(Limited, Custom)
    limited = await session.call("limited", {})
    assert limited.error == ToolError(
        ErrorKind.RATE_LIMITED, "try again in 30 s", data={"retry_after": 30}
    )
    assert limited.text == "try again in 30 s"
    custom = await session.call("custom", {})
    assert custom.error is not None
    assert custom.error.kind is ErrorKind.CUSTOM
    assert custom.text == "quota of widgets exhausted"


async def test_tool_timeout_from_capabilities(make_session: Any) -> None:
    """A tool past its own deadline ends with timeout, promptly."""
    session = make_session(Quick)
    started = anyio.current_time()
    result = await session.call("quick", {"seconds": 10})
    assert anyio.current_time() - started < 1
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert "0.1 s" in result.text


async def test_session_default_timeout(make_session: Any) -> None:
    """Without a tool deadline the session's default applies, to threads too."""
    session = make_session(Sleeper, ThreadSleeper, default_timeout=0.1)
    with anyio.fail_after(3):
        for name in ("sleeper", "thread_sleeper"):
            result = await session.call(name, {"seconds": 1.0})
            assert result.error is not None
            assert result.error.kind is ErrorKind.TIMEOUT, name


async def test_fast_call_succeeds_under_deadline(make_session: Any) -> None:
    """A call that suspends briefly finishes normally and leaves nothing running."""
    session = make_session(Sleeper)
    result = await session.call("sleeper", {"seconds": 0.01}, "c1")
    assert result.ok
    assert result.text == "woke up"
    assert session.running == []


# -- cancellation ---------------------------------------------------------------------


async def _until(condition: Callable[[], bool]) -> None:
    """Poll (1 ms steps, at most 2 s) until ``condition`` holds."""
    for _ in range(2000):
        if condition():
            return
        await anyio.sleep(0.001)
    raise AssertionError("condition never held")


async def _cancel_while_waiting(session: Any, name: str, seconds: float = 30) -> tuple[Any, float]:
    results: list[Any] = []

    async def run() -> None:
        results.append(await session.call(name, {"seconds": seconds}, "call-7"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await _until(lambda: "call-7" in session.running)
        started = anyio.current_time()
        assert session.cancel("call-7") is True
        await _until(lambda: bool(results))
        elapsed = anyio.current_time() - started
    return results[0], elapsed


async def test_cancel_by_call_id_ends_the_call_at_once(make_session: Any) -> None:
    """session.cancel ends a suspended call with cancelled long before the tool would end
    (the latency itself is measured by the benchmarks)."""
    session = make_session(Sleeper)
    result, elapsed = await _cancel_while_waiting(session, "sleeper")
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert result.call_id == "call-7"
    assert elapsed < 5
    assert session.running == []


async def test_cancel_a_call_blocked_in_a_thread(make_session: Any) -> None:
    """A call waiting on a worker thread is also cancelled at once."""
    session = make_session(ThreadSleeper)
    # The abandoned worker thread sleeps on; keep it short so the process exits fast.
    result, elapsed = await _cancel_while_waiting(session, "thread_sleeper", 3.0)
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert elapsed < 2.5


async def test_cancel_only_the_named_call(make_session: Any) -> None:
    """Cancelling one call id leaves a concurrent call running to completion."""
    session = make_session(Sleeper)
    results: dict[str, Any] = {}

    async def run(call_id: str, seconds: float) -> None:
        results[call_id] = await session.call("sleeper", {"seconds": seconds}, call_id)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a", 30)
            tg.start_soon(run, "b", 0.2)
            await _until(lambda: sorted(session.running) == ["a", "b"])
            session.cancel("a")
    assert results["a"].error.kind is ErrorKind.CANCELLED
    assert results["b"].ok


async def test_cancel_unknown_id_is_false(make_session: Any) -> None:
    """Cancelling an id that is not running reports False."""
    assert make_session(Sleeper).cancel("nothing") is False


# -- sync facade ----------------------------------------------------------------------


def test_sync_session_call_stream_definitions(make_session: Any) -> None:
    """SyncSession runs calls and streams from plain code and lists definitions."""

    @tool(blocking=False)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with make_session(add, Limited).sync() as sync:
        assert sync.call("add", {"a": 2, "b": 3}).output == 5
        assert sync.call("limited", "{}").error.kind is ErrorKind.RATE_LIMITED
        items = sync.stream("add", {"a": 1, "b": 1})
        assert [i.output for i in items] == [2]
        names = [d["function"]["name"] for d in sync.definitions("openai")]
        assert names == ["add", "limited"]


def test_sync_session_cancel_from_another_thread(make_session: Any) -> None:
    """A blocked SyncSession.call is cancelled from another thread."""
    with make_session(Sleeper).sync() as sync:
        results: list[Any] = []
        worker = threading.Thread(
            target=lambda: results.append(sync.call("sleeper", {"seconds": 30}, "s1"))
        )
        worker.start()
        deadline = time.monotonic() + 2
        while "s1" not in sync.session.running and time.monotonic() < deadline:
            time.sleep(0.005)
        assert sync.cancel("s1") is True
        worker.join(2)
        assert not worker.is_alive()
    assert results[0].error.kind is ErrorKind.CANCELLED


# -- registration -----------------------------------------------------------------------


def test_duplicate_fqid_names_both_origins() -> None:
    """Registering one fully qualified id twice fails, naming both registrations."""
    builder = ToolSetBuilder()
    builder.add(Sleeper, origin="pack timers (toolweave-timers 1.0)")
    with pytest.raises(DuplicateToolError) as info:
        builder.add(Sleeper)
    assert info.value.fqid == "main:sleeper"
    assert "pack timers (toolweave-timers 1.0)" in str(info.value)
    assert "host" in str(info.value)


async def test_result_carries_identity(make_session: Any) -> None:
    """A result names the client tool, its fqid and the call id."""
    result = await make_session(Sleeper).call("sleeper", '{"seconds": 0}', "id-42")
    assert (result.name, result.effective_tool, result.call_id) == (
        "sleeper",
        "main:sleeper",
        "id-42",
    )


async def test_definitions_in_provider_formats(make_session: Any) -> None:
    """Definitions come in each provider's shape with the same schema."""
    session = make_session(Sleeper)
    openai = session.definitions("openai")[0]
    anthropic = session.definitions("anthropic")[0]
    assert openai["function"]["name"] == anthropic["name"] == "sleeper"
    assert anthropic["input_schema"]["properties"]["seconds"]["type"] == "number"
    first, second = session.definitions("openai"), session.definitions("openai")
    assert first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))


async def test_params_default_to_the_model(make_session: Any) -> None:
    """ctx.params returns the configured params, by default the model's defaults."""

    class Limits(BaseModel):
        most: int = 3

    class UsesParams(Tool[Nothing, int]):
        id = "uses_params"
        kind = Kind.READ
        params = Limits

        async def run(self, ctx: Context, args: Nothing) -> int:
            return ctx.params(Limits).most

    assert (await make_session(UsesParams).call("uses_params", {})).output == 3
