"""No tool call of a built-in pack freezes the event loop, whatever the arguments.

A heartbeat task ticks every 10 ms on the loop the session runs on and records the
longest gap between ticks while each call runs. Every tool of the fs, search, shell
and plan packs is called, the search tools with hostile but valid arguments (brace
bombs, many-star globs against long names, huge patterns) on both engines. The bound
is generous (a loaded two-core machine must not flake it); before the search tools
bounded their patterns, one brace glob held the loop for 4–6 seconds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import toolweave_fs
import toolweave_plan
import toolweave_search
import toolweave_shell
from toolweave import PackManager, Session

MAX_GAP = 1.0
"""The longest the loop may go without running the heartbeat, in seconds."""

CALL_TIMEOUT = 60.0
"""A call that has not returned by then fails the test instead of hanging it."""

BRACES_14 = "{a,b}" * 14
HOSTILE_SEARCH: list[tuple[str, dict[str, Any]]] = [
    ("glob", {"pattern": BRACES_14}),
    ("glob", {"pattern": "{a,b}" * 16}),
    ("glob", {"pattern": "**/" + "*a" * 12 + "*b"}),
    ("glob", {"pattern": "**/a/**/a/**/a/**/a/**/b"}),
    ("glob", {"pattern": "x" * 5_000_000}),
    ("glob", {"pattern": "{" + ",".join(["{a,b,c,d}"] * 60) + "}" * 1}),
    ("grep", {"pattern": "needle", "glob": BRACES_14}),
    ("grep", {"pattern": "needle", "glob": "*a" * 12 + "*b"}),
    ("grep", {"pattern": "(" * 400_000}),
    ("grep", {"pattern": "a" * 5_000_000}),
    ("grep", {"pattern": "needle", "glob": "x" * 5_000_000}),
]

OTHER_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "deep/" + "a" * 200}),
    ("write_file", {"path": "new/dir/file.txt", "content": "x" * 1_000_000}),
    ("edit_file", {"path": "new/dir/file.txt", "old_string": "x", "new_string": "y"}),
    ("list_dir", {"path": ".", "depth": 50}),
    ("move", {"source": "new", "destination": "moved"}),
    ("delete", {"path": "moved", "recursive": True}),
    ("read_file", {"path": "d/" * 2_000_000}),
    ("bash", {"command": "head -c 50000000 /dev/zero | wc -c"}),
    ("task_output", {"task_id": "nope"}),
    ("wait_tasks", {"task_ids": ["nope"]}),
    ("kill_task", {"task_id": "nope"}),
    ("todo_write", {"todos": [{"content": "x" * 10_000, "status": "pending"}] * 200}),
    ("todo_read", {}),
    ("enter_plan", {}),
    ("exit_plan", {"plan": "p" * 100_000}),
    ("ask_user", {"question": "q?" * 1000}),
]


@pytest.fixture
def anyio_backend() -> str:
    """Run on asyncio, the loop hosts use."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with long names, deep folders and files the searches read."""
    root = tmp_path / "ws"
    deep = root / "/".join(["a"] * 200)
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("needle\n")
    (root / "deep").mkdir()
    (root / "deep" / ("a" * 200)).write_text(("a" * 5000 + "\n") * 200)
    for i in range(300):
        (root / f"file_{'a' * 100}_{i}.txt").write_text("needle " * 50)
    return root


def _session(workspace: Path, engine: str) -> Session:
    packs = PackManager(strict=True)
    for name, module in (
        ("fs", toolweave_fs),
        ("search", toolweave_search),
        ("shell", toolweave_shell),
        ("plan", toolweave_plan),
    ):
        packs.add(name, module.pack)
    config = {
        "tools": [
            {"id": "glob", "params": {"engine": engine}},
            {"id": "grep", "params": {"engine": engine}},
        ]
    }
    return packs.builder().build(config).session(workspace=workspace)


class Heartbeat:
    """Ticks every 10 ms on the loop and records the longest gap between ticks."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._last = time.monotonic()

    def reset(self) -> None:
        """Start a new measurement."""
        self.longest = 0.0
        self._last = time.monotonic()

    async def run(self) -> None:
        """Tick until cancelled."""
        while True:
            await anyio.sleep(0.01)
            now = time.monotonic()
            self.longest = max(self.longest, now - self._last)
            self._last = now


@pytest.fixture
async def heartbeat() -> AsyncIterator[Heartbeat]:
    """A heartbeat running on the test's loop for the whole test."""
    beat = Heartbeat()
    async with anyio.create_task_group() as group:
        group.start_soon(beat.run)
        yield beat
        group.cancel_scope.cancel()


def _calls(engine: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from HOSTILE_SEARCH
    if engine == "python":
        yield from OTHER_CALLS


@pytest.mark.anyio
@pytest.mark.parametrize("engine", ["python", "ripgrep"])
async def test_no_call_holds_the_loop(workspace: Path, heartbeat: Heartbeat, engine: str) -> None:
    """During every call of every built-in pack the loop keeps ticking: the longest
    gap stays under MAX_GAP, and every call returns within CALL_TIMEOUT."""
    if engine == "ripgrep" and toolweave_search.find_ripgrep() is None:
        pytest.skip("ripgrep is not installed here")
    session = _session(workspace, engine)
    gaps: dict[str, float] = {}
    try:
        for i, (name, args) in enumerate(_calls(engine)):
            heartbeat.reset()
            with anyio.fail_after(CALL_TIMEOUT):
                await session.call(name, args, f"call-{i}")
            await anyio.sleep(0.02)  # let the heartbeat see the end of the call
            gaps[f"{i}:{name}"] = heartbeat.longest
    finally:
        await session.aclose()
    slow = {call: round(gap, 3) for call, gap in gaps.items() if gap > MAX_GAP}
    assert slow == {}
