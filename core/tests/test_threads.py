"""Blocking tool functions on worker threads: context, callbacks into the loop, abandon."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import anyio
import anyio.from_thread
import pytest
from toolweave import _threads
from toolweave._threads import run_in_worker

pytestmark = pytest.mark.anyio

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


async def test_worker_sees_context_and_calls_back_into_the_loop() -> None:
    """The function runs off the loop thread, sees the caller's context variables and
    can run code in the event loop through anyio.from_thread."""
    loop_thread = threading.get_ident()
    _VAR.set("caller")

    def work(x: int) -> tuple[int, str, int, int]:
        here = threading.get_ident()
        there = anyio.from_thread.run_sync(threading.get_ident)
        return x * 2, _VAR.get(), here, there

    doubled, seen, worker, callback = await run_in_worker(work, 21)
    assert (doubled, seen) == (42, "caller")
    assert worker != loop_thread
    assert callback == loop_thread


async def test_errors_of_the_function_reach_the_caller() -> None:
    """An exception raised on the worker thread is raised to the awaiting caller."""

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await run_in_worker(fail)


async def test_abandoned_threads_never_starve_later_calls() -> None:
    """Cancelled calls whose threads stay blocked are abandoned at once; once half a
    pool is taken by them, new calls go to a fresh pool and still run."""
    release = threading.Event()
    started = threading.Semaphore(0)
    first = _threads._current_pool()

    def block() -> None:
        started.release()
        release.wait(10)

    try:
        for _ in range(_threads.WORKERS):
            with anyio.move_on_after(5) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_in_worker, block)
                    await anyio.to_thread.run_sync(started.acquire)
                    tg.cancel_scope.cancel()
            assert not scope.cancelled_caught
        with anyio.fail_after(5):
            assert await run_in_worker(lambda: "ran") == "ran"
        assert _threads._current_pool() is not first
    finally:
        release.set()


async def test_a_call_cancelled_before_it_starts_never_runs(monkeypatch: Any) -> None:
    """A call cancelled while queued is dropped: its function never runs."""
    monkeypatch.setattr(_threads, "WORKERS", 2)
    monkeypatch.setattr(_threads, "_pool", None)
    release = threading.Event()
    ran: list[str] = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_in_worker, release.wait, 10)
            tg.start_soon(run_in_worker, release.wait, 10)
            await anyio.sleep(0.05)
            with anyio.move_on_after(0.05):
                await run_in_worker(ran.append, "queued")
            release.set()
        await anyio.to_thread.run_sync(lambda: None)
        assert ran == []
    finally:
        release.set()
        monkeypatch.undo()
