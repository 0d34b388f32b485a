"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import Resources, Session, ToolSetBuilder, hookimpl

from toolweave_plan._ask_user import AskUser
from toolweave_plan._plan_mode import EnterPlan, ExitPlan, plan_mode_guard
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
def provide_resources(resources: Resources, session: Session) -> None:
    """Guard the session's calls with plan mode, when the set can leave plan mode."""
    fqid = f"{ExitPlan.namespace}:{ExitPlan.id}"
    if any(entry.tool.fqid == fqid for entry in session.toolset.entries):
        session.add_guard(plan_mode_guard)
