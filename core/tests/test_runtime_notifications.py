"""Notifications: delivery to callbacks and async iterators, declared names, threads."""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import (
    Capabilities,
    Context,
    ErrorKind,
    Notification,
    Notifier,
    Resources,
    Tool,
    ToolSetBuilder,
)

pytestmark = pytest.mark.anyio


class Emit(BaseModel):
    """Which notification to emit."""

    name: str = "execution_complete"
    """The notification's name."""


class Runner(Tool[Emit, str]):
    """Emits a notification, from the event loop."""

    id = "runner"
    emitted_notifications = ("execution_complete", "execution_failed")

    async def run(self, ctx: Context, args: Emit) -> str:
        """Emit ``args.name`` with some data."""
        ctx.notify(args.name, {"exit_code": 0})
        return "emitted"


class ThreadRunner(Tool[Emit, str]):
    """Emits from a worker thread."""

    id = "thread_runner"
    emitted_notifications = ("execution_complete",)
    capabilities = Capabilities(blocking=True)

    def run(self, ctx: Context, args: Emit) -> str:
        """Emit from the thread; report the thread."""
        ctx.notify(args.name, {"thread": threading.get_ident()})
        return "emitted"


def session(**options: Any) -> Any:
    builder = ToolSetBuilder()
    builder.add_all([Runner, ThreadRunner])
    return builder.build().session(**options)


async def test_callback_and_iterator_receive_each_notification() -> None:
    """A callback and an async iterator both get the notification with its context."""
    s = session(session_id="n1", debug=True)
    received: list[Notification] = []
    unsubscribe = s.notifier.subscribe(received.append)
    with s.notifier.listen() as events:
        result = await s.call("runner", {"name": "execution_failed"}, "c1")
        assert result.ok
        with anyio.fail_after(1):
            streamed = await events.__anext__()
    assert received == [streamed]
    (note,) = received
    assert (note.name, note.data, note.tool) == (
        "execution_failed",
        {"exit_code": 0},
        "main:runner",
    )
    assert (note.session_id, note.call_id) == ("n1", "c1")
    unsubscribe()
    await s.call("runner", {})
    assert len(received) == 1


async def test_iteration_ends_when_the_listener_closes() -> None:
    """Closing a listener ends its iteration after what it already received."""
    s = session()
    events = s.notifier.listen()
    await s.call("runner", {})
    events.close()
    got = [n.name async for n in events]
    assert got == ["execution_complete"]
    with events:
        pass


async def test_undeclared_notification_fails_in_debug_mode() -> None:
    """In debug mode an undeclared name fails the call, naming the notification."""
    s = session(debug=True)
    received: list[Notification] = []
    s.notifier.subscribe(received.append)
    result = await s.call("runner", {"name": "surprise"})
    assert result.error is not None
    assert result.error.kind == ErrorKind.EXECUTION_ERROR
    assert "'surprise', which it does not declare" in result.text
    assert received == []


async def test_undeclared_notification_warns_once_otherwise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Outside debug mode an undeclared name is delivered and logged once per tool and name."""
    s = session()
    received: list[Notification] = []
    s.notifier.subscribe(received.append)
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await s.call("runner", {"name": "surprise"})).ok
        assert (await s.call("runner", {"name": "surprise"})).ok
    assert [n.name for n in received] == ["surprise", "surprise"]
    assert caplog.text.count("does not declare") == 1


async def test_notification_from_a_worker_thread_is_delivered_in_the_loop() -> None:
    """A blocking tool may notify; subscribers are called in the event loop's thread."""
    s = session(debug=True)
    seen: list[tuple[int, Any]] = []
    s.notifier.subscribe(lambda n: seen.append((threading.get_ident(), n.data["thread"])))
    with s.notifier.listen() as events:
        assert (await s.call("thread_runner", {})).ok
        with anyio.fail_after(1):
            streamed = await events.__anext__()
    ((caller, emitter),) = seen
    assert caller == threading.get_ident()
    assert emitter != caller
    assert streamed.data["thread"] == emitter


async def test_a_broken_or_async_callback_does_not_stop_delivery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A callback that raises, or an async one, is logged; the other subscribers still run."""
    s = session()
    received: list[str] = []

    def broken(n: Notification) -> None:
        raise RuntimeError("subscriber bug")

    async def asynchronous(n: Notification) -> None:
        received.append("never")

    s.notifier.subscribe(broken)
    s.notifier.subscribe(asynchronous)
    s.notifier.subscribe(lambda n: received.append(n.name))
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        assert (await s.call("runner", {})).ok
    assert received == ["execution_complete"]
    assert "subscriber bug" in caplog.text
    assert "is async" in caplog.text


async def test_a_host_notifier_is_shared_by_sessions() -> None:
    """A Notifier in the host resources receives the notifications of every session."""
    host = Resources()
    notifier = Notifier(debug=True)
    host.insert(notifier)
    received: list[str] = []
    notifier.subscribe(lambda n: received.append(n.session_id))
    builder = ToolSetBuilder()
    builder.add(Runner)
    toolset = builder.build()
    for sid in ("a", "b"):
        s = toolset.session(resources=host, session_id=sid)
        assert s.notifier is notifier
        await s.call("runner", {})
    assert received == ["a", "b"]


async def test_a_full_listener_drops_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    """A listener that does not keep up loses notifications beyond its buffer, with a warning."""
    s = session()
    with s.notifier.listen(buffer=1) as events, caplog.at_level(logging.WARNING):
        await s.call("runner", {})
        await s.call("runner", {"name": "execution_failed"})
        first = await events.__anext__()
    assert first.name == "execution_complete"
    assert "dropped" in caplog.text
