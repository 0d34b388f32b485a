"""Records outlive their session on the same state store; closing a session, stopping a
monitor and cancelling a call leave no thread, task or process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, Session, SQLiteStateStore
from toolweave.processes import process_alive
from toolweave_monitor import MonitorRecord, Monitors, MonitorState
from toolweave_shell import ShellTasks

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]
Waiter = Callable[..., Awaitable[None]]


def monitor_threads() -> list[threading.Thread]:
    """The monitor pack's watcher threads still alive in this process."""
    return [t for t in threading.enumerate() if t.name.startswith("toolweave-monitor-")]


def os_threads() -> int:
    """The threads of this process as the kernel counts them (native ones included)."""
    return len(os.listdir("/proc/self/task"))


def sleeper(cwd: Path) -> subprocess.Popen[bytes]:
    """A real process sleeping in ``cwd``."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], cwd=cwd)


def ended_process() -> int:
    """The id of a process that has ended."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


async def test_records_survive_a_new_session(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A session that closes marks its monitors stopped; a new session on the same store
    lists them with the events they kept, and numbers new monitors after them."""
    store = SQLiteStateStore(tmp_path / "state.db")
    first = make_session(state_store=store, session_id="s1")
    started = await first.call("monitor", {"path": "src"})
    assert started.error is None, started.text
    await anyio.sleep(0.2)
    (workspace / "src" / "kept.txt").write_text("x\n")
    record = first.state.get(MonitorState).monitors["monitor-1"]
    await wait_for(lambda: record.total_events > 0)
    await first.aclose()

    second = make_session(state_store=store, session_id="s1")
    listing = await second.call("monitors", {"monitor_id": "monitor-1"})
    assert listing.error is None, listing.text
    assert "monitor-1 (folder src): stopped (its session closed)" in listing.text
    assert "src/kept.txt" in listing.text
    again = await second.call("monitor", {"path": "notes.txt"})
    assert again.output["monitor_id"] == "monitor-2"


async def test_a_monitor_whose_host_is_gone_is_lost(make_session: SessionFactory) -> None:
    """A record left running by a host process that no longer exists is shown as lost."""
    dead_pid = ended_process()
    session = make_session()

    def crashed(state: MonitorState) -> None:
        state.monitors["monitor-1"] = MonitorRecord(
            id="monitor-1", kind="folder", target="src", runner=f"{dead_pid}:1:gone"
        )
        state.next_number = 2

    await session.state.update(MonitorState, crashed)
    listing = await session.call("monitors", {})
    assert "monitor-1 (folder src): lost (the host process that ran it is gone" in listing.text


async def test_closing_the_session_leaves_nothing_running(
    wait_for: Waiter, make_session: SessionFactory, http_server: object, workspace: Path
) -> None:
    """Closing a session with a monitor of every kind ends every watcher thread (the
    native file watchers included), and the shell task it watched is stopped too."""
    baseline = os_threads()
    session = make_session({"allow_loopback": True})
    task = await session.call("bash", {"command": "sleep 300", "is_background": True})
    assert task.error is None, task.text
    shell_pid = next(iter(session.state.get(ShellTasks).tasks.values())).pid
    child = sleeper(workspace)
    try:
        for arguments in (
            {"path": "src"},
            {"path": "notes.txt"},
            {"task_id": "task-1"},
            {"pid": child.pid},
            {"url": http_server.url},  # type: ignore[attr-defined]
        ):
            result = await session.call("monitor", arguments)
            assert result.error is None, result.text
        monitors = session.get_resource(Monitors)
        assert monitors is not None
        assert len(monitors.running()) == 5
        assert len(monitor_threads()) == 5
        await session.aclose()
        assert monitor_threads() == []
        assert not process_alive(shell_pid)
        records = session.state.get(MonitorState).monitors.values()
        assert {r.status for r in records} == {"stopped"}
        assert {r.note for r in records} == {"its session closed"}
        await wait_for(lambda: os_threads() <= baseline)
    finally:
        child.kill()
        child.wait()


async def test_stop_cancels_a_request_in_flight(
    make_session: SessionFactory, http_server: object
) -> None:
    """Stopping a URL monitor while its server is slow to answer does not wait for it."""
    server = http_server
    session = make_session({"allow_loopback": True})
    started = await session.call("monitor", {"url": server.url, "interval_s": 0.05})  # type: ignore[attr-defined]
    assert started.error is None, started.text
    server.delay_s = 20  # type: ignore[attr-defined]
    await anyio.sleep(0.3)  # a request is waiting for the server
    before = time.monotonic()
    stopped = await session.call("stop_monitor", {"monitor_id": "monitor-1"})
    assert stopped.error is None
    assert time.monotonic() - before < 10  # the server would answer after 20 s
    assert monitor_threads() == []


async def test_a_cancelled_call_starts_no_monitor(
    make_session: SessionFactory, http_server: object
) -> None:
    """Cancelling ``monitor`` during its first request records nothing and starts no
    thread."""
    server = http_server
    server.delay_s = 20  # type: ignore[attr-defined]
    session = make_session({"allow_loopback": True})
    outcome = {}

    async def call() -> None:
        outcome["result"] = await session.call("monitor", {"url": server.url}, "c1")  # type: ignore[attr-defined]

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(0.3)
        assert session.cancel("c1")
    result = outcome["result"]
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert session.state.get(MonitorState).monitors == {}
    assert monitor_threads() == []
