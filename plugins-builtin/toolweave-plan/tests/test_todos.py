"""Unit tests of ``todo_write`` / ``todo_read`` and the todo reminder."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, Kind, PackManager, Session, tool
from toolweave_plan import pack
from toolweave_plan._todos import MAX_TODOS, NOT_BLANK

pytestmark = pytest.mark.anyio


@tool(kind=Kind.READ, blocking=False)
def peek() -> str:
    """Look at something (a stand-in for any other tool of the session)."""
    return "looked"


def make_session(
    workspace: Path, *, remind_after: int | None = None, session_id: str = "s1"
) -> Session:
    """A session with the todo tools and ``peek``, state in the workspace's SQLite file."""
    packs = PackManager(strict=True)
    packs.add("plan", pack)
    builder = packs.builder()
    builder.add(peek)
    todo: dict[str, Any] = {"id": "todo_write"}
    if remind_after is not None:
        todo["params"] = {"remind_after_calls": remind_after}
    toolset = builder.build({"tools": [todo, "todo_read", "peek"]})
    return toolset.session(workspace=workspace, session_id=session_id, debug=True)


TODOS = [
    {"content": "Read the parser", "status": "completed"},
    {"content": "Fix the off-by-one", "status": "in_progress"},
    {"content": "Add a regression test", "status": "pending"},
]


async def test_write_then_read(workspace: Path) -> None:
    """The written list comes back from ``todo_read`` with a status summary."""
    session = make_session(workspace)
    written = await session.call("todo_write", {"todos": TODOS})
    assert written.error is None, written.text
    assert "1 completed, 1 in progress, 1 pending" in written.text
    read = await session.call("todo_read", {})
    assert read.output["todos"] == TODOS
    assert "2. [~] Fix the off-by-one" in read.text
    assert "1. [x] Read the parser" in read.text


async def test_only_one_item_in_progress(workspace: Path) -> None:
    """Two in_progress items are refused and the stored list is unchanged."""
    session = make_session(workspace)
    await session.call("todo_write", {"todos": TODOS})
    bad = [dict(t, status="in_progress") for t in TODOS[:2]]
    result = await session.call("todo_write", {"todos": bad})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "Only one item may be in_progress" in result.text
    assert (await session.call("todo_read", {})).output["todos"] == TODOS


async def test_blank_items_are_invalid(workspace: Path) -> None:
    """An item without content or with an unknown status is invalid_params."""
    session = make_session(workspace)
    for todos in ([{"content": "   "}], [{"content": "x", "status": "done"}]):
        result = await session.call("todo_write", {"todos": todos})
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS


async def test_the_schema_states_the_list_limit_and_blank_items(workspace: Path) -> None:
    """The listed schema bounds the list and refuses blank items, so a model sees both
    rules; a list of a million items is refused by that bound, before its items are
    validated, with little memory."""
    session = make_session(workspace)
    [params] = [
        d["function"]["parameters"]
        for d in session.definitions()
        if d["function"]["name"] == "todo_write"
    ]
    assert params["properties"]["todos"]["maxItems"] == MAX_TODOS
    assert params["$defs"]["TodoItem"]["properties"]["content"]["pattern"] == NOT_BLANK
    tracemalloc.start()
    try:
        result = await session.call("todo_write", {"todos": [{"content": "x"}] * 1_000_000})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert f"at most {MAX_TODOS} items" in result.text
    assert peak < 16 * 2**20


async def test_todos_survive_a_restart_and_the_reminder_fires(workspace: Path) -> None:
    """A new host with the same session id reads the list from the SQLite store and
    reminds the model of the unfinished items after the configured number of calls."""
    first = make_session(workspace, remind_after=3)
    assert (await first.call("todo_write", {"todos": TODOS})).error is None
    assert (workspace / ".toolweave" / "state.db").is_file()

    later = make_session(workspace, remind_after=3)
    read = await later.call("todo_read", {})
    assert read.output["todos"] == TODOS
    assert "<system-reminder>" not in read.text
    second = await later.call("peek", {})
    assert "<system-reminder>" not in second.text
    third = await later.call("peek", {})
    assert "<system-reminder>" in third.text
    assert "not been updated in the last 3 tool calls" in third.text
    assert "Fix the off-by-one" in third.text
    assert "Add a regression test" in third.text
    assert "Read the parser" not in third.text
    assert third.output == "looked"


async def test_the_count_since_the_last_update_carries_over_to_a_later_host(
    workspace: Path,
) -> None:
    """A later host of the session counts on from what the earlier one saved: it
    reminds after N more calls, naming every call since the list was written."""
    first = make_session(workspace, remind_after=3)
    assert (await first.call("todo_write", {"todos": TODOS})).error is None
    texts = [(await first.call("peek", {})).text for _ in range(3)]
    assert "not been updated in the last 3 tool calls" in texts[2]
    assert (await first.call("todo_read", {})).error is None  # saves the count: 3

    later = make_session(workspace, remind_after=3)
    texts = [(await later.call("peek", {})).text for _ in range(3)]
    assert ["<system-reminder>" in t for t in texts] == [False, False, True]
    assert "not been updated in the last 6 tool calls" in texts[2]
    assert (await later.call("todo_write", {"todos": TODOS})).error is None
    texts = [(await later.call("peek", {})).text for _ in range(3)]
    assert "not been updated in the last 3 tool calls" in texts[2]


async def test_reminder_repeats_and_resets_on_update(workspace: Path) -> None:
    """The reminder comes back every N calls and a list update restarts the count."""
    session = make_session(workspace, remind_after=2)
    await session.call("todo_write", {"todos": TODOS})
    texts = [(await session.call("peek", {})).text for _ in range(4)]
    assert ["<system-reminder>" in t for t in texts] == [False, True, False, True]
    await session.call("todo_write", {"todos": TODOS})
    assert "<system-reminder>" not in (await session.call("peek", {})).text
    done = [dict(t, status="completed") for t in TODOS]
    await session.call("todo_write", {"todos": done})
    quiet = [(await session.call("peek", {})).text for _ in range(4)]
    assert not any("<system-reminder>" in t for t in quiet)


async def test_unused_list_is_suggested_once(workspace: Path) -> None:
    """With no list at all, the model hears about it once, not on every N calls."""
    session = make_session(workspace, remind_after=2)
    texts = [(await session.call("peek", {})).text for _ in range(6)]
    assert ["<system-reminder>" in t for t in texts] == [False, True, False, False, False, False]
    assert "todo_write" in texts[1]


async def test_reminder_can_be_turned_off(workspace: Path) -> None:
    """``remind_after_calls = 0`` never reminds."""
    session = make_session(workspace, remind_after=0)
    await session.call("todo_write", {"todos": TODOS})
    texts = [(await session.call("peek", {})).text for _ in range(12)]
    assert not any("<system-reminder>" in t for t in texts)
