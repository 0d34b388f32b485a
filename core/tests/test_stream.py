"""The stream contract: progress items, then exactly one final result, never a hang."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import CallResult, Context, ErrorKind, Progress, Tool, ToolError

pytestmark = pytest.mark.anyio


class Steps(BaseModel):
    """How a scripted stream behaves."""

    script: list[str] = []
    """Items in order: 'p:<text>' progress, 'r:<text>' a result, 'raise', 'hang'."""


closed: list[str] = []


class Scripted(Tool[Steps, str]):
    """A streaming tool that follows its script."""

    id = "scripted"

    async def stream(self, ctx: Context, args: Steps) -> AsyncIterator[Progress | str]:
        """Yield what the script says."""
        try:
            for step in args.script:
                if step.startswith("p:"):
                    yield Progress(step[2:], progress=1, total=2)
                elif step.startswith("r:"):
                    yield step[2:]
                elif step == "raise":
                    raise RuntimeError("stream broke")
                elif step == "tool_error":
                    raise ToolError(ErrorKind.RATE_LIMITED, "slow down")
                elif step == "hang":
                    await anyio.sleep_forever()
        finally:
            closed.append(ctx.call_id or "")


class Plain(Tool[Steps, str]):
    """A run-tool, to be called in streaming mode."""

    id = "plain"

    async def run(self, ctx: Context, args: Steps) -> str:
        """Return at once."""
        return "plain result"


async def _items(session: Any, name: str, args: Any, call_id: str | None = None) -> list[Any]:
    async with session.stream(name, args, call_id) as stream:
        return [item async for item in stream]


async def test_progress_then_exactly_one_result(make_session: Any) -> None:
    """Progress items arrive in order, then one CallResult, then the stream ends."""
    session = make_session(Scripted)
    items = await _items(session, "scripted", {"script": ["p:one", "p:two", "r:done"]}, "s1")
    assert [type(i) for i in items] == [Progress, Progress, CallResult]
    assert [i.message for i in items[:2]] == ["one", "two"]
    assert items[0].progress == 1
    assert items[0].total == 2
    final = items[-1]
    assert final.ok
    assert (final.output, final.text, final.call_id) == ("done", "done", "s1")
    assert final.effective_tool == "main:scripted"


async def test_stream_without_result_is_execution_error(make_session: Any) -> None:
    """A generator that ends without yielding a result ends the stream with an error."""
    items = await _items(make_session(Scripted), "scripted", {"script": ["p:only progress"]})
    assert isinstance(items[0], Progress)
    final = items[-1]
    assert final.error.kind is ErrorKind.EXECUTION_ERROR
    assert final.text == "scripted ended without a result"


async def test_second_result_is_execution_error(make_session: Any) -> None:
    """Yielding two results fails the call instead of returning either."""
    items = await _items(make_session(Scripted), "scripted", {"script": ["r:a", "r:b"]})
    assert len(items) == 1
    assert items[0].error.kind is ErrorKind.EXECUTION_ERROR
    assert items[0].text == "scripted yielded a second result after its result"


async def test_progress_after_result_is_execution_error(make_session: Any) -> None:
    """Progress after the result is a contract breach: execution_error."""
    items = await _items(make_session(Scripted), "scripted", {"script": ["r:a", "p:late"]})
    assert len(items) == 1
    assert items[0].error.kind is ErrorKind.EXECUTION_ERROR
    assert items[0].text == "scripted yielded progress after its result"


async def test_generator_that_hangs_hits_the_deadline(make_session: Any) -> None:
    """A stream that stops yielding ends with timeout at its deadline, never a hang."""
    session = make_session(Scripted, default_timeout=0.2)
    with anyio.fail_after(5):
        items = await _items(session, "scripted", {"script": ["p:start", "hang"]})
    assert isinstance(items[0], Progress)
    assert items[-1].error.kind is ErrorKind.TIMEOUT
    assert "0.2 s" in items[-1].text


async def test_hang_after_result_is_a_timeout_not_a_hang(make_session: Any) -> None:
    """A generator that yields its result then never ends is stopped at the deadline."""
    session = make_session(Scripted, default_timeout=0.2)
    with anyio.fail_after(5):
        items = await _items(session, "scripted", {"script": ["r:a", "hang"]})
    assert items[-1].error.kind is ErrorKind.TIMEOUT


async def test_exception_mid_stream_is_the_final_item(make_session: Any) -> None:
    """An exception after some progress becomes the final execution_error item."""
    items = await _items(make_session(Scripted), "scripted", {"script": ["p:a", "raise"]})
    assert isinstance(items[0], Progress)
    assert items[-1].error.kind is ErrorKind.EXECUTION_ERROR
    assert "RuntimeError: stream broke" in items[-1].text
    assert len(items) == 2


async def test_tool_error_mid_stream_keeps_its_kind(make_session: Any) -> None:
    """A ToolError raised by a stream keeps its kind and message."""
    items = await _items(make_session(Scripted), "scripted", {"script": ["tool_error"]})
    assert items[-1].error == ToolError(ErrorKind.RATE_LIMITED, "slow down")


async def test_run_tool_streams_one_final_item(make_session: Any) -> None:
    """A run-tool called in streaming mode gives exactly one final item."""
    items = await _items(make_session(Plain), "plain", {}, "p1")
    assert len(items) == 1
    assert items[0].text == "plain result"
    assert items[0].call_id == "p1"


async def test_unknown_and_invalid_calls_stream_one_error(make_session: Any) -> None:
    """An unknown name or bad arguments in streaming mode give one error item."""
    session = make_session(Scripted)
    unknown = await _items(session, "nope", {})
    assert len(unknown) == 1
    assert unknown[0].error.kind is ErrorKind.NOT_FOUND
    bad = await _items(session, "scripted", {"script": "not a list"})
    assert len(bad) == 1
    assert bad[0].error.kind is ErrorKind.INVALID_PARAMS


async def test_blocking_call_of_streaming_tool_collects_progress(make_session: Any) -> None:
    """call() on a streaming tool returns the result; progress goes to on_progress."""
    session = make_session(Scripted)
    seen: list[str] = []
    result = await session.call(
        "scripted", {"script": ["p:1", "p:2", "r:ok"]}, on_progress=lambda p: seen.append(p.message)
    )
    assert result.text == "ok"
    assert seen == ["1", "2"]
    awaited: list[str] = []

    async def async_sink(p: Progress) -> None:
        await anyio.lowlevel.checkpoint()
        awaited.append(p.message)

    result = await session.call("scripted", {"script": ["p:x", "r:ok"]}, on_progress=async_sink)
    assert result.ok
    assert awaited == ["x"]


async def test_raising_progress_callback_is_logged_and_the_call_goes_on(
    make_session: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A progress callback that raises (sync or async) or returns junk never escapes
    call(): it is logged, later items still reach it, and the result is the tool's."""
    session = make_session(Scripted)
    seen: list[str] = []

    def sync_boom(p: Progress) -> None:
        seen.append(p.message)
        raise RuntimeError("host bug")

    async def async_boom(p: Progress) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(p.message)
        raise ValueError("async host bug")

    def junk(p: Progress) -> int:
        seen.append(p.message)
        return 5

    for callback in (sync_boom, async_boom, junk):
        seen.clear()
        caplog.clear()
        result = await session.call(
            "scripted", {"script": ["p:1", "p:2", "r:ok"]}, "c1", on_progress=callback
        )
        assert result.ok
        assert result.text == "ok"
        assert seen == ["1", "2"]
        assert [r.getMessage() for r in caplog.records] == [
            "the progress callback of scripted raised"
        ] * 2
    assert session.running == []


async def test_blocking_call_of_broken_stream_is_an_error(make_session: Any) -> None:
    """In blocking mode, the stream contract is enforced just the same."""
    session = make_session(Scripted)
    result = await session.call("scripted", {"script": ["r:a", "r:b"]})
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    result = await session.call("scripted", {"script": []})
    assert result.error.kind is ErrorKind.EXECUTION_ERROR


async def test_cancel_a_stream_by_call_id(make_session: Any) -> None:
    """session.cancel ends a waiting stream with a cancelled final item, quickly."""
    session = make_session(Scripted)
    items: list[Any] = []

    async def consume() -> None:
        items.extend(await _items(session, "scripted", {"script": ["p:go", "hang"]}, "c9"))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            for _ in range(2000):
                if "c9" in session.running:
                    break
                await anyio.sleep(0.001)
            await anyio.sleep(0.02)
            started = anyio.current_time()
            assert session.cancel("c9") is True
        elapsed = anyio.current_time() - started
    assert items[-1].error.kind is ErrorKind.CANCELLED
    assert elapsed < 5
    assert "c9" not in session.running


async def test_generator_is_closed_when_the_stream_ends(make_session: Any) -> None:
    """The tool's generator is closed (its finally runs) on success, error and early exit."""
    session = make_session(Scripted)
    closed.clear()
    await _items(session, "scripted", {"script": ["r:a"]}, "ok")
    await _items(session, "scripted", {"script": ["r:a", "r:b"]}, "bad")
    async with session.stream("scripted", {"script": ["p:a", "hang"]}, "early") as stream:
        async for item in stream:
            assert isinstance(item, Progress)
            break
    assert closed == ["ok", "bad", "early"]
    assert "early" not in session.running


def test_call_result_to_dict_and_ok() -> None:
    """CallResult reports ok and serialises every field."""
    good = CallResult({"a": 1}, "text", None, "c", "main:t", "t")
    assert good.ok
    assert good.to_dict() == {
        "name": "t",
        "call_id": "c",
        "effective_tool": "main:t",
        "output": {"a": 1},
        "text": "text",
        "error": None,
    }
    bad = CallResult(None, "no", ToolError(ErrorKind.TIMEOUT, "no"))
    assert not bad.ok
    assert bad.to_dict()["error"] == {"kind": "timeout", "message": "no"}
