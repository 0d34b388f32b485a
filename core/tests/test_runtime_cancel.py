"""Cancellation and deadlines: streams, child processes, scopes held by tools, sources."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import (
    CallResult,
    Capabilities,
    Context,
    ErrorKind,
    MemoryStateStore,
    Progress,
    Tool,
    ToolSetBuilder,
    process_group,
)
from toolweave.catalog import external_tool

pytestmark = pytest.mark.anyio

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads process groups from /proc (Linux)"
)


class Nothing(BaseModel):
    """No arguments."""


class Seconds(BaseModel):
    """How long to wait."""

    seconds: float = 30.0
    """Seconds."""


def group_alive(pgid: int) -> list[int]:
    """Pids of the processes of group ``pgid`` that are still running (zombies excluded)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in {"Z", "X"}:
            alive.append(int(entry.name))
    return alive


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in {"Z", "X"}


async def wait_group_gone(pgid: int, within: float = 2.0) -> list[int]:
    """The group's live pids once it is empty, or after ``within`` seconds."""
    alive = group_alive(pgid)
    for _ in range(int(within / 0.02)):
        if not alive:
            break
        await anyio.sleep(0.02)
        alive = group_alive(pgid)
    return alive


SCRIPT = "sleep 30 & echo $!; wait"
"""A shell that starts a grandchild in its own process group and waits for it."""


class Spawn(Tool[Nothing, str]):
    """Starts a shell with a grandchild and waits for both."""

    id = "spawn"
    capabilities = Capabilities(timeout=0.5)
    pids: list[int] = []

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Start the group, note its pids, wait forever."""
        async with process_group(["sh", "-c", SCRIPT], stdout=subprocess.PIPE) as proc:
            assert proc.stdout is not None
            self.pids.append(proc.pid)
            line = await proc.stdout.receive()
            self.pids.append(int(line.split()[0]))
            await proc.wait()
        return "finished"


class SpawnStream(Tool[Nothing, str]):
    """A streaming tool that reports its pids as progress, then waits for its child."""

    id = "spawn_stream"
    pids: list[int] = []

    async def stream(self, ctx: Context, args: Nothing) -> AsyncIterator[Progress | str]:
        """Start the group, report, wait forever."""
        async with process_group(["sh", "-c", SCRIPT], stdout=subprocess.PIPE) as proc:
            assert proc.stdout is not None
            self.pids.append(proc.pid)
            line = await proc.stdout.receive()
            yield Progress(f"started {proc.pid}")
            self.pids.append(int(line.split()[0]))
            await proc.wait()
        yield "finished"


class Ticker(Tool[Seconds, str]):
    """Streams one tick, then waits."""

    id = "ticker"

    async def stream(self, ctx: Context, args: Seconds) -> AsyncIterator[Progress | str]:
        """Tick, then sleep."""
        yield Progress("tick")
        await anyio.sleep(args.seconds)
        yield "done"


class Grouped(Tool[Seconds, str]):
    """Holds a task group (a cancel scope) across its first suspension."""

    id = "grouped"

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Wait inside a task group and a move_on_after of its own."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, min(args.seconds, 0.01))
            with anyio.move_on_after(60):
                await anyio.sleep(args.seconds)
        return "grouped done"


class GroupedStream(Tool[Seconds, str]):
    """A streaming tool that yields progress from inside a task group."""

    id = "grouped_stream"

    async def stream(self, ctx: Context, args: Seconds) -> AsyncIterator[Progress | str]:
        """Feed items through a memory stream from a child task, yield them in the group."""
        send, receive = anyio.create_memory_object_stream[str](10)
        async with anyio.create_task_group() as tg, receive:

            async def produce() -> None:
                async with send:
                    for word in ("one", "two"):
                        await send.send(word)
                    await anyio.sleep(args.seconds)

            tg.start_soon(produce)
            async for word in receive:
                yield Progress(word)
        yield "grouped stream done"


class Sleeper(Tool[Seconds, str]):
    """Sleeps."""

    id = "sleeper"

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Sleep, then answer."""
        await anyio.sleep(args.seconds)
        return "woke"


class Slot(BaseModel):
    """State that serialises the locking tools."""

    n: int = 0
    """A counter."""


class Holder(Tool[Seconds, str]):
    """Holds its state lock while it sleeps."""

    id = "holder"
    state = Slot

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Sleep with the lock."""
        ctx.state(Slot).n += 1
        await anyio.sleep(args.seconds)
        return "held"


def session_of(*tools: Any, **options: Any) -> Any:
    builder = ToolSetBuilder()
    builder.add_all(tools)
    options.setdefault("state_store", MemoryStateStore())
    return builder.build(options.pop("config", None)).session(**options)


async def cancel_after(session: Any, call_id: str, delay: float, stamps: list[float]) -> None:
    await anyio.sleep(delay)
    stamps.append(time.monotonic())
    assert session.cancel(call_id)


@linux_only
async def test_deadline_gives_timeout_and_leaves_no_child_process() -> None:
    """Past the deadline the call is `timeout` and the shell and its grandchild are gone."""
    Spawn.pids = []
    session = session_of(Spawn)
    with anyio.fail_after(10):
        result = await session.call("spawn", {})
    assert result.error is not None, result.text
    assert result.error.kind == ErrorKind.TIMEOUT
    leader, grandchild = Spawn.pids
    assert await wait_group_gone(leader) == []
    assert not is_running(grandchild)
    assert session.running == []


@linux_only
async def test_cancelled_stream_ends_fast_and_kills_its_process_group() -> None:
    """Cancelling a streaming call by id ends it within 100 ms, processes included."""
    SpawnStream.pids = []
    session = session_of(SpawnStream)
    stamps: list[float] = []
    items: list[Any] = []
    async with session.stream("spawn_stream", {}, "s1") as stream:
        async for item in stream:
            items.append(item)
            if isinstance(item, Progress):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_after, session, "s1", 0.05, stamps)
                    final = await stream.__anext__()
                items.append(final)
                ended = time.monotonic()
                break
    result = items[-1]
    assert isinstance(result, CallResult)
    assert result.error is not None
    assert result.error.kind == ErrorKind.CANCELLED
    assert ended - stamps[0] < 5  # long before the tool would end; latency is benchmarked
    assert await wait_group_gone(SpawnStream.pids[0]) == []
    assert session.running == []


@pytest.mark.parametrize("mode", ["stream", "call"])
async def test_cancel_of_a_streaming_tool_ends_at_once(mode: str) -> None:
    """A streaming tool waiting inside its generator stops right after the cancel, in
    streaming and in blocking mode."""
    session = session_of(Ticker)
    stamps: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_after, session, "t1", 0.1, stamps)
        if mode == "stream":
            async with session.stream("ticker", {"seconds": 30}, "t1") as stream:
                got = [item async for item in stream]
            result = got[-1]
            assert isinstance(got[0], Progress)
        else:
            result = await session.call("ticker", {"seconds": 30}, "t1")
        ended = time.monotonic()
    assert isinstance(result, CallResult)
    assert result.error is not None
    assert result.error.kind == ErrorKind.CANCELLED
    assert ended - stamps[0] < 5  # long before the tool would end; latency is benchmarked


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (at most 30 s) until ``condition`` holds; the session's state is polled."""
    with anyio.fail_after(30):
        while not condition():  # noqa: ASYNC110 - polls session state
            await anyio.sleep(0.005)


async def test_tool_holding_a_task_group_across_its_first_wait() -> None:
    """Tools that open scopes before they first suspend finish, time out and cancel cleanly."""
    session = session_of(Grouped, default_timeout=0.2)
    done = await session.call("grouped", {"seconds": 0.02})
    assert done.ok, done.text
    assert done.text == "grouped done"
    timed = await session.call("grouped", {"seconds": 30})
    assert timed.error is not None
    assert timed.error.kind == ErrorKind.TIMEOUT
    stamps: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_after, session, "g1", 0.05, stamps)
        cancelled = await session.call("grouped", {"seconds": 30}, "g1")
    assert cancelled.error is not None
    assert cancelled.error.kind == ErrorKind.CANCELLED
    assert (await session.call("grouped", {"seconds": 0})).ok


async def test_the_hosts_own_cancellation_passes_through() -> None:
    """A cancel scope of the host around a call cancels it like any await; the session
    stays usable."""
    session = session_of(Sleeper, Grouped)
    with anyio.move_on_after(0.05) as scope:
        await session.call("sleeper", {"seconds": 30}, "x")
    assert scope.cancelled_caught
    with anyio.move_on_after(0.05) as scope:
        await session.call("grouped", {"seconds": 30})
    assert scope.cancelled_caught
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(session.call("sleeper", {"seconds": 30}), 0.05)
    assert session.running == []
    assert (await session.call("sleeper", {"seconds": 0.01})).text == "woke"


async def test_default_deadlines_per_source() -> None:
    """Local and external tools get separate default deadlines from the session."""

    async def slow_remote(ctx: Any, arguments: dict[str, Any]) -> str:
        await anyio.sleep(float(arguments["seconds"]))
        return "remote woke"

    remote = external_tool(
        id="remote_sleep",
        namespace="ext",
        description="Sleeps remotely.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
        call=slow_remote,
    )
    session = session_of(Sleeper, default_timeout=0.05, external_timeout=5)
    session.register_external(remote)
    local = await session.call("sleeper", {"seconds": 0.3})
    assert local.error is not None
    assert local.error.kind == ErrorKind.TIMEOUT
    assert "within 0.05 s" in local.text
    assert (await session.call("remote_sleep", {"seconds": 0.3})).text == "remote woke"

    other = session_of(Sleeper, default_timeout=5, external_timeout=0.05)
    other.register_external(remote)
    assert (await other.call("sleeper", {"seconds": 0.3})).text == "woke"
    far = await other.call("remote_sleep", {"seconds": 0.3})
    assert far.error is not None
    assert far.error.kind == ErrorKind.TIMEOUT


async def test_configured_timeout_applies_to_local_tools() -> None:
    """The set-level `timeout` option is every local tool's default deadline."""
    session = session_of(Sleeper, config={"timeout": 0.05})
    result = await session.call("sleeper", {"seconds": 1})
    assert result.error is not None
    assert result.error.kind == ErrorKind.TIMEOUT


async def test_cancel_is_not_queued_behind_a_call_holding_the_state_lock() -> None:
    """A call waiting for a state lock is cancelled at once, while the holder keeps running."""
    session = session_of(Holder)
    results: dict[str, CallResult] = {}
    second_done = anyio.Event()

    async def run(call_id: str) -> None:
        results[call_id] = await session.call("holder", {"seconds": 30}, call_id)
        if call_id == "second":
            second_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "first")
        await _until(lambda: session.running == ["first"])
        tg.start_soon(run, "second")
        await _until(lambda: sorted(session.running) == ["first", "second"])
        started = time.monotonic()
        assert session.cancel("second")
        with anyio.fail_after(10):
            await second_done.wait()
        assert time.monotonic() - started < 5
        assert session.running == ["first"]
        assert session.cancel("first")
    assert results["second"].error is not None
    assert results["second"].error.kind == ErrorKind.CANCELLED
    assert results["first"].error is not None
    assert results["first"].error.kind == ErrorKind.CANCELLED
    assert session.state.get(Slot).n == 1


@linux_only
def test_process_group_exit_kills_what_the_leader_left_behind() -> None:
    """When the block ends after the leader exited, its leftover background child is
    killed too, and the leader's exit code is kept."""
    pids: list[int] = []

    async def main() -> int:
        script = "sleep 30 > /dev/null & echo $!; exit 3"
        async with process_group(["sh", "-c", script], stdout=subprocess.PIPE) as proc:
            assert proc.stdout is not None
            pids.append(int((await proc.stdout.receive()).split()[0]))
            pids.append(proc.pid)
            code = await proc.wait()
            assert is_running(pids[0])
        return code

    assert anyio.run(main) == 3
    deadline = time.monotonic() + 2
    while is_running(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not is_running(pids[0])
    assert group_alive(pids[1]) == []


async def test_stream_holding_a_task_group_across_its_yields() -> None:
    """A generator may yield from inside its own task group, in streaming and blocking
    mode, and still be cancelled."""
    session = session_of(GroupedStream)
    async with session.stream("grouped_stream", {"seconds": 0}) as stream:
        items = [item async for item in stream]
    assert [getattr(i, "message", None) for i in items[:2]] == ["one", "two"]
    last = items[-1]
    assert isinstance(last, CallResult)
    assert last.text == "grouped stream done"
    seen: list[Progress] = []
    result = await session.call("grouped_stream", {"seconds": 0}, on_progress=seen.append)
    assert result.text == "grouped stream done"
    assert seen == [Progress("one"), Progress("two")]
    stamps: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_after, session, "gs", 0.05, stamps)
        async with session.stream("grouped_stream", {"seconds": 30}, "gs") as stream:
            items = [item async for item in stream]
    last = items[-1]
    assert isinstance(last, CallResult)
    assert last.error is not None
    assert last.error.kind == ErrorKind.CANCELLED
    assert session.running == []


class Relay(Tool[Seconds, str]):
    """Calls ``sleeper`` through its context, then keeps waiting itself."""

    id = "relay"

    async def run(self, ctx: Context, args: Seconds) -> str:
        """Relay, then wait: a cancellation the inner call swallowed would leave this
        running until the stop is repeated."""
        inner = await ctx.call("sleeper", {"seconds": args.seconds})
        await anyio.sleep(args.seconds)
        return f"relayed {inner.text}"


async def test_cancelling_a_call_stops_the_inner_call_it_waits_on_at_once() -> None:
    """Cancelling a call by id throws the loop's cancellation into what it awaits: here
    an inner call. That cancellation passes through the inner call (it is not a tool's
    own CancelledError, which would be the inner call's failure), so the outer call ends
    as cancelled at once instead of when the stop is repeated seconds later."""
    session = session_of(Relay, Sleeper)
    stamps: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel_after, session, "r1", 0.05, stamps)
        result = await session.call("relay", {"seconds": 30}, "r1")
    took = time.monotonic() - stamps[0]
    assert result.error is not None
    assert result.error.kind == ErrorKind.CANCELLED
    assert took < 3.0  # the stop is repeated every 5 s (REPEAT)
    timed = await session_of(Relay, Sleeper, default_timeout=0.2).call("relay", {"seconds": 30})
    assert timed.error is not None
    assert timed.error.kind == ErrorKind.TIMEOUT


async def test_a_tools_own_cancelled_error_is_its_failure_not_a_cancellation() -> None:
    """A CancelledError the tool raises while nothing cancels its call (it awaited
    something another task cancelled) is the call's failure; the session goes on."""

    class Cancels(Tool[Seconds, str]):
        id = "cancels"

        async def run(self, ctx: Context, args: Seconds) -> str:
            loop = asyncio.get_running_loop()
            other: asyncio.Future[None] = loop.create_future()
            loop.call_soon(other.cancel)
            await other
            return "not reached"

    session = session_of(Cancels, Sleeper)
    result = await session.call("cancels", {})
    assert result.error is not None
    assert result.error.kind == ErrorKind.EXECUTION_ERROR
    assert "CancelledError" in result.text
    assert (await session.call("sleeper", {"seconds": 0})).text == "woke"
