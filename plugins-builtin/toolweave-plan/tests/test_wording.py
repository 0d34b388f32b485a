"""The plan pack's messages: counts agree with their nouns, renamed names show through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import Kind, PackManager, Session, ToolSetBuilder, tool
from toolweave_plan import pack

pytestmark = pytest.mark.anyio


@tool(kind=Kind.EDIT, blocking=False)
def change() -> str:
    """Change something (a stand-in for any tool that is not read-only)."""
    return "changed"


def _builder() -> ToolSetBuilder:
    packs = PackManager(strict=True)
    packs.add("plan", pack)
    builder = packs.builder()
    builder.add(change)
    return builder


def _session(workspace: Path, tools: list[Any]) -> Session:
    toolset = _builder().build({"tools": tools})
    return toolset.session(workspace=workspace, debug=True)


async def test_one_unfinished_item_after_one_call_is_singular(workspace: Path) -> None:
    """The reminder says "the last tool call" and "1 of its items is" when there is one."""
    todos = {"id": "todo_write", "name": "Todos", "params": {"remind_after_calls": 1}}
    session = _session(workspace, [todos, "change"])
    items = [{"content": "Ship it", "status": "pending"}]
    assert (await session.call("Todos", {"todos": items})).error is None
    text = (await session.call("change", {})).text
    assert "not been updated in the last tool call and 1 of its items is unfinished" in text
    assert "mark them completed with Todos" in text


async def test_a_list_over_a_limit_of_one_is_singular(workspace: Path) -> None:
    """A limit of one item reads "at most 1 is allowed"."""
    todos = {"id": "todo_write", "params": {"max_items": 1}}
    session = _session(workspace, [todos])
    items = [{"content": "One"}, {"content": "Two"}]
    result = await session.call("todo_write", {"todos": items})
    assert "The list has 2 items; at most 1 is allowed." in result.text


async def test_plan_mode_names_renamed_tools(workspace: Path) -> None:
    """Entering plan mode and its refusal name exit_plan by its client name."""
    tools = [{"id": "enter_plan", "name": "Plan"}, {"id": "exit_plan", "name": "Done"}, "change"]
    session = _session(workspace, tools)
    entered = await session.call("Plan", {})
    assert "present it with Done" in entered.text
    refused = await session.call("change", {})
    assert "present your plan with Done" in refused.text
    assert "exit_plan" not in entered.text + refused.text


async def test_invalid_choices_are_named_as_the_model_names_them(workspace: Path) -> None:
    """Blank or repeated choices are reported under the renamed parameter only."""
    asking = {"id": "ask_user", "rename": {"choices": "options"}}
    session = _session(workspace, [asking])
    for options, problem in ((["a", " "], "blank answer"), (["a", "a"], "distinct answers")):
        result = await session.call("ask_user", {"question": "Which?", "options": options})
        assert "`options`" in result.text
        assert problem in result.text
        assert "choices" not in result.text
