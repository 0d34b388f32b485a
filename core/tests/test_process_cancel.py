"""process_group: a cancelled block returns at once, even when its command ignores
SIGTERM; a normal exit still gives the command its grace."""

from __future__ import annotations

import os
import subprocess
import time

import anyio
import pytest
from toolweave import process_group

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
    """Cancelling the scope around the block ends it within 300 ms, nothing left."""
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        async with process_group(["sh", "-c", STUBBORN], stdout=subprocess.PIPE) as proc:
            assert proc.stdout is not None
            pids += [proc.pid, int((await proc.stdout.receive()).split()[0])]
            started = time.monotonic()
            scope.cancel()
            await proc.wait()
    assert time.monotonic() - started < 0.3
    assert [p for p in pids if _alive(p)] == []


async def test_leaving_the_block_normally_waits_the_grace() -> None:
    """Leaving the block without cancellation sends SIGTERM and waits `grace` first."""
    started = time.monotonic()
    async with process_group(["sh", "-c", STUBBORN], stdout=subprocess.PIPE, grace=0.5) as proc:
        assert proc.stdout is not None
        grandchild = int((await proc.stdout.receive()).split()[0])
    assert 0.4 < time.monotonic() - started < 3
    assert not _alive(proc.pid)
    assert not _alive(grandchild)
