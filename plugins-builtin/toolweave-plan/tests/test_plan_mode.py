"""Unit tests of plan mode: ``enter_plan`` / ``exit_plan`` and the call guard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import ConfigError, Context, ErrorKind, Kind, PackManager, Session, Workspace, tool
from toolweave_plan import PlanModeHook, PlanModeState, pack, set_plan_mode
from toolweave_plan._plan_mode import MAX_PLAN_CHARS, MAX_REASON_CHARS

pytestmark = pytest.mark.anyio


@tool(kind=Kind.WRITE, blocking=False)
def write_note(ctx: Context, text: str) -> str:
    """Write the note file (a tool that changes the workspace)."""
    (ctx.require(Workspace).root / "note.txt").write_text(text)
    return "written"


@tool(kind=Kind.READ, blocking=False)
def read_note(ctx: Context) -> str:
    """Read the note file (a read-only tool)."""
    path = ctx.require(Workspace).root / "note.txt"
    return path.read_text() if path.exists() else "(no note)"


DEFAULT_TOOLS: list[Any] = ["enter_plan", "exit_plan", "todo_write", "write_note", "read_note"]


def make_session(
    workspace: Path, tools: list[Any] | None = None, session_id: str = "s1"
) -> Session:
    """A session of the plan pack plus a writing and a reading host tool."""
    packs = PackManager(strict=True)
    packs.add("plan", pack)
    builder = packs.builder()
    builder.add(write_note)
    builder.add(read_note)
    toolset = builder.build({"tools": tools or DEFAULT_TOOLS})
    return toolset.session(workspace=workspace, session_id=session_id, debug=True)


async def test_plan_mode_refuses_writes_and_allows_reads(workspace: Path) -> None:
    """In plan mode a writing tool is refused (and does not run) with a message that
    names exit_plan; reading and planning tools run; after exit_plan writing works."""
    session = make_session(workspace)
    assert (await session.call("write_note", {"text": "before"})).error is None

    entered = await session.call("enter_plan", {"reason": "big refactor"})
    assert entered.error is None, entered.text
    assert entered.output["active"] is True
    assert "exit_plan" in entered.text

    refused = await session.call("write_note", {"text": "during"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "Plan mode is on" in refused.text
    assert "exit_plan" in refused.text
    assert (workspace / "note.txt").read_text() == "before"

    read = await session.call("read_note", {})
    assert read.error is None
    assert read.text == "before"
    todos = await session.call("todo_write", {"todos": [{"content": "Refactor"}]})
    assert todos.error is None

    left = await session.call("exit_plan", {"plan": "1. Refactor the parser\n2. Test it"})
    assert left.error is None, left.text
    assert left.output == {"active": False, "changed": True, "message": left.text}
    assert session.state.get(PlanModeState).plan == "1. Refactor the parser\n2. Test it"
    assert (await session.call("write_note", {"text": "after"})).error is None
    assert (workspace / "note.txt").read_text() == "after"


async def test_plan_mode_survives_a_restart(workspace: Path) -> None:
    """A new host with the same session id is still in plan mode."""
    first = make_session(workspace)
    await first.call("enter_plan", {})
    later = make_session(workspace)
    refused = await later.call("write_note", {"text": "x"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    again = await later.call("enter_plan", {})
    assert again.output["changed"] is False


async def test_host_can_switch_plan_mode(workspace: Path) -> None:
    """``set_plan_mode`` turns the mode on and off from outside any call."""
    session = make_session(workspace)
    await set_plan_mode(session, True)
    assert (await session.call("write_note", {"text": "x"})).error is not None
    await set_plan_mode(session, False)
    assert (await session.call("write_note", {"text": "x"})).error is None


async def test_enter_plan_requires_exit_plan(workspace: Path) -> None:
    """A set with ``enter_plan`` but no ``exit_plan`` is a configuration error."""
    with pytest.raises(ConfigError) as caught:
        make_session(workspace, ["enter_plan", "write_note"])
    assert any("enter_plan" in str(issue) for issue in caught.value.issues)


async def test_no_guard_without_plan_tools(workspace: Path) -> None:
    """A set that cannot leave plan mode gets no plan-mode hook."""
    session = make_session(workspace, ["todo_write", "write_note"])
    assert session.hooks == ()
    with_plan = make_session(workspace)
    assert [type(hook) for hook in with_plan.hooks] == [PlanModeHook]


async def test_the_hook_applies_only_to_writers_while_plan_mode_is_on(workspace: Path) -> None:
    """The plan-mode hook is compiled for tools that are not read-only, and only while
    the mode is on: a call made before the mode was turned on does not keep a writer
    free once it is on (the mode's switches recompile the session's hooks)."""
    session = make_session(workspace)
    (hook,) = session.hooks
    entries = {entry.name: entry for entry in session.toolset.entries}
    assert not hook.applies_to(entries["write_note"])
    assert (await session.call("write_note", {"text": "a"})).error is None
    await session.call("enter_plan", {})
    assert hook.applies_to(entries["write_note"])
    assert not hook.applies_to(entries["read_note"])
    assert (await session.call("write_note", {"text": "b"})).error is not None
    await session.call("exit_plan", {"plan": "1. write"})
    assert not hook.applies_to(entries["write_note"])
    assert (await session.call("write_note", {"text": "c"})).error is None


async def test_a_plan_or_reason_past_its_limit_is_refused(workspace: Path) -> None:
    """The schema bounds the plan and the reason; a longer one is invalid_params, the
    plan is not stored and plan mode stays on."""
    session = make_session(workspace)
    params = {d["function"]["name"]: d["function"]["parameters"] for d in session.definitions()}
    assert params["exit_plan"]["properties"]["plan"]["maxLength"] == MAX_PLAN_CHARS
    reason = params["enter_plan"]["properties"]["reason"]["anyOf"][0]
    assert reason["maxLength"] == MAX_REASON_CHARS
    too_long = await session.call("enter_plan", {"reason": "r" * (MAX_REASON_CHARS + 1)})
    assert too_long.error is not None
    assert too_long.error.kind is ErrorKind.INVALID_PARAMS
    assert (await session.call("enter_plan", {"reason": "r" * MAX_REASON_CHARS})).error is None
    huge = await session.call("exit_plan", {"plan": "p" * 50_000_000})
    assert huge.error is not None
    assert huge.error.kind is ErrorKind.INVALID_PARAMS
    assert len(huge.text) < 2_000
    state = session.state.get(PlanModeState)
    assert state.active
    assert state.plan is None
    assert (await session.call("exit_plan", {"plan": "p" * MAX_PLAN_CHARS})).error is None
