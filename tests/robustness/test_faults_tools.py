"""Tool code that fails badly: what the host sees, and that the session goes on.

Every way a tool runs is tried (a coroutine that fails before or after its first
suspension, a plain function inline or in a worker thread, a streaming generator):

* ``MemoryError``, ``RecursionError``, ``SystemExit`` (a tool calling ``sys.exit()``),
  ``GeneratorExit`` and the tool's own ``BaseException`` classes end the call as
  ``execution_error`` naming the exception; the host process goes on.
* ``KeyboardInterrupt`` steers whoever runs the call: it reaches the host unchanged.
* Either way the session stays usable: state locks are given back and the next call
  of the same tool works.

A tool that blocks in its worker thread never freezes the event loop and is stopped at
its deadline.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
import pytest
from pydantic import BaseModel
from toolweave import Context, ErrorKind, Progress, Session, Tool, ToolSetBuilder, tool

pytestmark = pytest.mark.anyio


class Outcome(BaseException):
    """A BaseException that is neither an error nor toolweave's own."""


class Count(BaseModel):
    """What every raising tool counts, so calls hold a state lock."""

    state_key: ClassVar[str] = "robustness.count"

    calls: int = 0
    """Calls that reached the tool."""


def _deep(n: int) -> int:
    return _deep(n + 1) + 1


def _raise(what: str) -> None:
    if what == "recursion":
        _deep(0)
    if what == "exit":
        sys.exit(3)
    raise {
        "memory": MemoryError,
        "interrupt": KeyboardInterrupt,
        "generator-exit": GeneratorExit,
        "outcome": Outcome,
    }[what]("boom")


def _tools() -> list[Any]:
    """One tool per way of running; each raises what its ``what`` argument names when
    ``fail`` is true, else answers ``ok``."""

    def coroutine(wait: bool) -> Any:
        async def run(ctx: Context, what: str, fail: bool = True) -> str:
            """Raise, before or after a suspension. Not for real work.

            Args:
                what: What to raise.
                fail: Whether to raise.
            """
            ctx.state(Count).calls += 1
            if wait:
                await anyio.sleep(0.01)
            if fail:
                _raise(what)
            return "ok"

        return run

    first_step = tool(id="first_step", blocking=False, state=Count)(coroutine(False))
    after_wait = tool(id="after_wait", blocking=False, state=Count)(coroutine(True))

    def plain(what: str, fail: bool = True) -> str:
        """Raise from a plain function. Not for real work.

        Args:
            what: What to raise.
            fail: Whether to raise.
        """
        if fail:
            _raise(what)
        return "ok"

    in_thread = tool(id="in_thread", blocking=True)(plain)
    inline = tool(id="inline", blocking=False)(plain)
    return [first_step, after_wait, in_thread, inline, Streaming]


class Raise(BaseModel):
    """What to raise, and whether."""

    what: str
    """What to raise."""
    fail: bool = True
    """Whether to raise."""


class Streaming(Tool[Raise, str]):
    """Raises between progress items. Not for real work."""

    id = "streaming"
    state = Count

    async def stream(self, ctx: Context, args: Raise) -> AsyncIterator[Progress | str]:
        """Report progress, then raise or answer."""
        ctx.state(Count).calls += 1
        yield Progress(message="working")
        await anyio.sleep(0.01)
        if args.fail:
            _raise(args.what)
        yield "ok"


WAYS = ["first_step", "after_wait", "in_thread", "inline", "streaming"]


@pytest.fixture
def session(tmp_path: Any) -> Session:
    """A session over one raising tool per way of running, in a temporary workspace."""
    builder = ToolSetBuilder()
    builder.add_all(_tools())
    return builder.build().session(workspace=tmp_path)


async def _call(session: Session, way: str, what: str, *, fail: bool = True) -> Any:
    arguments = {"what": what, "fail": fail}
    if way == "streaming":
        return await session.call(name=way, arguments=arguments, on_progress=lambda _: None)
    return await session.call(way, arguments)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("what", "named"),
    [
        ("memory", "MemoryError"),
        ("recursion", "RecursionError"),
        ("exit", "SystemExit"),
        ("generator-exit", "GeneratorExit"),
        ("outcome", "Outcome"),
    ],
)
async def test_errors_and_sys_exit_are_the_calls_failure(
    session: Session, way: str, what: str, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    """MemoryError, RecursionError, sys.exit(), GeneratorExit and a BaseException class
    of the tool's own end its call as execution_error naming the exception (logged with
    its traceback); the next call of the same tool works. A GeneratorExit from a worker
    thread included: it is carried back as an ordinary exception (thrown into the
    awaiting task, it would close every coroutine of the host's await chain)."""
    result = await _call(session, way, what)
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert f"{way} failed: {named}" in result.text
    assert any(r.exc_info and r.exc_info[0].__name__ == named for r in caplog.records)
    again = await _call(session, way, what, fail=False)
    assert again.ok, again.text
    assert again.text == "ok"


@pytest.mark.parametrize("way", WAYS)
async def test_keyboard_interrupt_reaches_the_host_and_the_session_goes_on(
    session: Session, way: str
) -> None:
    """KeyboardInterrupt is not turned into a result; afterwards the session's locks are
    free and its calls work (a held state lock would make the next call wait until the
    test's time limit)."""
    with pytest.raises(KeyboardInterrupt):
        await _call(session, way, "interrupt")
    with anyio.fail_after(10):
        again = await _call(session, way, "interrupt", fail=False)
    assert again.text == "ok"


async def test_a_tool_blocking_its_thread_never_freezes_the_loop() -> None:
    """Twenty calls of a tool blocking its worker thread for 2 s: each is stopped at
    its 0.3 s deadline, and a heartbeat on the loop never waits anywhere near that long."""
    release = threading.Event()

    @tool(id="stuck", blocking=True, timeout=0.3)
    def stuck() -> str:
        """Block until released. Not for real work."""
        release.wait(2.0)
        return "late"

    builder = ToolSetBuilder()
    builder.add(stuck)
    session = builder.build().session()
    gaps: list[float] = []
    results: list[Any] = []

    async def heartbeat(stop: anyio.Event) -> None:
        last = time.monotonic()
        while not stop.is_set():
            await anyio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async def one(i: int) -> None:
        results.append(await session.call("stuck", {}, f"c{i}"))

    try:
        stop = anyio.Event()
        async with anyio.create_task_group() as outer:
            outer.start_soon(heartbeat, stop)
            async with anyio.create_task_group() as calls:
                for i in range(20):
                    calls.start_soon(one, i)
            stop.set()
    finally:
        release.set()
    assert [r.error.kind for r in results] == [ErrorKind.TIMEOUT] * 20
    assert max(gaps) < 0.25
