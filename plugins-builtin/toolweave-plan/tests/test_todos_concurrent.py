"""``todo_write`` called twice at once in one session while another session of the same
session id saves: the call that reports success has its list stored."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import PackManager
from toolweave.results import CallResult
from toolweave.state import SQLiteStateStore, StateStore
from toolweave_plan import pack

pytestmark = pytest.mark.anyio


class SlowStore:
    """A store whose saves take ``delay`` seconds longer (a network store's latency)."""

    blocking = True

    def __init__(self, inner: StateStore, delay: float) -> None:
        self.inner = inner
        self.delay = delay

    def load(self, session_id: str, keys: Any = None) -> Any:
        return self.inner.load(session_id, keys)

    def save(self, session_id: str, changes: Any, *, expected: Any = None) -> Any:
        time.sleep(self.delay)
        return self.inner.save(session_id, changes, expected=expected)

    def close(self) -> None:
        self.inner.close()


def _todos(name: str) -> dict[str, Any]:
    return {"todos": [{"content": name, "status": "pending"}]}


async def test_the_second_of_two_calls_at_once_keeps_its_list(workspace: Path) -> None:
    """Session one's first call conflicts with session two's save and reloads the list;
    its second call, which waited for the state lock, used to have its list wiped by
    that reload and report success. It now starts after that save, and its list is
    stored."""
    packs = PackManager(strict=True)
    packs.add("plan", pack)
    toolset = packs.builder().build({"tools": ["todo_write"]})
    inner = SQLiteStateStore(workspace / "state.db")
    store = SlowStore(inner, 0.3)
    one, two = (
        toolset.session(session_id="shared", workspace=workspace, state_store=store)
        for _ in range(2)
    )
    results: dict[str, CallResult] = {}

    async def call(name: str, session: Any, at: float) -> None:
        await anyio.sleep(at)
        results[name] = await session.call("todo_write", _todos(name))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "x", two, 0)
        tg.start_soon(call, "a", one, 0.05)
        tg.start_soon(call, "b", one, 0.1)
    await one.aclose()
    await two.aclose()
    assert results["x"].error is None
    assert results["a"].error is not None
    assert results["b"].error is None, results["b"].text
    stored = json.loads(inner.load("shared")["plan.todos"].value)
    assert [t["content"] for t in stored["todos"]] == ["b"]
    inner.close()
