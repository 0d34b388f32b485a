"""A cancelled command returns at once, even when it ignores SIGTERM, and leaves nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from toolweave import CallResult, ErrorKind, PackManager, Resources, Session
from toolweave.processes import process_alive
from toolweave_shell import BackgroundTasks, pack

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
    """cancel() ends the call well before the 2 s kill grace (the cancel grace applies)
    and leaves no process of the tree running."""
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
    assert ended[0] - cancelled_at < 1.5  # generous; waiting out the grace takes 2 s
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


def _running_with(token: str) -> list[int]:
    """Processes (zombies aside) whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = (Path("/proc") / name / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and process_alive(int(name)):
            found.append(int(name))
    return found


async def _stream(session: Session, command: str, call_id: str, out: list[CallResult]) -> None:
    async with session.stream("bash", {"command": command}, call_id) as items:
        out.extend([item async for item in items if isinstance(item, CallResult)])


@pytest.mark.slow
@pytest.mark.parametrize(
    "calls", [pytest.param(60, id="60"), pytest.param(400, id="400", marks=pytest.mark.soak)]
)
async def test_soak_stream_cancels_leave_nothing(tmp_path: Path, calls: int) -> None:
    """Streamed calls of a SIGTERM-ignoring tree (60 in the normal run, 400 under
    ``nox -s soak``), each cancelled at another moment (while the shell starts, after 1,
    2 or 3 of its processes exist): every cancelled result comes back with no process of
    its command left running."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = _session(workspace, tmp_path)
    with anyio.fail_after(calls * 1.2):
        for i in range(calls):
            token = f"60.{i:04d}1"  # a sleep length no other command uses
            command = COMMAND.replace("sleep 60", f"sleep {token}").replace(
                "sleep 61", f"sleep 1{token}"
            )
            (workspace / "pids").unlink(missing_ok=True)
            results: list[CallResult] = []

            async with anyio.create_task_group() as tg:
                tg.start_soon(_stream, session, command, f"s{i}", results)
                await _wait_for_pids(workspace / "pids", i % 4)
                with anyio.fail_after(10):
                    while not session.cancel(f"s{i}"):
                        await anyio.lowlevel.checkpoint()
            [result] = results
            assert result.error is not None, i
            assert result.error.kind is ErrorKind.CANCELLED, i
            assert _running_with(token) == [], f"call {i}"
