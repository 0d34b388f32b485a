"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import Resources, Session, ToolSetBuilder, hookimpl

from toolweave_shell._bash import Bash
from toolweave_shell._task_tools import KillTask, TaskOutput, WaitTasks
from toolweave_shell._tasks import BackgroundTasks, TaskOwner
from toolweave_shell._terminal import LocalTerminal, Terminal


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``bash`` and the background-task tools."""
    builder.add(Bash)
    builder.add(TaskOutput)
    builder.add(WaitTasks)
    builder.add(KillTask)


@hookimpl
def provide_resources(resources: Resources, session: Session) -> None:
    """Give the session a local terminal and a task manager, unless the host gave its own,
    and stop the session's background tasks when it closes.

    A task manager the host shares between sessions stays up: closing a session stops
    the tasks that session started or found again, and only those.
    """
    resources.get_or_default(Terminal, LocalTerminal)
    tasks = resources.get_or_default(BackgroundTasks, BackgroundTasks)
    owner = TaskOwner(session.session_id)
    resources.insert(owner)

    async def stop_tasks() -> None:
        await tasks.close_owner(owner)

    session.on_close(stop_tasks)
