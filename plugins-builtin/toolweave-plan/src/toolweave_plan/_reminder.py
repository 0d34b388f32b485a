"""The todo reminder: tells the model when its list has gone stale."""

from __future__ import annotations

from dataclasses import dataclass

from toolweave import Context
from toolweave.authoring import CallInfo, Reminder

from toolweave_plan._todos import TodoParams, TodoState, TodoWrite, render_todos

__all__ = ["TodoReminder"]


@dataclass(frozen=True, slots=True)
class _TodoTarget:
    """``todo_write``'s client name and effective params in a session's set."""

    name: str
    params: TodoParams


def _todo_entry_params(ctx: Context) -> tuple[str, TodoParams]:
    """The client name and effective params of ``todo_write`` in the session's set
    (found once per session: the set is immutable)."""
    session = ctx.session
    found = session.get_resource(_TodoTarget)
    if found is None:
        fqid = f"{TodoWrite.namespace}:{TodoWrite.id}"
        found = _TodoTarget(TodoWrite.id, TodoParams())
        for entry in session.toolset.entries:
            if entry.tool.fqid == fqid:
                params = entry.params if isinstance(entry.params, TodoParams) else TodoParams()
                found = _TodoTarget(entry.name, params)
                break
        session.set_resource(found)
    return found.name, found.params


class TodoReminder(Reminder):
    """Counts calls since the todo list was written and speaks up every N of them.

    With unfinished items it lists them and asks for an update; with no list at all it
    suggests one, once, for work with several steps. ``N`` is ``todo_write``'s
    ``remind_after_calls`` param.
    """

    id = "plan.todos"
    requires = "tool:plan:todo_write"

    def collect(self, ctx: Context, call: CallInfo) -> str | None:
        """Update the count after ``call``; return a reminder when one is due."""
        name, params = _todo_entry_params(ctx)
        state = ctx.state(TodoState)
        if call.tool == f"{TodoWrite.namespace}:{TodoWrite.id}":
            if call.result.error is None:
                state.calls_since_update = 0
            return None
        state.calls_since_update += 1
        every = params.remind_after_calls
        calls = state.calls_since_update
        if every <= 0 or calls % every:
            return None
        unfinished = [t for t in state.todos if t.status != "completed"]
        if unfinished:
            return (
                f"The todo list has not been updated in the last {calls} tool calls and "
                f"{len(unfinished)} of its items are unfinished:\n"
                f"{render_todos(unfinished)}\n"
                f"If you finished some of them, mark them completed with {name}; keep the "
                "item you are working on in_progress, and drop items that no longer apply. "
                "Do not mention this reminder to the user."
            )
        if state.todos or state.suggested:
            return None
        state.suggested = True
        return (
            f"The todo list ({name}) has not been used in this session. If the task has "
            "several steps, writing them down helps you and the user track progress; if "
            "it is simple, ignore this. Do not mention this reminder to the user."
        )
