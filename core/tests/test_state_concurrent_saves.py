"""Saves of calls running at once on one session id: a call that reports success has
its change stored, a call whose change was dropped says so, and a save waiting for
another process's write lock never holds up the event loop."""

from __future__ import annotations

import json
import os
import random
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import (
    Capabilities,
    Context,
    Kind,
    MemoryStateStore,
    Session,
    Tool,
    ToolSetBuilder,
)
from toolweave.results import CallResult
from toolweave.state import SQLiteStateStore, StateStore

pytestmark = pytest.mark.anyio


class Counter(BaseModel):
    """A count and the tags of the calls that made it."""

    state_key: ClassVar[str] = "test.concurrent-counter"
    value: int = 0
    """How many calls counted."""
    items: list[str] = []
    """Their tags, in order."""


class IncArgs(BaseModel):
    """How a call counts."""

    tag: str = ""
    delay: float = 0.0
    """Seconds between reading the count and writing it back."""
    gate: str = ""
    """The name of an event (in ``GATES``) to wait for between reading and writing."""
    sleep_after: float = 0.0
    """Seconds to go on after writing."""


GATES: dict[str, anyio.Event] = {}


async def _count(ctx: Context, args: IncArgs, *, read_first: bool) -> str:
    if read_first:
        counter = ctx.state(Counter)
        value = counter.value
    if args.gate:
        await GATES[args.gate].wait()
    if args.delay:
        await anyio.sleep(args.delay)
    if not read_first:
        counter = ctx.state(Counter)
        value = counter.value
    counter.value = value + 1
    counter.items.append(args.tag)
    if args.sleep_after:
        await anyio.sleep(args.sleep_after)
    return str(counter.value)


class Inc(Tool[IncArgs, str]):
    """Reads the count, may wait, writes it back: exclusive state access."""

    id = "inc"
    namespace = "test"
    kind = Kind.OTHER
    description = "Count one in session state. For tests."
    state = Counter

    async def run(self, ctx: Context, args: IncArgs) -> str:
        return await _count(ctx, args, read_first=True)


class IncShared(Tool[IncArgs, str]):
    """Waits, then counts without awaiting in between: shared state access."""

    id = "inc_shared"
    namespace = "test"
    kind = Kind.OTHER
    description = "Count one in shared session state. For tests."
    state = Counter
    state_access = "shared"

    async def run(self, ctx: Context, args: IncArgs) -> str:
        return await _count(ctx, args, read_first=False)


class ListArgs(BaseModel):
    """The list to store."""

    items: list[str]


class SetList(Tool[ListArgs, str]):
    """A plain synchronous tool replacing the stored list, as ``todo_write`` does."""

    id = "set_list"
    namespace = "test"
    kind = Kind.OTHER
    description = "Replace the list in session state. For tests."
    state = Counter
    capabilities = Capabilities(read_only=True, blocking=False)

    def run(self, ctx: Context, args: ListArgs) -> str:
        counter = ctx.state(Counter)
        counter.items = list(args.items)
        counter.value = len(args.items)
        return "ok"


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


def _sessions(count: int, store: StateStore | None, workspace: Path) -> list[Session]:
    builder = ToolSetBuilder()
    builder.add_all([Inc, IncShared, SetList])
    toolset = builder.build()
    if store is None:
        return [toolset.session(session_id="shared", workspace=workspace) for _ in range(count)]
    return [
        toolset.session(session_id="shared", workspace=workspace, state_store=store)
        for _ in range(count)
    ]


def _stored(store: Any) -> Counter:
    found = store.load("shared").get(Counter.state_key)
    return Counter() if found is None else Counter.model_validate_json(found.value)


def _check(results: dict[str, CallResult], stored: Counter) -> None:
    """Every call that reported success has its tag stored; every stored tag is of such
    a call; the count is the number of tags (no call wrote a stale count)."""
    ok = sorted(tag for tag, result in results.items() if result.error is None)
    assert sorted(stored.items) == ok, {t: r.text[:80] for t, r in results.items()}
    assert stored.value == len(stored.items)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_conflict_never_drops_the_change_of_the_next_call(
    kind: str, tmp_path: Path
) -> None:
    """Session one runs call A (it waits between reading and writing) and call B, which
    waits for A's state lock; session two, on the same session id, saves meanwhile. A's
    save conflicts and reloads the state: B, which held the lock next, used to change
    the state during A's save and have its change wiped by that reload, yet report
    success. B now starts after A's save and its change is stored."""
    inner: StateStore = (
        MemoryStateStore() if kind == "memory" else SQLiteStateStore(tmp_path / "state.db")
    )
    store = SlowStore(inner, 0.2)
    one, two = _sessions(2, store, tmp_path)
    GATES["a"] = anyio.Event()
    results: dict[str, CallResult] = {}

    async def call(name: str, session: Session, args: dict[str, Any]) -> None:
        results[name] = await session.call("inc", args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "A", one, {"tag": "A", "gate": "a"})
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(call, "B", one, {"tag": "B", "sleep_after": 0.5})
        await anyio.wait_all_tasks_blocked()
        await call("X", two, {"tag": "X"})
        GATES["a"].set()
    assert results["X"].error is None
    assert results["A"].error is not None
    assert "changed by another process" in results["A"].text
    assert results["B"].error is None, results["B"].text
    _check(results, _stored(inner))
    assert _stored(inner).items == ["X", "B"]
    assert one.state.get(Counter).items == ["X", "B"]
    await one.aclose()
    await two.aclose()


async def test_a_synchronous_tool_called_twice_at_once_keeps_the_last_list(
    tmp_path: Path,
) -> None:
    """A synchronous tool replacing a list (``todo_write``), called twice at once in
    session one while session two saves: the first call's save conflicts; the second
    call's list used to be wiped by the reload while it reported success."""
    inner = SQLiteStateStore(tmp_path / "state.db")
    store = SlowStore(inner, 0.3)
    one, two = _sessions(2, store, tmp_path)
    results: dict[str, CallResult] = {}

    async def call(name: str, session: Session, at: float) -> None:
        await anyio.sleep(at)
        results[name] = await session.call("set_list", {"items": [name]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "X", two, 0)
        tg.start_soon(call, "A", one, 0.05)
        tg.start_soon(call, "B", one, 0.1)
    assert results["X"].error is None
    assert results["A"].error is not None
    assert results["B"].error is None, results["B"].text
    assert _stored(inner).items == ["B"]
    await one.aclose()
    await two.aclose()
    assert _stored(inner).items == ["B"]


async def test_a_shared_call_whose_change_another_save_reloaded_fails(tmp_path: Path) -> None:
    """Two shared-access calls of one session change the state; the first one's save
    conflicts with another session's and reloads the state, dropping the second one's
    change too: the second call fails as well instead of reporting success."""
    store = MemoryStateStore()
    one, two = _sessions(2, store, tmp_path)
    GATES["s1"] = anyio.Event()
    GATES["s2"] = anyio.Event()
    results: dict[str, CallResult] = {}

    async def call(name: str, session: Session, args: dict[str, Any]) -> None:
        results[name] = await session.call("inc_shared", args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "S1", one, {"tag": "S1", "sleep_after": 0.2})
        tg.start_soon(call, "S2", one, {"tag": "S2", "delay": 0.1, "sleep_after": 0.3})
        await anyio.sleep(0.05)  # S1 changed the state, S2 has not yet
        await call("X", two, {"tag": "X"})
    assert results["X"].error is None
    assert results["S1"].error is not None
    assert results["S2"].error is not None, results["S2"].text
    _check(results, _stored(store))
    await one.aclose()
    await two.aclose()


@pytest.mark.parametrize("tool", ["inc", "inc_shared"])
async def test_many_calls_of_three_sessions_lose_nothing(tool: str, tmp_path: Path) -> None:
    """90 calls over three sessions of one session id, all at once: some fail with a
    conflict, and exactly the ones that report success are stored, with the count
    matching them."""
    rng = random.Random(1)
    store = SlowStore(MemoryStateStore(), 0.002)
    sessions = _sessions(3, store, tmp_path)
    results: dict[str, CallResult] = {}

    async def call(i: int) -> None:
        args = {"tag": str(i), "delay": rng.choice([0, 0, 0.001, 0.003])}
        results[str(i)] = await sessions[i % 3].call(tool, args)

    async with anyio.create_task_group() as tg:
        for i in range(90):
            tg.start_soon(call, i)
            if i % 7 == 0:
                await anyio.lowlevel.checkpoint()
    for session in sessions:
        await session.aclose()
    assert any(r.error is None for r in results.values())
    _check(results, _stored(store))


_OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from toolweave.state import SQLiteStateStore
    store = SQLiteStateStore(sys.argv[1])
    found = store.load("shared").get(sys.argv[2])
    store.save(
        "shared",
        {sys.argv[2]: '{"value":1,"items":["P2"]}'},
        expected={sys.argv[2]: 0 if found is None else found.version},
    )
    store.close()
    """
)


async def test_another_process_saving_never_drops_the_next_calls_change(tmp_path: Path) -> None:
    """As the first test, with the other writer another process on the workspace's
    SQLite file: call A's save conflicts with it; call B, next on the lock, is stored."""
    (one,) = _sessions(1, None, tmp_path)
    db = tmp_path / ".toolweave" / "state.db"
    GATES["p"] = anyio.Event()
    results: dict[str, CallResult] = {}

    async def call(name: str, args: dict[str, Any]) -> None:
        results[name] = await one.call("inc", args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "A", {"tag": "A", "gate": "p"})
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(call, "B", {"tag": "B", "sleep_after": 1.0})
        await anyio.wait_all_tasks_blocked()
        db.parent.mkdir(exist_ok=True)
        done = await anyio.run_process(
            [sys.executable, "-c", _OTHER_PROCESS, str(db), Counter.state_key],
            check=False,
            env=os.environ.copy(),
        )
        assert done.returncode == 0, done.stderr.decode()
        GATES["p"].set()
    assert results["A"].error is not None
    assert results["B"].error is None, results["B"].text
    await one.aclose()
    stored = SQLiteStateStore(db)
    try:
        assert _stored(stored).items == ["P2", "B"]
        assert _stored(stored).value == 2
    finally:
        stored.close()


_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
    """
)


async def test_the_event_loop_runs_on_while_a_save_waits_for_another_process(
    tmp_path: Path,
) -> None:
    """Another process holds the SQLite write lock for 2.5 s; one session's save waits
    for it (in a worker thread). Another session's first state read, on the event loop,
    used to wait behind that save for the whole time, freezing the loop. A heartbeat
    task now keeps ticking throughout."""
    builder = ToolSetBuilder()
    builder.add_all([Inc])
    toolset = builder.build()
    first = toolset.session(session_id="one", workspace=tmp_path)
    assert (await first.call("inc", {"tag": "init"})).error is None  # creates the file
    db = tmp_path / ".toolweave" / "state.db"
    async with await anyio.open_process(
        [sys.executable, "-c", _HOLDER, str(db), "2.5"], env=os.environ.copy()
    ) as holder:
        assert holder.stdout is not None
        assert (await holder.stdout.receive()).strip() == b"locked"
        longest = 0.0
        results: list[CallResult] = []

        async def heartbeat() -> None:
            nonlocal longest
            while True:
                start = time.monotonic()
                await anyio.sleep(0.01)
                longest = max(longest, time.monotonic() - start)

        async def save_waits() -> None:
            results.append(await first.call("inc", {"tag": "waits"}))

        second = toolset.session(session_id="two", workspace=tmp_path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            async with anyio.create_task_group() as calls:
                calls.start_soon(save_waits)
                await anyio.sleep(0.3)  # the first session's save waits for the lock now
                started = time.monotonic()
                results.append(await second.call("inc", {"tag": "reads"}))
                waited = time.monotonic() - started
            tg.cancel_scope.cancel()
        assert waited > 1.0  # its own save waited for the other process too
        assert longest < 1.0, f"the event loop stalled for {longest:.2f} s"
        assert all(r.error is None for r in results), [r.text for r in results]
        await holder.wait()
    await first.aclose()
    store = SQLiteStateStore(db)
    try:
        one = store.load("one")[Counter.state_key].value
        two = store.load("two")[Counter.state_key].value
        assert json.loads(one)["items"] == ["init", "waits"]
        assert json.loads(two)["items"] == ["reads"]
    finally:
        store.close()
