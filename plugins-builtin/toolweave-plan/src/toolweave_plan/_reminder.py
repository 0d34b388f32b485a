"""The todo reminder: tells the model when its list has gone stale."""

from __future__ import annotations

from dataclasses import dataclass

from toolweave import Context, ToolSet
from toolweave.authoring import CallInfo, Reminder

from toolweave_plan._entries import entry_of
from toolweave_plan._todos import TodoParams, TodoState, TodoWrite, render_todos

__all__ = ["TodoReminder"]


@dataclass(frozen=True, slots=True)
class _TodoTarget:
    """``todo_write``'s client name and effective params in a session's set."""

    name: str
    params: TodoParams


@dataclass(slots=True)
class _Count:
    """Calls of a session since its list was written (a session resource).

    Counted here rather than in :class:`TodoState`, whose ``calls_since_update`` is set
    when the reminder speaks: a call costs an addition, not a write to the state.
    """

    calls: int = 0
    """Calls counted by this session object."""

    before: int | None = None
    """The state's count when this session object started (``None``: not read yet).
    Read when the reminder is first due, not at the first call: the state holds 0 or
    a count the reminder spoke at, a multiple of N, so it does not change when the
    reminder is due, only what it says."""


_TODO_WRITE = f"{TodoWrite.namespace}:{TodoWrite.id}"


def _todo_target(toolset: ToolSet) -> _TodoTarget:
    """The client name and effective params of ``todo_write`` in ``toolset``."""
    entry = entry_of(toolset, _TODO_WRITE)
    if entry is None:
        return _TodoTarget(TodoWrite.id, TodoParams())
    params = entry.params if isinstance(entry.params, TodoParams) else TodoParams()
    return _TodoTarget(entry.name, params)


class TodoReminder(Reminder):
    """Counts calls since the todo list was written and speaks up every N of them.

    With unfinished items it lists them and asks for an update; with no list at all it
    suggests one, once, for work with several steps. ``N`` is ``todo_write``'s
    ``remind_after_calls`` param.
    """

    id = "plan.todos"
    requires = "tool:plan:todo_write"

    def __init__(self) -> None:
        self._last: tuple[ToolSet, _TodoTarget] | None = None
        """The target in the set of the last call (sets are immutable; most hosts have one)."""

    def collect(self, ctx: Context, call: CallInfo) -> str | None:
        """Update the count after ``call``; return a reminder when one is due."""
        session = ctx.session
        toolset = session.toolset
        last = self._last
        if last is not None and last[0] is toolset:
            target = last[1]
        else:
            target = _todo_target(toolset)
            self._last = (toolset, target)
        count = session.resources.get(_Count)
        if count is None:
            count = _Count()
            session.set_resource(count)
        if call.tool == _TODO_WRITE:
            if call.result.error is None:
                count.calls = count.before = 0  # todo_write saved 0 in the state itself
            return None
        count.calls += 1
        every = target.params.remind_after_calls
        if every <= 0 or count.calls % every:
            return None
        name = target.name
        state = session.state.get(TodoState)
        if count.before is None:
            count.before = state.calls_since_update
        calls = count.before + count.calls
        state.calls_since_update = calls  # saved with the state's next save
        unfinished = [t for t in state.todos if t.status != "completed"]
        if unfinished:
            span = "tool call" if calls == 1 else f"{calls} tool calls"
            n = len(unfinished)
            left = "1 of its items is" if n == 1 else f"{n} of its items are"
            return (
                f"The todo list has not been updated in the last {span} and {left} "
                "unfinished:\n"
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
