"""Meta-tools: internal dispatch through the context, post-processing done once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import (
    CallHook,
    CallInfo,
    CallResult,
    Capabilities,
    Context,
    ErrorKind,
    HookCall,
    Kind,
    MemoryStateStore,
    Progress,
    Reminder,
    Tool,
    ToolError,
    ToolSetBuilder,
    read_only_guard,
)
from toolweave.state import StoredState

pytestmark = pytest.mark.anyio


class Counter(BaseModel):
    """State shared by the counting tools."""

    n: int = 0
    """How many increments."""


class Nothing(BaseModel):
    """No arguments."""


class Target(BaseModel):
    """Which tool a meta-tool runs."""

    tool: str = "inc"
    """The client name of the inner tool."""
    args: dict[str, Any] = {}
    """Its arguments."""
    hand_back: bool = False
    """Return the inner CallResult itself."""


class Inc(Tool[Nothing, str]):
    """Increments the counter."""

    id = "inc"
    kind = Kind.EDIT
    state = Counter

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Increment after yielding to the loop."""
        counter = ctx.state(Counter)
        await anyio.lowlevel.checkpoint()
        counter.n += 1
        return f"n={counter.n}"


class Meta(Tool[Target, str]):
    """Runs another tool through its context."""

    id = "meta"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Target) -> Any:
        """Delegate, then describe (or hand back) the inner result."""
        inner = await ctx.call(args.tool, args.args)
        if args.hand_back:
            return inner
        return f"inner said {inner.text!r} ok={inner.ok}"


class LockedMeta(Tool[Nothing, str]):
    """Declares the counter state itself and delegates to a tool with the same state."""

    id = "locked_meta"
    state = Counter

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Increment twice: once itself, once through inc."""
        ctx.state(Counter).n += 1
        inner = await ctx.call("inc", {})
        return inner.text


class Recurse(Tool[Nothing, str]):
    """Calls itself until refused."""

    id = "recurse"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Go one level deeper."""
        inner = await ctx.call("recurse", {})
        return f"{ctx.depth}:{inner.text}" if inner.ok else f"{ctx.depth}:stop:{inner.text}"


class Ticker(Tool[Nothing, str]):
    """A streaming tool."""

    id = "ticker"
    kind = Kind.READ

    async def stream(self, ctx: Context, args: Nothing) -> AsyncIterator[Progress | str]:
        """Two ticks, then a result."""
        yield Progress("tick")
        await anyio.lowlevel.checkpoint()
        yield Progress("tock")
        yield "ticked"


class Hang(Tool[Nothing, str]):
    """Waits past its own deadline."""

    id = "hang"
    kind = Kind.READ
    capabilities = Capabilities(timeout=0.05)

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Sleep."""
        await anyio.sleep(30)
        return "never"


class Counting(Reminder):
    """Counts how often reminders are collected, and for which calls."""

    id = "counting"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def collect(self, ctx: Context, call: CallInfo) -> str:
        """Record the call."""
        self.seen.append((call.name, call.tool))
        return f"reminder #{len(self.seen)}"


class CountingStore:
    """A real in-memory store that records every save."""

    def __init__(self) -> None:
        self.inner = MemoryStateStore()
        self.saves: list[dict[str, str | None]] = []

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        return self.inner.load(session_id, keys)

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        self.saves.append(dict(changes))
        return self.inner.save(session_id, changes, expected=expected)

    def close(self) -> None:
        self.inner.close()


def setup() -> tuple[Any, Counting, CountingStore]:
    builder = ToolSetBuilder()
    builder.add_all([Inc, Meta, LockedMeta, Recurse, Ticker, Hang])
    counting = Counting()
    builder.add_reminder(counting)
    store = CountingStore()
    return builder.build().session(state_store=store, session_id="m"), counting, store


async def test_inner_call_skips_post_processing_and_the_outer_does_it_once() -> None:
    """One outer call: one reminder collection (for the outer call), one save holding the
    inner call's state change; the inner text has no reminder; the result names the
    tool that ran."""
    session, counting, store = setup()
    result = await session.call("meta", {"tool": "inc"})
    assert result.ok
    assert result.text.startswith("inner said 'n=1' ok=True")
    assert result.text.count("<system-reminder>") == 1
    assert result.effective_tool == "main:inc"
    assert result.name == "meta"
    assert counting.seen == [("meta", "main:inc")]
    assert store.saves == [{state_key_of_counter(): '{"n":1}'}]
    await session.call("meta", {"tool": "inc"})
    assert len(counting.seen) == 2
    assert len(store.saves) == 2


def state_key_of_counter() -> str:
    from toolweave.state import state_key

    return state_key(Counter)


async def test_handing_back_the_inner_result() -> None:
    """A meta-tool that returns the inner CallResult passes its output, text and error on."""
    session, _, _ = setup()
    ok = await session.call("meta", {"tool": "inc", "hand_back": True})
    assert ok.output == "n=1"
    assert ok.text.startswith("n=1\n\n<system-reminder>")
    assert ok.effective_tool == "main:inc"
    missing = await session.call("meta", {"tool": "nope", "hand_back": True})
    assert missing.error is not None
    assert missing.error.kind == ErrorKind.NOT_FOUND
    assert missing.name == "meta"


async def test_inner_call_of_a_tool_with_the_held_state_lock_does_not_deadlock() -> None:
    """A meta-tool holding a state model's lock may call a tool declaring the same model."""
    session, _, store = setup()
    with anyio.fail_after(2):
        result = await session.call("locked_meta", {})
    assert result.ok
    assert session.state.get(Counter).n == 2
    assert len(store.saves) == 1


async def test_nesting_is_limited() -> None:
    """A tool that keeps calling itself is stopped at the nesting limit, with a clear error."""
    session, _, _ = setup()
    result = await session.call("recurse", {})
    assert result.ok
    assert result.text.startswith("0:1:2:3:4:5:6:7:8:stop:recurse was not called")
    assert "at most 8 deep" in result.text


async def test_inner_calls_pass_guards_and_their_own_deadline() -> None:
    """Guards refuse inner calls too; an inner deadline fails the inner call only."""
    session, _, _ = setup()
    session.add_guard(read_only_guard("plan mode"))
    refused = await session.call("meta", {"tool": "inc"})
    assert refused.ok
    assert "ok=False" in refused.text
    assert "inc is not allowed: plan mode" in refused.text
    assert refused.effective_tool == "main:meta"
    timed = await session.call("meta", {"tool": "hang", "hand_back": True})
    assert timed.error is not None
    assert timed.error.kind == ErrorKind.TIMEOUT


async def test_inner_call_of_a_streaming_tool() -> None:
    """An inner call of a streaming tool returns its final output."""
    session, _, _ = setup()
    result = await session.call("meta", {"tool": "ticker", "hand_back": True})
    assert result.output == "ticked"
    assert result.effective_tool == "main:ticker"


async def test_cancelling_the_outer_call_stops_the_inner_one() -> None:
    """Cancelling a meta-tool's call id cancels the inner call it is waiting on."""
    builder = ToolSetBuilder()
    builder.add_all([Meta])

    class Forever(Tool[Nothing, str]):
        id = "forever"
        kind = Kind.READ

        async def run(self, ctx: Context, args: Nothing) -> str:
            await anyio.sleep(30)
            raise ToolError(ErrorKind.CUSTOM, "unreachable")

    builder.add(Forever)
    session = builder.build().session(state_store=MemoryStateStore())
    async with anyio.create_task_group() as tg:

        async def cancel_soon() -> None:
            await anyio.sleep(0.05)
            assert session.cancel("outer")

        tg.start_soon(cancel_soon)
        with anyio.fail_after(1):
            result: CallResult = await session.call("meta", {"tool": "forever"}, "outer")
    assert result.error is not None
    assert result.error.kind == ErrorKind.CANCELLED


class Twice(Tool[Nothing, str]):
    """Runs ``meta`` (which runs ``inc``), then ``inc`` itself."""

    id = "twice"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Two inner calls, the first of them nesting another."""
        first = await ctx.call("meta", {"tool": "inc"})
        second = await ctx.call("inc", {})
        return f"{first.call_id} {second.call_id}"


async def test_inner_calls_get_the_outer_id_with_their_number() -> None:
    """Inner calls are ``<outer id>/1``, ``/2``, ... in order, nested ids nest; hooks
    see them; a call from the host without an id makes inner calls without one."""
    builder = ToolSetBuilder()
    builder.add_all([Inc, Meta, Twice])
    seen: list[tuple[str, str | None]] = []

    class Ids(CallHook):
        def before(self, call: HookCall) -> None:
            seen.append((call.entry.name, call.call_id))

    session = builder.build().session(state_store=MemoryStateStore(), hooks=[Ids()])
    result = await session.call("twice", {}, "call_7")
    assert result.ok, result.text
    assert result.call_id == "call_7"
    assert result.output == "call_7/1 call_7/2"
    assert seen == [
        ("twice", "call_7"),
        ("meta", "call_7/1"),
        ("inc", "call_7/1/1"),
        ("inc", "call_7/2"),
    ]
    seen.clear()
    anonymous = await session.call("twice", {})
    assert anonymous.output == "None None"
    assert [call_id for _, call_id in seen] == [None] * 4


async def test_cancelling_an_inner_call_by_its_id_stops_only_it() -> None:
    """``Session.cancel("<outer>/1")`` cancels that inner call; the outer tool gets its
    cancelled result and finishes."""
    started = anyio.Event()

    class Forever(Tool[Nothing, str]):
        id = "forever"
        kind = Kind.READ

        async def run(self, ctx: Context, args: Nothing) -> str:
            started.set()
            await anyio.sleep(30)
            raise ToolError(ErrorKind.CUSTOM, "unreachable")

    builder = ToolSetBuilder()
    builder.add_all([Meta, Forever])
    session = builder.build().session(state_store=MemoryStateStore())
    async with anyio.create_task_group() as tg:

        async def cancel_soon() -> None:
            await started.wait()
            assert session.cancel("outer/1")

        tg.start_soon(cancel_soon)
        with anyio.fail_after(5):
            result = await session.call("meta", {"tool": "forever"}, "outer")
    assert result.ok
    assert result.text.startswith("inner said ")
    assert "ok=False" in result.text
