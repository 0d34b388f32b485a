"""The background-task tools, named in messages as the model sees them."""

from __future__ import annotations

from toolweave import Context

__all__ = ["TASK_OUTPUT", "task_actions"]

TASK_OUTPUT = "shell:task_output"
"""The id of the tool that reads a task's new output."""

_ACTIONS = (
    ("read its new output", TASK_OUTPUT),
    ("wait for it", "shell:wait_tasks"),
    ("stop it", "shell:kill_task"),
)


def task_actions(ctx: Context) -> str:
    """What the model can do with a background task, naming each task tool of the
    session by its client name ("; read its new output with task_output, wait for it
    with wait_tasks or stop it with kill_task, using this task id"). Actions whose tool
    the set lacks are left out; without any task tool, nothing (``""``)."""
    named = [(verb, ctx.tool_name(id=tool_id)) for verb, tool_id in _ACTIONS]
    parts = [f"{verb} with {name}" for verb, name in named if name]
    if not parts:
        return ""
    said = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"
    return f"; {said}, using this task id"
