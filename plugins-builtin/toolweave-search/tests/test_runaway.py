"""Runaway matching on the Python engine dies with the call.

Python's ``re`` cannot be interrupted, so the engine runs in a worker process that is
killed at the deadline or on cancel. A catastrophic pattern ``(a*)*b`` against a line
of ``a`` (and a ``.gitignore`` pattern that backtracks the same way against a long
name) must end the call promptly and leave nothing burning CPU: no child process, and
this process idle afterwards. Bounds are generous (a loaded machine must not flake).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, PackManager, Session
from toolweave_search import pack

pytestmark = pytest.mark.anyio

DEADLINE = 1.0
"""The call's timeout, in seconds."""

ENDS_WITHIN = 15.0
"""The call must have returned by then (its deadline plus a generous margin)."""

IDLE = 2.0
"""How long this process is watched after the call."""

MAX_CPU_WHILE_IDLE = 1.0
"""CPU seconds this process may use while idle for :data:`IDLE` seconds; a thread left
matching would use about all of them."""


def _session(root: Path) -> Session:
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {
        "tools": [
            {"id": "grep", "timeout": DEADLINE, "params": {"engine": "python"}},
            {"id": "glob", "timeout": DEADLINE, "params": {"engine": "python"}},
        ]
    }
    return packs.builder().build(config).session(workspace=root, debug=True)


def _children() -> list[int]:
    """The pids of this process's children still alive (zombies included)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


async def _ends_promptly_and_leaves_nothing(
    session: Session, tool: str, args: dict[str, str]
) -> str:
    """Call ``tool``; check the call ends by :data:`ENDS_WITHIN` and nothing keeps
    running; return the error kind."""
    before = set(_children())
    started = time.monotonic()
    result = await session.call(tool, args)
    assert time.monotonic() - started < ENDS_WITHIN
    assert result.error is not None, result.text
    assert set(_children()) <= before
    cpu = time.process_time()
    await anyio.sleep(IDLE)
    assert time.process_time() - cpu < MAX_CPU_WHILE_IDLE
    assert set(_children()) <= before
    return str(result.error.kind)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
async def test_a_catastrophic_pattern_ends_at_the_deadline(tmp_path: Path) -> None:
    """``(a*)*b`` against 64 ``a``: the call ends with ``timeout`` and its worker is
    gone (with Python's ``re`` in a thread, the match would run for ages)."""
    (tmp_path / "evil.txt").write_text("a" * 64 + "\n")
    kind = await _ends_promptly_and_leaves_nothing(
        _session(tmp_path), "grep", {"pattern": "(a*)*b"}
    )
    assert kind == ErrorKind.TIMEOUT


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
async def test_a_cancelled_search_stops_its_worker(tmp_path: Path) -> None:
    """A call cancelled before its deadline kills its worker at once."""
    (tmp_path / "evil.txt").write_text("a" * 64 + "\n")
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {"tools": [{"id": "grep", "timeout": 600, "params": {"engine": "python"}}]}
    session = packs.builder().build(config).session(workspace=tmp_path, debug=True)
    before = set(_children())
    results = []

    async def call() -> None:
        results.append(await session.call("grep", {"pattern": "(a*)*b"}, call_id="c1"))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        for _ in range(300):  # until the worker has started (15 s at most)
            if set(_children()) - before:
                break
            await anyio.sleep(0.05)
        await anyio.sleep(0.5)
        assert session.cancel("c1")
    assert time.monotonic() - started < ENDS_WITHIN
    [result] = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert set(_children()) <= before
    cpu = time.process_time()
    await anyio.sleep(IDLE)
    assert time.process_time() - cpu < MAX_CPU_WHILE_IDLE


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
async def test_a_backtracking_gitignore_ends_at_the_deadline(tmp_path: Path) -> None:
    """A ``.gitignore`` pattern that backtracks for minutes against a long name (pathspec
    compiles it to ``[^/]*a`` runs) ends with the call, like a grep pattern."""
    (tmp_path / ".gitignore").write_text("*a*a*a*a*a*a*a*b\n")
    (tmp_path / ("a" * 200)).write_text("x\n")
    kind = await _ends_promptly_and_leaves_nothing(_session(tmp_path), "glob", {"pattern": "*"})
    assert kind == ErrorKind.TIMEOUT
