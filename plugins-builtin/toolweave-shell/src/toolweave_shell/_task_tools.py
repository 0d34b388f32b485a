"""The background-task tools: ``task_output``, ``wait_tasks`` and ``kill_task``.

They keep task records in the session state model :class:`ShellTasks`, declared with
``state_access = "shared"``: an exclusive model would serialise every call of the
tools that declare it, and a wait of several minutes must not hold up reading or
stopping another task (nor ``bash``, which starts tasks). Every change to the records
happens between two awaits (never read, await, then write back), so the calls need no
lock to stay consistent.
"""

from __future__ import annotations

import os
from typing import Literal

import anyio
from pydantic import BaseModel, Field, PrivateAttr
from toolweave import Capabilities, Context, Kind, Tool, ToolOutput

from toolweave_shell._bash import describe_exit, terminal_of
from toolweave_shell._names import TASK_OUTPUT
from toolweave_shell._tasks import BackgroundTasks, ShellTasks, TaskRecord, owner_of, tasks_of

__all__ = [
    "KillTask",
    "KillTaskArgs",
    "TaskOutput",
    "TaskOutputArgs",
    "TaskOutputResult",
    "TaskParams",
    "TaskSummary",
    "WaitTasks",
    "WaitTasksArgs",
    "WaitTasksResult",
]

REQUIRES = "param:bash.enabled_background"
"""The task tools make sense only where ``bash`` may start background tasks."""


class TaskParams(BaseModel):
    """Configuration shared by the background-task tools."""

    max_output_chars: int = Field(default=30_000, ge=200)
    """The most output returned by one call; a longer stretch keeps its head and tail."""

    default_wait_ms: int = Field(default=30_000, ge=0, le=3_600_000)
    """How long a waiting call waits when it gives no ``timeout``."""

    max_wait_ms: int = Field(default=600_000, ge=0, le=3_600_000)
    """The longest a call may wait; longer requests are lowered to it."""


class TaskSummary(BaseModel):
    """Where one background task stands."""

    task_id: str
    """The task id."""

    command: str
    """The command line."""

    status: str
    """``running``, ``completed``, ``failed``, ``killed`` or ``lost``."""

    exit_code: int | None = None
    """The exit code once known."""

    unread_bytes: int = 0
    """How much output the model has not read yet."""

    note: str | None = None
    """Why the task ended the way it did, when that needs saying."""

    processes_running: bool = False
    """The task has ended (its shell exited or was killed on its own) but processes it
    started still run; ``kill_task`` stops them."""

    def line(self) -> str:
        """One line for the model."""
        if self.status == "running":
            state = "still running"
        elif self.status in ("completed", "failed"):
            state = f"{self.status} ({describe_exit(self.exit_code)})"
        elif self.status == "killed":
            state = "killed"
        else:
            state = "lost (exit code unknown)"
        if self.processes_running:
            state += ", but processes it started are still running"
        size = self.unread_bytes
        unread = f"; {size} byte{'' if size == 1 else 's'} of unread output" if size else ""
        return f"{self.task_id} `{_short(self.command)}`: {state}{unread}"


def _short(command: str, limit: int = 80) -> str:
    one_line = " ".join(command.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def _summary(ctx: Context, manager: BackgroundTasks, record: TaskRecord) -> TaskSummary:
    try:
        size = os.path.getsize(record.output_path)
    except OSError:
        size = record.read_offset
    return TaskSummary(
        task_id=record.id,
        command=record.command,
        status=record.status,
        exit_code=record.exit_code,
        unread_bytes=max(size - record.read_offset, 0),
        note=record.note,
        processes_running=manager.lingers(ctx.session_id, record),
    )


def _clamp_wait(ctx: Context, timeout: int | None) -> float:
    params = ctx.params(TaskParams)
    wanted = params.default_wait_ms if timeout is None else timeout
    return min(wanted, params.max_wait_ms) / 1000


def _prepare(ctx: Context) -> tuple[ShellTasks, BackgroundTasks]:
    state = ctx.state(ShellTasks)
    manager = tasks_of(ctx)
    manager.refresh(state, terminal_of(ctx), ctx.session_id, owner_of(ctx))
    return state, manager


async def _wait_until(
    ctx: Context,
    manager: BackgroundTasks,
    state: ShellTasks,
    records: list[TaskRecord],
    seconds: float,
    *,
    any_: bool,
) -> bool:
    """Wait until all (or any) of ``records`` have finished; ``False`` on timeout."""
    terminal = terminal_of(ctx)
    delay = 0.02
    deadline = anyio.current_time() + seconds
    while True:
        manager.refresh(state, terminal, ctx.session_id)
        done = [r.finished for r in records]
        if (any(done) if any_ else all(done)) or not records:
            return True
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(min(delay, max(deadline - anyio.current_time(), 0)))
        delay = min(delay * 1.5, 0.25)


# -- task_output -------------------------------------------------------------------------


class TaskOutputArgs(BaseModel):
    """Arguments of ``task_output``."""

    task_id: str = Field(min_length=1, description="The id of the background task.")
    """The id of the background task."""

    block: bool = Field(
        default=False,
        description=(
            "Wait until the task has ended (or `timeout` passes) before returning its output."
        ),
    )
    """Wait for the task to end first."""

    timeout: int | None = Field(
        default=None, ge=0, description="With `block`: the most milliseconds to wait."
    )
    """With ``block``: the most milliseconds to wait."""


class TaskOutputResult(ToolOutput):
    """What ``task_output`` returns."""

    task: TaskSummary
    """Where the task stands after the call."""

    output: str = ""
    """Output written since the previous read."""

    truncated: bool = False
    """Whether the middle of the new output was left out."""

    waited_out: bool = False
    """With ``block``: the wait ended by timeout while the task still ran."""

    def to_model(self) -> str:
        """New output, then where the task stands."""
        body = self.output.rstrip("\n") if self.output else "(no new output)"
        status = self.task.line()
        if self.waited_out:
            status += " (stopped waiting: timeout)"
        if self.task.note:
            status += f"\nNote: {self.task.note}"
        return f"{body}\n[{status}]"


class TaskOutput(Tool[TaskOutputArgs, TaskOutputResult]):
    """Read the output a background task wrote since the last read."""

    id = "task_output"
    namespace = "shell"
    kind = Kind.BACKGROUND_TASK_ACTION
    description = """\
Read what a background task (started by {name:bash} with `is_background`) has written \
since you last read it, and see whether it still runs and how it ended.

Each call returns only new output, so call it again later to follow a server log or a \
long build. Set `{param:block}` to wait until the task ends (up to `{param:timeout}` milliseconds) \
instead of polling in a loop. Use {name:bash} for new commands; this tool only \
reads tasks that already exist."""
    capabilities = Capabilities(read_only=True, scope="system", timeout=3_630.0)
    params = TaskParams
    requires = REQUIRES
    state = ShellTasks
    state_access = "shared"

    async def run(self, ctx: Context, args: TaskOutputArgs) -> TaskOutputResult:
        """Optionally wait, then read the new output."""
        state, manager = _prepare(ctx)
        record = manager.get(state, args.task_id)
        waited_out = False
        if args.block and not record.finished:
            waited_out = not await _wait_until(
                ctx, manager, state, [record], _clamp_wait(ctx, args.timeout), any_=False
            )
        text, truncated = manager.read_new(record, ctx.params(TaskParams).max_output_chars)
        return TaskOutputResult(
            task=_summary(ctx, manager, record),
            output=text,
            truncated=truncated,
            waited_out=waited_out,
        )


# -- wait_tasks --------------------------------------------------------------------------


class WaitTasksArgs(BaseModel):
    """Arguments of ``wait_tasks``."""

    task_ids: list[str] = Field(
        min_length=1, description="Ids of the background tasks to wait for."
    )
    """Ids of the background tasks to wait for."""

    timeout: int | None = Field(default=None, ge=0, description="The most milliseconds to wait.")
    """The most milliseconds to wait."""

    wait_for: Literal["all", "any"] = Field(
        default="all",
        description="Return when all the tasks have ended, or as soon as any one has.",
    )
    """Return when all tasks have ended, or when any one has."""


class WaitTasksResult(ToolOutput):
    """What ``wait_tasks`` returns."""

    tasks: list[TaskSummary]
    """Where each task stands, in the order asked."""

    timed_out: bool = False
    """Whether the wait ended by timeout."""

    _reader: str | None = PrivateAttr(None)
    """The client name of ``task_output`` in the session, if it has the tool."""

    def to_model(self) -> str:
        """One line per task."""
        head = "Stopped waiting (timeout)." if self.timed_out else "Done waiting."
        lines = [head, *(t.line() for t in self.tasks)]
        if self._reader is not None and any(t.unread_bytes for t in self.tasks):
            lines.append(f"Read unread output with {self._reader}.")
        return "\n".join(lines)


class WaitTasks(Tool[WaitTasksArgs, WaitTasksResult]):
    """Wait until background tasks end."""

    id = "wait_tasks"
    namespace = "shell"
    kind = Kind.WAIT_TASKS_ACTION
    description = """\
Wait until one or more background tasks (started by {name:bash} with `is_background`) \
have ended, or until `{param:timeout}` milliseconds pass, and report how each ended.

Use it when you have nothing else to do until a build, test run or download finishes: \
it is cheaper than calling {name:task_output|the task output tool} in a loop. It does \
not return output; read that with {name:task_output|the task output tool}. Do not wait \
on servers or watchers: they never end."""
    capabilities = Capabilities(read_only=True, scope="system", timeout=3_630.0)
    params = TaskParams
    requires = REQUIRES
    state = ShellTasks
    state_access = "shared"

    async def run(self, ctx: Context, args: WaitTasksArgs) -> WaitTasksResult:
        """Wait, then summarise each task."""
        state, manager = _prepare(ctx)
        records = [manager.get(state, task_id) for task_id in dict.fromkeys(args.task_ids)]
        done = await _wait_until(
            ctx,
            manager,
            state,
            records,
            _clamp_wait(ctx, args.timeout),
            any_=args.wait_for == "any",
        )
        result = WaitTasksResult(
            tasks=[_summary(ctx, manager, r) for r in records], timed_out=not done
        )
        result._reader = ctx.tool_name(id=TASK_OUTPUT)
        return result


# -- kill_task ---------------------------------------------------------------------------


class KillTaskArgs(BaseModel):
    """Arguments of ``kill_task``."""

    task_id: str = Field(min_length=1, description="The id of the background task to stop.")
    """The id of the background task to stop."""


class KillTaskResult(ToolOutput):
    """What ``kill_task`` returns."""

    task: TaskSummary
    """Where the task stands after the call."""

    output: str = ""
    """Output the model had not read yet."""

    truncated: bool = False
    """Whether the middle of that output was left out."""

    already_ended: bool = False
    """Whether the task had ended before the call."""

    stopped_leftovers: bool = False
    """The task had ended, but processes it started still ran: they were stopped."""

    def to_model(self) -> str:
        """The outcome, then the last unread output."""
        if not self.already_ended:
            head = f"Stopped {self.task.task_id} and every process it started."
        elif self.stopped_leftovers:
            head = (
                f"{self.task.task_id} had already ended ({self.task.line()}), but processes "
                "it started were still running: they were stopped."
            )
        else:
            head = f"{self.task.task_id} had already ended: {self.task.line()}"
        if self.output:
            return f"{head}\nUnread output:\n{self.output.rstrip()}"
        return head


class KillTask(Tool[KillTaskArgs, KillTaskResult]):
    """Stop a background task and everything it started."""

    id = "kill_task"
    namespace = "shell"
    kind = Kind.KILL_TASK_ACTION
    description = """\
Stop a background task (started by {name:bash} with `is_background`) together with \
every process it started, and get the output you had not read yet.

Use it for servers and watchers you no longer need, or for a task that hangs. A task \
that has already ended is left as it is, but processes it started that still run are \
stopped. Do not stop tasks the user relies on (a dev \
server they are using) unless they asked you to."""
    capabilities = Capabilities(read_only=False, scope="system", timeout=60.0)
    params = TaskParams
    requires = REQUIRES
    state = ShellTasks
    state_access = "shared"

    async def run(self, ctx: Context, args: KillTaskArgs) -> KillTaskResult:
        """Kill the task's process group, then report."""
        state, manager = _prepare(ctx)
        record = manager.get(state, args.task_id)
        already_ended = record.finished
        stopped = await manager.kill(state, terminal_of(ctx), ctx.session_id, record)
        text, truncated = manager.read_new(record, ctx.params(TaskParams).max_output_chars)
        return KillTaskResult(
            task=_summary(ctx, manager, record),
            output=text,
            truncated=truncated,
            already_ended=already_ended,
            stopped_leftovers=already_ended and stopped,
        )
