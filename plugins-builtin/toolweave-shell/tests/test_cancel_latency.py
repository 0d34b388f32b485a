"""A cancelled command returns at once, even when it ignores SIGTERM."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from toolweave import CallResult, ErrorKind, PackManager, Resources, Session
from toolweave_shell import BackgroundTasks, pack
from toolweave_shell._procs import process_alive

pytestmark = pytest.mark.anyio

# Every process of the tree ignores SIGTERM: the shell, a child and a grandchild.
COMMAND = (
    "trap '' TERM; echo $$ >> pids; "
    "sleep 60 & echo $! >> pids; "
    "(sleep 61 & echo $! >> pids; wait) & "
    "wait"
)


def _session(workspace: Path, tmp_path: Path) -> Session:
    """A shell session with the default terminal (its kill grace is 2 s)."""
    resources = Resources()
    resources.insert(BackgroundTasks(root=tmp_path / "tasks"))
    packs = PackManager(strict=True)
    packs.add("shell", pack)
    return packs.builder().build().session(resources=resources, workspace=workspace)


def _pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


async def _wait_for_pids(path: Path, count: int) -> None:
    with anyio.fail_after(10):
        while True:  # the shell writes the file: there is no event to wait on
            if len(_pids(path)) >= count:
                return
            await anyio.sleep(0.01)


@pytest.mark.parametrize("mode", ["call", "stream"])
async def test_cancel_of_a_sigterm_ignoring_tree_is_prompt(tmp_path: Path, mode: str) -> None:
    """cancel() ends the call within 300 ms and leaves no process of the tree running."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _session(workspace, tmp_path)
    results: list[CallResult] = []

    async def run() -> None:
        if mode == "call":
            results.append(await session.call("bash", {"command": COMMAND}, "c1"))
            return
        async with session.stream("bash", {"command": COMMAND}, "c1") as items:
            async for item in items:
                if isinstance(item, CallResult):
                    results.append(item)

    ended: list[float] = []
    async with anyio.create_task_group() as tg:

        async def timed() -> None:
            await run()
            ended.append(time.monotonic())

        tg.start_soon(timed)
        await _wait_for_pids(workspace / "pids", 3)
        cancelled_at = time.monotonic()
        assert session.cancel("c1")
    [result] = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert ended[0] - cancelled_at < 0.3
    pids = _pids(workspace / "pids")
    assert len(pids) == 3
    assert [p for p in pids if process_alive(p)] == []


async def test_a_timed_out_command_still_gets_its_grace(tmp_path: Path) -> None:
    """Running out of time is not a cancel: the command gets its SIGTERM grace to exit
    cleanly (a trap on TERM runs)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _session(workspace, tmp_path)
    command = "trap 'echo cleaned > done; exit 0' TERM; sleep 60 & wait"
    result = await session.call("bash", {"command": command, "timeout": 300})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert (workspace / "done").read_text() == "cleaned\n"
