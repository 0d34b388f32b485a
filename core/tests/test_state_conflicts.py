"""A call whose state another writer changed meanwhile fails as execution_error and loses
nothing: the other writer's state is kept and the call says so."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import Context, ErrorKind, MemoryStateStore, ToolSetBuilder, tool
from toolweave.state import state_key

pytestmark = pytest.mark.anyio


class Tally(BaseModel):
    """A counter."""

    n: int = 0
    """How many."""


gate = anyio.Event()


@tool(state=Tally)
async def bump(ctx: Context) -> str:
    """Add one to the tally, after the test lets it go."""
    tally = ctx.state(Tally)
    await gate.wait()
    tally.n += 1
    return str(tally.n)


async def test_a_save_that_conflicts_is_an_error_and_keeps_the_other_write(tmp_path: Any) -> None:
    """Another writer saves the key while the call runs: the call's result is an
    execution_error, and the stored state is the other writer's."""
    global gate
    gate = anyio.Event()
    store = MemoryStateStore()
    builder = ToolSetBuilder()
    builder.add(bump)
    session = builder.build().session(session_id="s", workspace=tmp_path, state_store=store)
    assert (await _released(session)).text == "1"
    key = state_key(Tally)
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        results: list[Any] = []

        async def call() -> None:
            results.append(await session.call("bump", {}))

        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        stored = store.load("s")[key]
        store.save("s", {key: Tally(n=41).model_dump_json()}, expected={key: stored.version})
        gate.set()
    (result,) = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "changed by another process" in result.text
    assert Tally.model_validate_json(store.load("s")[key].value).n == 41


async def _released(session: Any) -> Any:
    gate.set()
    return await session.call("bump", {})


class _Counting:
    """Delegates to a store and counts the key reads (``load``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.loads = 0
        self.blocking = getattr(inner, "blocking", True)

    def load(self, session_id: str, keys: Any = None) -> Any:
        self.loads += 1
        return self.inner.load(session_id, keys)

    def save(self, session_id: str, changes: Any, *, expected: Any = None) -> Any:
        return self.inner.save(session_id, changes, expected=expected)

    def revision(self) -> Any:
        return self.inner.revision()

    def close(self) -> None:
        self.inner.close()


@tool(state=Tally, blocking=False)
def peek(ctx: Context) -> str:
    """Read the tally."""
    return str(ctx.state(Tally).n)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_reads_after_a_call_only_when_something_was_written(kind: str, tmp_path: Any) -> None:
    """Read-only calls of a stateful tool read the key once, not per call, while nothing
    is written; a write by another connection (another process) is seen by the next
    call, and a write through the same store too."""
    from toolweave.state import SQLiteStateStore

    if kind == "sqlite":
        inner: Any = SQLiteStateStore(tmp_path / "state.db")
        other: Any = SQLiteStateStore(tmp_path / "state.db")  # its own connection
    else:
        inner = other = MemoryStateStore()
    store = _Counting(inner)
    builder = ToolSetBuilder()
    builder.add(peek)
    session = builder.build().session(session_id="s", workspace=tmp_path, state_store=store)
    for _ in range(20):
        assert (await session.call("peek", {})).text == "0"
    assert store.loads == 1
    key = state_key(Tally)
    other.save("s", {key: Tally(n=5).model_dump_json()})
    assert (await session.call("peek", {})).text == "5"
    assert store.loads == 2
    store.save("s", {key: Tally(n=6).model_dump_json()})
    assert (await session.call("peek", {})).text == "6"
    for _ in range(5):
        assert (await session.call("peek", {})).text == "6"
    assert store.loads == 3
    if kind == "sqlite":
        inner.close()
        other.close()
