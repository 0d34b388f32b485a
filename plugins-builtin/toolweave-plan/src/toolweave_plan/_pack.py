"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import CallHook, Session, ToolSetBuilder, hookimpl

from toolweave_plan._ask_user import AskUser
from toolweave_plan._entries import entry_of
from toolweave_plan._plan_mode import EnterPlan, ExitPlan, PlanModeHook
from toolweave_plan._reminder import TodoReminder
from toolweave_plan._todos import TodoRead, TodoWrite


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register the todo, plan-mode and ask-user tools."""
    builder.add(TodoWrite)
    builder.add(TodoRead)
    builder.add(EnterPlan)
    builder.add(ExitPlan)
    builder.add(AskUser)


@hookimpl
def register_reminders(builder: ToolSetBuilder) -> None:
    """Register the reminder about a stale todo list."""
    builder.add_reminder(TodoReminder)


@hookimpl
def provide_call_hooks(session: Session) -> list[CallHook]:
    """Plan mode's hook for the session, when the set can leave plan mode."""
    if entry_of(session.toolset, f"{ExitPlan.namespace}:{ExitPlan.id}") is None:
        return []
    return [PlanModeHook(session)]
