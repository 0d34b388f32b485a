"""Declared state: exclusive models serialise calls, shared ones do not, undeclared
models are refused; several models are locked in one order."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import (
    CallResult,
    Context,
    ErrorKind,
    MemoryStateStore,
    Progress,
    Tool,
    ToolSetBuilder,
    reminder,
)
from toolweave.authoring import CallInfo

pytestmark = pytest.mark.anyio


class Tally(BaseModel):
    """Numbers added by calls."""

    items: list[int] = []
    """Every number, in the order added."""


class Other(BaseModel):
    """A second model."""

    items: list[int] = []
    """Every number, in the order added."""


class Add(BaseModel):
    """What to add."""

    n: int = 0
    """The number."""


async def _append(model: Tally | Other, n: int) -> None:
    """Read, await, write back: loses updates unless the call holds the model's lock."""
    items = list(model.items)
    await anyio.lowlevel.checkpoint()
    model.items = [*items, n]


class Undeclared(Tool[Add, str]):
    """Uses Tally without declaring it."""

    id = "undeclared"

    async def run(self, ctx: Context, args: Add) -> str:
        """Append."""
        await _append(ctx.state(Tally), args.n)
        return "added"


class Both(Tool[Add, str]):
    """Declares two models, in one order."""

    id = "both"
    state = (Tally, Other)

    async def run(self, ctx: Context, args: Add) -> str:
        """Append to both."""
        await _append(ctx.state(Tally), args.n)
        await _append(ctx.state(Other), args.n)
        return "added"


class BothReversed(Tool[Add, str]):
    """Declares the same two models, in the other order."""

    id = "both_reversed"
    state = (Other, Tally)

    async def run(self, ctx: Context, args: Add) -> str:
        """Append to both, the other way round."""
        await _append(ctx.state(Other), args.n)
        await _append(ctx.state(Tally), args.n)
        return "added"


class StreamBoth(Tool[Add, str]):
    """A streaming tool declaring both models."""

    id = "stream_both"
    state = (Tally, Other)

    async def stream(self, ctx: Context, args: Add) -> AsyncIterator[Progress | str]:
        """Append to both between two progress items."""
        yield Progress("start")
        await _append(ctx.state(Tally), args.n)
        await _append(ctx.state(Other), args.n)
        yield "added"


GATE: anyio.Event | None = None


class SharedWait(Tool[Add, str]):
    """Shared access: waits long without holding anything up."""

    id = "shared_wait"
    state = Tally
    state_access = "shared"

    async def run(self, ctx: Context, args: Add) -> str:
        """Add, then wait for the gate."""
        ctx.state(Tally).items.append(args.n)
        assert GATE is not None
        await GATE.wait()
        return "waited"


class SharedAdd(Tool[Add, str]):
    """Shared access: adds without awaiting in between."""

    id = "shared_add"
    state = Tally
    state_access = "shared"

    async def run(self, ctx: Context, args: Add) -> str:
        """Add."""
        ctx.state(Tally).items.append(args.n)
        return "added"


class Meta(Tool[Add, str]):
    """Declares what its inner call uses: holds both locks, the inner call takes none."""

    id = "meta"
    state = (Other, Tally)

    async def run(self, ctx: Context, args: Add) -> str:
        """Delegate."""
        inner = await ctx.call("both", {"n": args.n})
        return inner.text


def _session(tmp_path: Path, **options: object):  # type: ignore[no-untyped-def]
    builder = ToolSetBuilder()
    builder.add_all([Undeclared, Both, BothReversed, StreamBoth, SharedWait, SharedAdd, Meta])
    return builder.build().session(workspace=tmp_path, state_store=MemoryStateStore(), **options)


async def test_a_tool_reading_an_undeclared_model_fails(tmp_path: Path) -> None:
    """ctx.state of a model the tool does not declare fails the call and changes nothing."""
    session = _session(tmp_path)
    result = await session.call("undeclared", {"n": 1})
    assert result.error is not None
    assert result.error.kind == ErrorKind.EXECUTION_ERROR
    assert "UsageError" in result.text
    assert "without declaring it" in result.text
    assert session.state.get(Tally).items == []


async def test_several_models_serialise_calls_in_any_declared_order(tmp_path: Path) -> None:
    """200 concurrent calls of tools declaring (Tally, Other) and (Other, Tally), in
    both modes, keep every update and never deadlock."""
    session = _session(tmp_path)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(200):
                name = ("both", "both_reversed", "meta")[n % 3]
                tg.start_soon(session.call, name, {"n": n})
            for n in range(200, 260):
                tg.start_soon(_drain, session, n)
    assert sorted(session.state.get(Tally).items) == list(range(260))
    assert sorted(session.state.get(Other).items) == list(range(260))


async def _drain(session, n: int) -> None:  # type: ignore[no-untyped-def]
    async with session.stream("stream_both", {"n": n}, f"s{n}") as items:
        async for _ in items:
            pass


async def test_shared_access_takes_no_lock(tmp_path: Path) -> None:
    """A shared-access call waiting forever holds up no other call of the model."""
    global GATE
    GATE = anyio.Event()
    session = _session(tmp_path)
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.call, "shared_wait", {"n": 1}, "w")
        await anyio.sleep(0.01)
        with anyio.fail_after(2):
            for n in range(2, 52):
                result = await session.call("shared_add", {"n": n})
                assert result.text == "added"
        GATE.set()
    assert sorted(session.state.get(Tally).items) == list(range(1, 52))


async def test_reminders_read_any_model(tmp_path: Path) -> None:
    """Reminders run after the call and may read models the tool does not declare."""

    @reminder(id="count")
    def count(ctx: Context, call: CallInfo) -> str:
        other = ctx.state(Other)
        other.items.append(len(other.items))
        return f"seen {len(other.items)}"

    builder = ToolSetBuilder()
    builder.add(SharedAdd)
    builder.add_reminder(count)
    session = builder.build().session(workspace=tmp_path, state_store=MemoryStateStore())
    result = await session.call("shared_add", {"n": 1})
    assert result.error is None
    assert "seen 1" in result.text


async def test_an_abandoned_stream_gives_back_its_locks_and_call_id(tmp_path: Path) -> None:
    """Leaving `async for` without closing the stream: once it is collected, the next
    call of a tool sharing its models runs at once and the call id is free."""
    session = _session(tmp_path, default_timeout=5)
    stream = session.stream("stream_both", {"n": 1}, "abandoned")
    async for item in stream:
        assert isinstance(item, Progress)
        break
    assert session.running == ["abandoned"]
    del stream, item
    gc.collect()
    assert session.running == []
    with anyio.fail_after(1):
        result = await session.call("both", {"n": 2}, "next")
    assert isinstance(result, CallResult)
    assert result.error is None, result.text
    assert 2 in session.state.get(Tally).items
