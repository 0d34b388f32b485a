"""The ``task`` tool: a sub-agent runs a sub-task with a subset of the session's tools.

The sub-agent is a loop over the host's :class:`~toolweave_agents.ModelRunner`: the
runner gets the conversation and the definitions of the allowed tools, and replies
with tool calls or with its final text. Each call runs through the parent call's
context (:meth:`Context.call <toolweave.Context.call>`), so it takes the session's one
pipeline: its call hooks (policies, audit, a registry center's roles and switches),
its argument validation and its cancellation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, Field
from toolweave import (
    CallResult,
    Capabilities,
    Context,
    ErrorKind,
    Kind,
    Progress,
    Tool,
    ToolError,
    ToolOutput,
    UsageError,
)
from toolweave.formats import ToolCall, drop_optional_nulls, tool_result_messages

from toolweave_agents._runner import (
    Message,
    ModelRunner,
    Reply,
    definition_name,
    provider_name,
    user_message,
)

__all__ = ["Task", "TaskArgs", "TaskCall", "TaskOutput", "TaskParams"]

T = TypeVar("T")

MAX_TIMEOUT_S = 3600.0
"""The longest deadline a configuration may give a sub-agent."""


class TaskParams(BaseModel):
    """Configuration of the ``task`` tool (``[[tools]] id = "task"`` params)."""

    tools: list[str] | None = None
    """Client names of the tools sub-agents may call. ``None`` (the default): every tool
    the session lists except tools of kind ``task``. Names the session does not list
    (not configured, hidden by a registry center for the session's role) are left out:
    a sub-agent never gets more than its parent. The task tool itself is callable by a
    sub-agent only when named here (see ``max_depth``)."""

    max_steps: int = Field(default=20, ge=1, le=1000)
    """Model turns a sub-agent may take; a turn is one reply with all its tool calls."""

    timeout_s: float = Field(default=600.0, gt=0, le=MAX_TIMEOUT_S)
    """Seconds a sub-agent may run in all (its model's turns and its tool calls)."""

    max_depth: int = Field(default=2, ge=1, le=8)
    """How deeply calls may nest above a sub-agent: a task call made at call depth
    ``max_depth`` or more is refused. 1 lets only the host start sub-agents; 2 (the
    default) lets a sub-agent that was given the task tool start one more level."""


class TaskArgs(BaseModel):
    """Arguments of ``task``."""

    prompt: str = Field(
        min_length=1,
        description=(
            "The sub-task, complete in itself: the sub-agent sees nothing of this "
            "conversation. Say what to do, where, and what to report back."
        ),
    )
    tools: list[str] | None = Field(
        default=None,
        description=(
            "Names of the tools the sub-agent may use, a subset of those it is allowed "
            "(default: all of them)."
        ),
    )


class TaskCall(BaseModel):
    """One tool call a sub-agent made."""

    step: int
    """The model turn that made it (from 1)."""
    tool: str
    """The tool name the sub-agent called."""
    error: str | None = None
    """The error kind when the call failed (``permission_denied`` for a tool outside
    the sub-agent's set, ``timeout`` for a call cut by the deadline)."""


class TaskOutput(ToolOutput):
    """The sub-agent's answer and what it did to get there."""

    answer: str
    """The sub-agent's final text."""
    steps: int
    """Model turns taken, the final one included."""
    calls: list[TaskCall] = Field(default_factory=list)
    """Its tool calls, in order."""

    def to_model(self) -> str:
        return f"{self.answer}\n\n({_summary(self.steps, self.calls)})"


def _summary(steps: int, calls: list[TaskCall]) -> str:
    """One line on what the sub-agent did: turns, calls, failures."""
    turns = f"{steps} step{'s' if steps != 1 else ''}"
    if not calls:
        return f"sub-agent: {turns}, no tool calls"
    shown = ", ".join(c.tool if c.error is None else f"{c.tool} failed: {c.error}" for c in calls)
    plural = "s" if len(calls) != 1 else ""
    return f"sub-agent: {turns}, {len(calls)} tool call{plural}: {shown}"


class _OutOfTime(Exception):
    """The sub-agent's deadline passed during an await."""


async def _before(deadline: float, work: Awaitable[T]) -> T:
    """``await work``, cancelled when ``deadline`` (event-loop time) passes."""
    with anyio.move_on_after(max(deadline - anyio.current_time(), 0.0)):
        return await work
    raise _OutOfTime


class Task(Tool[TaskArgs, TaskOutput]):
    """Runs a sub-agent on a sub-task (see the module docstring)."""

    id = "task"
    namespace = "agents"
    kind = Kind.TASK
    params = TaskParams
    description = (
        "Hand a self-contained sub-task to a sub-agent: another model that works on it "
        "alone with a set of this session's tools and returns its final answer with a "
        "summary of the calls it made. Use it for work that takes many steps but whose "
        "details you do not need (searching a codebase, a series of edits), or to keep "
        "a long investigation out of this conversation. The sub-agent sees none of this "
        "conversation: write the prompt so that it stands alone.\n\n"
        "Do not use it for a single tool call you can make yourself, or for work whose "
        "intermediate results you need to see; call the tools directly instead."
    )
    # What a sub-agent reaches is through other tools, each declaring its own scope. The
    # deadline of the call is above any `timeout_s`, so the sub-agent's own deadline ends
    # it, with its partial progress in the message.
    capabilities = Capabilities(
        read_only=False, scope="none", concurrency_safe=False, timeout=MAX_TIMEOUT_S + 60
    )
    examples = ({"prompt": "Read README.md and say in one line what the project is."},)

    async def stream(self, ctx: Context, args: TaskArgs) -> AsyncIterator[Progress | TaskOutput]:
        """Run the sub-agent turn by turn, reporting each turn and each tool call."""
        params = ctx.params(TaskParams)
        me = ctx.tool_name() or "task"
        if ctx.depth >= params.max_depth:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{me} was not run: sub-agents may nest at most {params.max_depth} deep "
                "(max_depth); do the sub-task with the tools you have",
            )
        runner = ctx.get(ModelRunner)  # type: ignore[type-abstract]
        if runner is None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"{me} needs a model runner, and the host provided none "
                "(session.set_resource(runner, ModelRunner)); do the sub-task yourself",
            )
        provider = getattr(runner, "provider", None)
        try:
            kind = provider_name(str(provider))
        except UsageError as exc:
            raise ToolError(
                ErrorKind.UNAVAILABLE, f"{me}: the host's model runner is misconfigured: {exc}"
            ) from None
        names, tools = _allowed(ctx, params, args, str(provider))
        allowed = set(names)
        messages: list[Message] = [user_message(args.prompt, kind)]
        calls: list[TaskCall] = []
        deadline = anyio.current_time() + params.timeout_s
        last_text = ""
        for step in range(1, params.max_steps + 1):
            try:
                reply = await _before(deadline, runner.reply(list(messages), tools))
            except _OutOfTime:
                raise _limit(me, "timeout_s", params, step - 1, calls, last_text) from None
            if not isinstance(reply, Reply):
                raise ToolError(
                    ErrorKind.EXECUTION_ERROR,
                    f"{me}: the host's model runner returned {type(reply).__name__}, not a Reply",
                )
            last_text = reply.text or last_text
            if reply.final:
                yield Progress(f"step {step}: answered", {"step": step, "final": True})
                yield TaskOutput(answer=reply.text, steps=step, calls=calls)
                return
            if kind == "openai-responses" and isinstance(reply.message, list):
                messages.extend(reply.message)
            else:
                messages.append(reply.message)
            names_called = ", ".join(c.name for c in reply.tool_calls)
            yield Progress(f"step {step}: {names_called}", {"step": step, "tools": names_called})
            results: list[CallResult] = []
            for call in reply.tool_calls:
                try:
                    result = await _run(ctx, call, allowed, names, deadline)
                except _OutOfTime:
                    calls.append(TaskCall(step=step, tool=call.name, error="timeout"))
                    raise _limit(me, "timeout_s", params, step, calls, last_text) from None
                error = result.error.kind.value if result.error is not None else None
                calls.append(TaskCall(step=step, tool=call.name, error=error))
                results.append(result)
                said = "ok" if error is None else f"failed ({error})"
                yield Progress(
                    f"  {call.name}: {said}", {"step": step, "tool": call.name, "error": error}
                )
            messages.extend(tool_result_messages(results, kind))
        raise _limit(me, "max_steps", params, params.max_steps, calls, last_text)


def _allowed(
    ctx: Context, params: TaskParams, args: TaskArgs, format: str
) -> tuple[list[str], list[dict[str, Any]]]:
    """The names and definitions (in the runner's format) of the sub-agent's tools:
    what the session lists, narrowed by the params, then by the arguments."""
    session = ctx.session
    listed = [d["name"] for d in session.definitions("neutral")]
    if params.tools is None:
        configured = [
            n for n in listed if (e := session.resolve(n)) is not None and e.kind is not Kind.TASK
        ]
    else:
        wanted = set(params.tools)
        configured = [n for n in listed if n in wanted]
    if args.tools is None:
        names = configured
    else:
        unknown = [n for n in args.tools if n not in configured]
        if unknown:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{ctx.param_name('tools')}` names tools a sub-agent may not use: "
                f"{', '.join(unknown)}; it may use: {', '.join(configured) or 'none'}",
            )
        asked = set(args.tools)
        names = [n for n in configured if n in asked]
    keep = set(names)
    definitions = [d for d in session.definitions(format) if definition_name(d) in keep]
    return names, definitions


async def _run(
    ctx: Context, call: ToolCall, allowed: set[str], names: list[str], deadline: float
) -> CallResult:
    """Run one of the sub-agent's calls through the parent's context; a tool outside
    its set is refused without running."""
    if call.name not in allowed:
        error = ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"{call.name} is not one of your tools; you may use: {', '.join(names) or 'none'}",
        )
        return CallResult(None, error.message, error, call.call_id, None, call.name)
    result = await _before(deadline, ctx.call(call.name, _arguments(ctx, call)))
    return dataclasses.replace(result, call_id=call.call_id)


def _arguments(ctx: Context, call: ToolCall) -> Any:
    """The call's arguments without the ``null`` that strict-mode definitions send for
    an optional argument not given; as they came when they cannot be read."""
    raw = call.arguments
    entry = ctx.session.resolve(call.name)
    if entry is None:
        return raw
    try:
        data = json.loads(raw) if isinstance(raw, (str, bytes, bytearray)) else raw
    except ValueError:
        return raw  # the pipeline says what is wrong with it
    if not isinstance(data, dict):
        return raw
    schema = entry.input_schema
    return drop_optional_nulls(data, schema, schema)


def _limit(
    me: str,
    which: str,
    params: TaskParams,
    steps: int,
    calls: list[TaskCall],
    last_text: str,
) -> ToolError:
    """The error of a sub-agent that hit a limit, with what it did until then."""
    if which == "timeout_s":
        kind = ErrorKind.TIMEOUT
        what = f"did not finish within {params.timeout_s:g} s (timeout_s)"
    else:
        kind = ErrorKind.EXECUTION_ERROR
        what = f"did not finish within {params.max_steps} steps (max_steps)"
    said = f" Its last text: {last_text[:500]!r}." if last_text else ""
    message = (
        f"The sub-agent of {me} {what}; partial progress: {_summary(steps, calls)}.{said} "
        "Give it a smaller sub-task, or check what it changed before trying again."
    )
    data = {"limit": which, "steps": steps, "calls": [c.model_dump() for c in calls]}
    return ToolError(kind, message, data)
