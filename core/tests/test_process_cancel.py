"""process_group: a cancelled block returns at once, even when its command ignores
SIGTERM; a normal exit still gives the command its grace; processes that left the
command's group and session die with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import anyio
import pytest
from anyio.abc import Process
from toolweave import process_group
from toolweave.processes import ProcessTree, protect_host

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX only"),
]

STUBBORN = "trap '' TERM; sleep 60 & echo $!; wait"
"""A shell ignoring SIGTERM, with a grandchild that inherits the ignoring."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is not alive
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


async def test_cancelled_block_kills_a_sigterm_ignoring_tree_at_once() -> None:
    """Cancelling the scope around the block ends it without waiting out the (long)
    grace, nothing left."""
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        command = ["sh", "-c", STUBBORN]
        async with process_group(command, stdout=subprocess.PIPE, grace=60) as proc:
            assert proc.stdout is not None
            pids += [proc.pid, int((await proc.stdout.receive()).split()[0])]
            started = time.monotonic()
            scope.cancel()
            await proc.wait()
    assert time.monotonic() - started < 30  # generous: the grace would take 60 s
    assert [p for p in pids if _alive(p)] == []


async def test_leaving_the_block_normally_waits_the_grace() -> None:
    """Leaving the block without cancellation sends SIGTERM and waits `grace` first."""
    started = time.monotonic()
    async with process_group(["sh", "-c", STUBBORN], stdout=subprocess.PIPE, grace=0.5) as proc:
        assert proc.stdout is not None
        grandchild = int((await proc.stdout.receive()).split()[0])
    assert 0.5 <= time.monotonic() - started < 30
    assert not _alive(proc.pid)
    assert not _alive(grandchild)


ESCAPES = (
    "setsid sleep 300 & echo $!; "  # a new session, still a child of the shell
    "(setsid sleep 301 & echo $!); "  # its parent exits: re-parented
    "(setsid sh -c 'sleep 302 & echo $!; wait' &); "  # a daemon's double fork
    "sleep 60"
)


async def _read_pids(proc: Process, count: int) -> list[int]:
    stdout = proc.stdout
    assert stdout is not None
    text = b""
    with anyio.fail_after(10):
        while len(text.split()) < count:
            text += await stdout.receive()
    return [int(p) for p in text.split()]


@pytest.mark.parametrize("how", ["exit", "cancel"])
async def test_processes_that_left_the_group_die_with_the_block(how: str) -> None:
    """setsid children and a double-forked daemon are killed however the block ends."""
    with anyio.CancelScope() as scope:
        async with process_group(["sh", "-c", ESCAPES], stdout=subprocess.PIPE) as proc:
            pids = await _read_pids(proc, 3)
            assert [p for p in pids if _alive(p)] == pids
            if how == "cancel":
                scope.cancel()
                await proc.wait()
    assert [p for p in pids if _alive(p)] == []


async def test_a_tree_finds_its_processes_by_tag_after_the_root_is_gone() -> None:
    """With the root already reaped, the tree still finds (and kills) what it started."""
    tag, env = ProcessTree.tag_environment()
    proc = await anyio.open_process(
        ["sh", "-c", "setsid sleep 300 & echo $!"],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    async with proc:
        [escaped] = await _read_pids(proc, 1)
        await proc.wait()
    tree = ProcessTree(proc.pid, tag)
    assert tree.members() == {escaped}
    assert tree.kill_now()
    assert not _alive(escaped)
    assert not tree.alive()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
async def test_a_process_group_marks_the_host_not_dumpable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before it starts a command the host is marked not dumpable (its /proc files are
    closed to the command's user), unless TOOLWEAVE_HOST_DUMPABLE=1."""
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE 1, as an ordinary process starts
    monkeypatch.setenv("TOOLWEAVE_HOST_DUMPABLE", "1")
    async with process_group(["true"]) as proc:
        await proc.wait()
    assert prctl(3, 0, 0, 0, 0) == 1  # PR_GET_DUMPABLE: left as it was
    monkeypatch.delenv("TOOLWEAVE_HOST_DUMPABLE")
    async with process_group(["true"]) as proc:
        await proc.wait()
    assert prctl(3, 0, 0, 0, 0) == 0
    assert protect_host() is True
