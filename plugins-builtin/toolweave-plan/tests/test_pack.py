"""The plan pack as a host sees it: discovery, kinds, the reminder."""

from __future__ import annotations

from toolweave import Kind, load_packs
from toolweave_plan import TodoReminder


def test_entry_point_registers_tools_and_reminder() -> None:
    """``load_packs(include=["plan"])`` finds five read-only tools and the todo reminder."""
    packs = load_packs(include=["plan"], strict=True)
    assert packs.packs["plan"].dist == "toolweave-plan"
    toolset = packs.build()
    kinds = {e.name: e.definition.kind for e in toolset}
    assert kinds == {
        "todo_write": Kind.PLAN.value,
        "todo_read": Kind.PLAN.value,
        "enter_plan": Kind.PLAN.value,
        "exit_plan": Kind.PLAN.value,
        "ask_user": Kind.ASK_USER.value,
    }
    assert all(e.definition.read_only for e in toolset)
    assert [type(r) for r in toolset.reminders] == [TodoReminder]
