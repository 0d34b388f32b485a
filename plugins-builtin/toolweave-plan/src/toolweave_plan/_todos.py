"""The todo list: ``todo_write`` and ``todo_read``, kept as persisted session state."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

__all__ = [
    "MAX_TODOS",
    "NOT_BLANK",
    "TodoItem",
    "TodoList",
    "TodoParams",
    "TodoRead",
    "TodoReadArgs",
    "TodoState",
    "TodoStatus",
    "TodoWrite",
    "TodoWriteArgs",
    "render_todos",
]

TodoStatus = Literal["pending", "in_progress", "completed"]
"""Where one item stands."""

_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

NOT_BLANK = r"\S"
"""The schema's pattern of a text that must not be blank: it holds a character that is
not white space (what :meth:`str.strip` removes)."""

MAX_TODOS = 100
"""The most items a todo list may hold, stated in the schema (``maxItems``) so that a
longer list is refused before its items are validated; ``max_items`` may lower it."""


class TodoItem(BaseModel):
    """One item of the todo list."""

    model_config = ConfigDict(regex_engine="python-re")  # `\S` as JSON Schema checkers read it

    content: str = Field(
        min_length=1,
        max_length=500,
        pattern=NOT_BLANK,
        description="What to do, as a short imperative sentence ('Add tests for the parser').",
    )
    """What to do (not blank)."""

    status: TodoStatus = Field(
        default="pending",
        description="`pending`, `in_progress` (at most one item) or `completed`.",
    )
    """Where the item stands."""

    @field_validator("content", mode="before")
    @classmethod
    def _not_blank(cls, value: object) -> object:
        """Say "blank" rather than quote the schema's pattern."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("content")
    @classmethod
    def _stripped(cls, value: str) -> str:
        return value.strip()


class TodoState(BaseModel):
    """The session's todo list and how long it has gone untouched (persisted)."""

    state_key: ClassVar[str] = "plan.todos"

    todos: list[TodoItem] = Field(default_factory=list)
    """The items, in the order the model wrote them."""

    calls_since_update: int = 0
    """Tool calls of the session since the list was last written."""

    suggested: bool = False
    """Whether the model was already told about the list while it was unused."""


class TodoParams(BaseModel):
    """Configuration of ``todo_write`` (and of the todo reminder)."""

    remind_after_calls: int = Field(default=10, ge=0)
    """Remind the model of unfinished items after this many calls without an update
    (and again after as many more); ``0`` turns the reminder off."""

    max_items: int = Field(default=MAX_TODOS, ge=1, le=MAX_TODOS)
    """The most items a list may hold (at most :data:`MAX_TODOS`, the schema's limit)."""


def render_todos(todos: list[TodoItem]) -> str:
    """The list as checkbox lines (``[x]`` done, ``[~]`` in progress, ``[ ]`` pending)."""
    return "\n".join(f"{i}. {_MARKS[t.status]} {t.content}" for i, t in enumerate(todos, 1))


def _summary(todos: list[TodoItem]) -> str:
    counts = {status: sum(t.status == status for t in todos) for status in _MARKS}
    return (
        f"{counts['completed']} completed, {counts['in_progress']} in progress, "
        f"{counts['pending']} pending"
    )


class TodoList(ToolOutput):
    """What the todo tools return: the whole list."""

    todos: list[TodoItem]
    """The items."""

    updated: bool = False
    """Whether the call replaced the list."""

    def to_model(self) -> str:
        """A one-line summary, then the list."""
        if not self.todos:
            return "The todo list is empty." if not self.updated else "The todo list is now empty."
        head = "Todo list updated" if self.updated else "Todo list"
        return f"{head} ({_summary(self.todos)}):\n{render_todos(self.todos)}"


class TodoWriteArgs(BaseModel):
    """Arguments of ``todo_write``."""

    todos: list[TodoItem] = Field(
        max_length=MAX_TODOS,
        description="The complete new list, in order; it replaces the current one.",
    )
    """The new list."""


class TodoWrite(Tool[TodoWriteArgs, TodoList]):
    """Replace the session's todo list."""

    id = "todo_write"
    namespace = "plan"
    kind = Kind.PLAN
    description = """\
Write the todo list for the current task: send the complete list each time (it \
replaces the old one), each item with `content` and `status` (`pending`, \
`in_progress`, `completed`).

Use it for work with three or more distinct steps, for tasks the user gave as a list, \
and whenever new steps turn up while you work. Keep it current: mark an item \
`in_progress` before you start it (only one at a time) and `completed` as soon as it \
is fully done (not when tests still fail or work is partial); add follow-up items \
you discover; remove items that no longer apply. The list is kept across restarts of \
the session.

Skip it for a single simple step, for questions that need no changes, and for \
trivial edits: a list with one item is noise."""
    capabilities = Capabilities(read_only=True, scope="none", blocking=False)
    params = TodoParams
    state = TodoState

    def run(self, ctx: Context, args: TodoWriteArgs) -> TodoList:
        """Check the list and store it."""
        params = ctx.params(TodoParams)
        active = [t.content for t in args.todos if t.status == "in_progress"]
        if len(active) > 1:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"Only one item may be in_progress at a time; {len(active)} are "
                f"({'; '.join(active)}). Keep the one you are working on in_progress and "
                "set the others to pending or completed.",
            )
        if len(args.todos) > params.max_items:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"The list has {len(args.todos)} items; at most {params.max_items} "
                f"{'is' if params.max_items == 1 else 'are'} allowed. Group small steps into "
                "larger ones.",
            )
        state = ctx.state(TodoState)
        state.todos = [item.model_copy() for item in args.todos]
        state.calls_since_update = 0
        state.suggested = False
        return TodoList(todos=list(state.todos), updated=True)


class TodoReadArgs(BaseModel):
    """Arguments of ``todo_read`` (none)."""


class TodoRead(Tool[TodoReadArgs, TodoList]):
    """Return the session's todo list."""

    id = "todo_read"
    namespace = "plan"
    kind = Kind.PLAN
    description = """\
Show the current todo list with each item's status. Use it when you are unsure what \
is left to do (after a long stretch of work, or when resuming a session); you do not \
need it right after writing the list."""
    capabilities = Capabilities(read_only=True, scope="none", blocking=False)
    state = TodoState

    def run(self, ctx: Context, args: TodoReadArgs) -> TodoList:
        """Read the list."""
        return TodoList(todos=list(ctx.state(TodoState).todos))
