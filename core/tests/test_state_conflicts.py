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
