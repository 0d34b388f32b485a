"""Closing a session stops its background tasks and their monitors, and only its."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import PackManager, Resources, Session
from toolweave.processes import process_alive
from toolweave_shell import BackgroundTasks, LocalTerminal, ShellTasks, Terminal, pack

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

TASK = "sleep 300 & echo $! >> pids; wait"
"""A task whose shell waits on a child; the child's id goes to ``pids``."""


def _pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def _running(pids: list[int]) -> list[int]:
    return [p for p in pids if process_alive(p)]


async def _poll(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Check ``predicate`` until it holds (``True``) or ``seconds`` pass (``False``)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.01)
    return True


def _monitors() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("toolweave-task-")]


async def _start_three(session: Session, workspace: Path) -> list[int]:
    """Start three tasks; the ids of their shells and of their children."""
    for _ in range(3):
        started = await session.call("bash", {"command": TASK, "is_background": True})
        assert started.error is None, started.text
    assert await _poll(lambda: len(_pids(workspace / "pids")) == 3)
    return _shells(session) + _pids(workspace / "pids")


def _shells(session: Session) -> list[int]:
    return [record.pid for record in session.state.get(ShellTasks).tasks.values()]


async def test_aclose_stops_the_sessions_background_tasks(
    make_session: SessionFactory, workspace: Path
) -> None:
    """Three running tasks (shells and children) and their monitor threads are gone once
    ``await session.aclose()`` returns."""
    session = make_session()
    pids = await _start_three(session, workspace)
    assert len(_running(pids)) == 6
    assert len(_monitors()) == 3
    await session.aclose()
    assert _running(pids) == []
    assert _monitors() == []


def test_leaving_a_sync_session_stops_its_background_tasks(workspace: Path, tmp_path: Path) -> None:
    """Leaving ``with toolset.session(...).sync() as s:`` stops the three tasks it started."""
    packs = PackManager(strict=True)
    packs.add("shell", pack)
    host = Resources()
    host.insert(BackgroundTasks(root=tmp_path / "tasks"))
    toolset = packs.builder().build()
    with toolset.session(workspace=workspace, resources=host).sync() as s:
        for _ in range(3):
            started = s.call("bash", {"command": TASK, "is_background": True})
            assert started.error is None, started.text
        deadline = time.monotonic() + 10
        while len(_pids(workspace / "pids")) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        pids = _shells(s.session) + _pids(workspace / "pids")
        assert len(_running(pids)) == 6
    assert _running(pids) == []
    assert _monitors() == []


async def test_closing_one_session_spares_the_tasks_of_another(
    make_session: SessionFactory, tmp_path: Path
) -> None:
    """Two sessions share the host's task manager: closing one stops its tasks only."""
    first_ws, second_ws = tmp_path / "one", tmp_path / "two"
    first_ws.mkdir()
    second_ws.mkdir()
    first = make_session(workspace=first_ws)
    second = make_session(workspace=second_ws)
    assert first.resources.require(BackgroundTasks) is second.resources.require(BackgroundTasks)
    for session in (first, second):
        started = await session.call("bash", {"command": TASK, "is_background": True})
        assert started.error is None, started.text
    assert await _poll(lambda: bool(_pids(first_ws / "pids") and _pids(second_ws / "pids")))
    await first.aclose()
    assert _running(_pids(first_ws / "pids")) == []
    assert len(_running(_pids(second_ws / "pids"))) == 1
    listed = await second.call("task_output", {"task_id": "task-1"})
    assert listed.output["task"]["status"] == "running"
    await second.aclose()
    assert _running(_pids(second_ws / "pids")) == []


async def test_closing_stops_tasks_that_ignore_sigterm_together(
    workspace: Path, tmp_path: Path
) -> None:
    """Six tasks that ignore SIGTERM share one grace period (1 s) when their session
    closes: well under the 6 s it takes to stop them one after another."""
    packs = PackManager(strict=True)
    packs.add("shell", pack)
    host = Resources()
    host.insert(LocalTerminal(kill_grace=1.0), Terminal)
    host.insert(BackgroundTasks(root=tmp_path / "tasks"))
    session = packs.builder().build().session(workspace=workspace, resources=host)
    command = "echo $$ >> pids; trap '' TERM; exec sleep 300"
    try:
        for _ in range(6):
            started = await session.call("bash", {"command": command, "is_background": True})
            assert started.error is None, started.text
        assert await _poll(lambda: len(_running(_pids(workspace / "pids"))) == 6)
        pids = _pids(workspace / "pids")
        began = time.monotonic()
        await session.aclose()
        took = time.monotonic() - began
        assert _running(pids) == []
        assert took < 4.0, f"closing took {took:.1f} s"
    finally:
        await host.require(BackgroundTasks).kill_all()
