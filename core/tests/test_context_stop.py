"""``Context.stopped`` and ``Context.in_thread``: work a call left on a worker thread
learns that nobody waits for it any more (a timeout, a cancellation) and ends early."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from toolweave import Context, ErrorKind, ToolSetBuilder, tool

pytestmark = pytest.mark.anyio

ENDED_WITHIN = 30.0
"""Generous seconds for an abandoned thread to notice (it checks every 10 ms)."""


def _session(*tools: Any, **options: Any) -> Any:
    builder = ToolSetBuilder()
    for t in tools:
        builder.add(t)
    return builder.build().session(**options)


def _spin(ctx: Context, ended: threading.Event, checks: list[bool]) -> str:
    """Run until the call is stopped (or for a minute); note what ``stopped`` said."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        checks.append(ctx.stopped)
        if ctx.stopped:
            ended.set()
            return "stopped"
        time.sleep(0.01)
    return "ran out"


async def test_a_blocking_tool_sees_its_call_stopped_on_timeout() -> None:
    ended = threading.Event()
    checks: list[bool] = []

    @tool(read_only=True, timeout=0.2)
    def spin(ctx: Context) -> str:
        """Spin until stopped."""
        return _spin(ctx, ended, checks)

    async with _session(spin) as session:
        result = await session.call("spin", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert await anyio.to_thread.run_sync(ended.wait, ENDED_WITHIN)
    assert checks[0] is False  # not stopped while the call waited for it
    assert checks[-1] is True


async def test_an_async_tool_hands_work_to_in_thread_which_stops_with_the_call() -> None:
    ended = threading.Event()
    checks: list[bool] = []

    @tool(read_only=True, timeout=0.2)
    async def spin_async(ctx: Context) -> str:
        """Spin on a worker thread until stopped."""
        return await ctx.in_thread(_spin, ctx, ended, checks)

    async with _session(spin_async) as session:
        result = await session.call("spin_async", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert await anyio.to_thread.run_sync(ended.wait, ENDED_WITHIN)
    assert checks[0] is False
    assert checks[-1] is True


async def test_a_cancelled_call_stops_its_thread() -> None:
    ended = threading.Event()
    checks: list[bool] = []

    @tool(read_only=True)
    def spin(ctx: Context) -> str:
        """Spin until stopped."""
        return _spin(ctx, ended, checks)

    async with _session(spin) as session:
        with anyio.move_on_after(0.2):
            await session.call("spin", {})
    assert await anyio.to_thread.run_sync(ended.wait, ENDED_WITHIN)


async def test_work_that_ends_leaves_the_call_running_on() -> None:
    """``in_thread`` twice in one call: the first answer does not stop the second."""

    @tool(read_only=True)
    async def twice(ctx: Context) -> list[bool]:
        """Two steps on worker threads."""
        first = await ctx.in_thread(lambda: ctx.stopped)
        second = await ctx.in_thread(lambda: ctx.stopped)
        return [first, second, ctx.stopped, ctx.stop_event.is_set()]

    async with _session(twice) as session:
        result = await session.call("twice", {})
    assert result.error is None
    assert result.output == [False, False, False, False]


async def test_the_stop_event_can_be_waited_on() -> None:
    """``stop_event.wait(seconds)`` sleeps unless the call is stopped."""
    woke = threading.Event()

    @tool(read_only=True, timeout=0.2)
    def nap(ctx: Context) -> str:
        """Sleep a minute unless stopped."""
        stopped = ctx.stop_event.wait(60)
        if stopped:
            woke.set()
        return "done"

    async with _session(nap) as session:
        result = await session.call("nap", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert await anyio.to_thread.run_sync(woke.wait, ENDED_WITHIN)


async def test_a_generator_exit_in_an_in_thread_step_is_the_tools_failure() -> None:
    """A ``GeneratorExit`` raised on the worker thread comes back as the call's failure,
    as it does for a blocking tool, instead of escaping ``session.call``."""

    def close() -> None:
        raise GeneratorExit("from a thread")

    @tool(read_only=True)
    async def closes(ctx: Context) -> str:
        """Raise GeneratorExit on a worker thread."""
        await ctx.in_thread(close)
        return "unreachable"

    async with _session(closes) as session:
        result = await session.call("closes", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "GeneratorExit" in result.error.message
