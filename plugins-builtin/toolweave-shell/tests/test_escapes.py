"""Processes that leave the command's process group and session (``setsid``, a daemon's
double fork) die with the command all the same: on timeout, cancel, close and exit."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import CallResult, ErrorKind, Session
from toolweave.processes import process_alive

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

ESCAPES = (
    "setsid sleep 300 & echo $! >> pids; "  # a new session, still a child of the shell
    "(setsid sleep 301 & echo $! >> pids) & "  # its parent exits: re-parented
    "(setsid sh -c 'echo $$ >> pids; sleep 302 & echo $! >> pids; wait' &) ; "  # a daemon
    "while [ $(wc -l < pids) -lt 4 ]; do sleep 0.01; done; echo started; "
)
"""Starts four processes outside the shell's group, then says ``started``."""


def _pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


async def _poll(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Check ``predicate`` until it holds (``True``) or ``seconds`` pass (``False``)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.01)
    return True


def _running(workspace: Path) -> list[int]:
    return [p for p in _pids(workspace / "pids") if process_alive(p)]


async def test_timeout_kills_processes_that_left_the_group(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A command that times out takes its setsid children and its daemon with it."""
    session = make_session()
    result = await session.call("bash", {"command": ESCAPES + "sleep 60", "timeout": 3000})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert "started" in result.text
    assert len(_pids(workspace / "pids")) == 4
    assert _running(workspace) == []


async def test_cancel_kills_processes_that_left_the_group(
    make_session: SessionFactory, workspace: Path
) -> None:
    """Cancelling the call by id leaves none of the escaped processes running."""
    session = make_session()
    results: list[CallResult] = []

    async def run() -> None:
        results.append(await session.call("bash", {"command": ESCAPES + "sleep 60"}, "c1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        assert await _poll(lambda: len(_running(workspace)) == 4)
        assert session.cancel("c1")
    [result] = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert _running(workspace) == []


async def test_a_command_that_exits_leaves_no_escaped_process(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A command that ends normally after starting them: they are stopped when it
    returns, and the model is told."""
    session = make_session()
    result = await session.call("bash", {"command": ESCAPES + "exit 0"})
    assert result.error is None, result.text
    assert "they were stopped" in result.text
    assert len(_pids(workspace / "pids")) == 4
    assert _running(workspace) == []


async def test_closing_the_session_kills_what_a_task_left_outside_its_group(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A background task whose shell has already exited leaves escaped processes behind;
    closing the session stops them."""
    session = make_session()
    started = await session.call("bash", {"command": ESCAPES, "is_background": True})
    assert started.error is None, started.text
    assert await _poll(lambda: len(_running(workspace)) == 4)
    await session.aclose()
    assert _running(workspace) == []
