"""Redis paused (``SIGSTOP``: connections hang instead of failing) under a registry
center and under a state store: calls keep answering within bounded time, operator
writes fail with a typed error instead of hanging, nothing acknowledged is lost, and
both recover once Redis runs again. (Redis killed under load: tests/center/test_redis.py.)"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import anyio
import anyio.to_thread
import pytest
from pydantic import BaseModel
from toolweave import Context, Tool, ToolSetBuilder, tool
from toolweave.center import Center, CenterError
from toolweave.state import RedisStateStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paused(redis_server: Any, redis_url: str) -> Iterator[Callable[[bool], None]]:
    """``paused(True)`` stops the Redis process (SIGSTOP), ``paused(False)`` resumes
    it; it always runs again after the test."""
    pid = redis_server.process.pid

    def pause(on: bool) -> None:
        os.kill(pid, signal.SIGSTOP if on else signal.SIGCONT)

    yield pause
    os.kill(pid, signal.SIGCONT)


def _wait(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@tool(blocking=False)
def echo(text: str) -> str:
    """Say it back. Not for anything else.

    Args:
        text: What to say.
    """
    return text


async def test_center_on_a_paused_redis(redis_url: str, paused: Callable[[bool], None]) -> None:
    """While Redis is stopped, calls go on with the last known flags (a disabled tool
    stays refused), an operator's write fails as a CenterError after the store's
    timeout, and the center reports itself degraded; after SIGCONT every call's audit
    entry is written, exactly once."""
    builder = ToolSetBuilder()
    builder.add(echo)
    toolset = builder.build()
    center = Center.open(redis_url, poll_interval=0.1)
    try:
        session = toolset.session(session_id="paused")
        center.attach(session)
        center.disable("echo", reason="off for a while")
        center.enable("echo")
        for i in range(20):
            assert (await session.call("echo", {"text": str(i)})).error is None
        paused(True)
        with anyio.fail_after(60):
            for i in range(200):
                result = await session.call("echo", {"text": str(i)})
                assert result.error is None, result.text
        with anyio.fail_after(60), pytest.raises(CenterError):
            await anyio.to_thread.run_sync(lambda: center.disable("echo", reason="now"))
        await anyio.to_thread.run_sync(_wait, lambda: bool(center.health().degraded))
        paused(False)
        await anyio.to_thread.run_sync(
            _wait, lambda: not center.health().degraded and center.health().audit_pending == 0
        )
        center.flush_audit()
        assert len(center.audit(type="call", tool="echo", limit=1000)) == 220
        assert center.tool("echo").status.value == "enabled"
    finally:
        paused(False)
        center.close()


class Tally(BaseModel):
    """Numbers a tool remembers."""

    state_key: ClassVar[str] = "robustness.tally"

    items: list[int] = []


class Add(BaseModel):
    n: int = 0


class AddTool(Tool[Add, str]):
    """Appends a number to the session's tally. Not for anything else."""

    id = "add"
    description = "Append a number to the tally. Not for anything else."
    state = Tally

    async def run(self, ctx: Context, args: Add) -> str:
        tally = ctx.state(Tally)
        tally.items = [*tally.items, args.n]
        return str(len(tally.items))


async def test_state_store_on_a_paused_redis(
    redis_url: str, paused: Callable[[bool], None]
) -> None:
    """A call whose state cannot be saved while Redis is stopped still answers, within
    the store's timeout (no hang, no crash); its change is kept in the session and
    saved with the next save once Redis runs again, so nothing is lost."""
    builder = ToolSetBuilder()
    builder.add(AddTool)
    toolset = builder.build()
    store = RedisStateStore(redis_url, prefix="robustness", timeout=1.0)
    try:
        session = toolset.session(state_store=store, session_id="paused-state")
        for n in range(5):
            assert (await session.call("add", {"n": n})).error is None
        paused(True)
        with anyio.fail_after(60):
            during = await session.call("add", {"n": 99})
        assert during.error is None, during.text
        paused(False)
        assert (await session.call("add", {"n": 5})).error is None
        fresh = toolset.session(state_store=store, session_id="paused-state")
        assert (await fresh.call("add", {"n": 6})).text == "8"
        assert fresh.state.get(Tally).items == [0, 1, 2, 3, 4, 99, 5, 6]
    finally:
        paused(False)
        store.close()
