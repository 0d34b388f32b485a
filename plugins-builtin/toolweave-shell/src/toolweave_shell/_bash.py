"""The ``bash`` tool: run a shell command in the workspace, streaming its output."""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing

import anyio
from pydantic import BaseModel, Field, model_validator
from toolweave import (
    Capabilities,
    Context,
    Environment,
    ErrorKind,
    Kind,
    Progress,
    Tool,
    ToolError,
    ToolOutput,
)

from toolweave_shell._env import command_environment
from toolweave_shell._names import task_actions
from toolweave_shell._notify import EXECUTION_NOTIFICATIONS, notify_end
from toolweave_shell._output import PROGRESS_MAX_CHARS, CappedText, LineBatcher, cap_text
from toolweave_shell._tasks import ShellTasks, start_background
from toolweave_shell._terminal import LocalTerminal, RunningCommand, Terminal

__all__ = [
    "MAX_COMMAND_BYTES",
    "MAX_COMMAND_CHARS",
    "Bash",
    "BashArgs",
    "BashOutput",
    "BashParams",
    "describe_exit",
]

_POLL = 0.25
"""Seconds between checks whether the shell ended while its output pipe stays open."""
_DRAIN = 0.5
"""Seconds to keep reading after the shell ended, for output still in the pipe."""
MAX_COMMAND_CHARS = 100_000
"""The longest command, in characters (the schema's ``maxLength``, so the model sees it)."""
MAX_COMMAND_BYTES = 128 * 1024 - 1
"""The longest command in UTF-8 bytes: Linux refuses a longer single argument of a new
process (``MAX_ARG_STRLEN``, with its NUL) as "Argument list too long"."""
TIMEOUT_TAIL_CHARS = 4_000
"""How much of the end of its output a command that timed out shows in its error."""


def _progress(message: str) -> Progress:
    """A progress item of command output, cut to its head and tail when very long."""
    return Progress(message=cap_text(message, PROGRESS_MAX_CHARS)[0])


class BashArgs(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description=(
            "The shell command to run. Longer scripts belong in a file that the command runs."
        ),
    )
    """The shell command to run."""

    timeout: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Milliseconds the command may run before it is stopped. Omit for the default; "
            "values above the maximum allowed here are lowered to it."
        ),
    )
    """Milliseconds the command may run; clamped to ``max_timeout_ms``."""

    description: str | None = Field(
        default=None,
        description=(
            "What the command does, in 5-10 words, for the user watching "
            "(e.g. 'Run the parser unit tests')."
        ),
    )
    """What the command does, for people watching."""

    is_background: bool = Field(
        default=False,
        description=(
            "Run the command in the background and return a task id at once, for servers, "
            "watchers and other commands that run long or never end."
        ),
    )
    """Start the command as a background task."""


class BashParams(BaseModel):
    """Configuration of ``bash``."""

    enabled_background: bool = True
    """Whether ``is_background`` may start background tasks."""

    max_timeout_ms: int = Field(default=600_000, ge=1_000, le=3_600_000)
    """The longest a foreground command may run; longer requests are lowered to it."""

    default_timeout_ms: int = Field(default=120_000, ge=1_000, le=3_600_000)
    """How long a foreground command may run when the call gives no ``timeout``."""

    max_output_chars: int = Field(default=30_000, ge=200)
    """Output beyond this keeps its first and last halves, with a marker in between."""

    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for every command (foreground and background), over the rest."""

    env_passthrough: list[str] = Field(default_factory=list)
    """More variables of the host's environment commands get, besides the allow-list
    ``SAFE_VARIABLES`` (names or ``fnmatch`` patterns, e.g. ``"PYTHON*"``)."""

    inherit_env: bool = False
    """Give commands the host's whole environment, secrets included (API keys, tokens).
    Off by default: commands get the allow-list, ``env_passthrough`` and ``env``."""

    @model_validator(mode="after")
    def _default_within_max(self) -> BashParams:
        if self.default_timeout_ms > self.max_timeout_ms:
            raise ValueError("default_timeout_ms must not exceed max_timeout_ms")
        return self


def describe_exit(code: int | None) -> str:
    """How a command ended, in words (``exit code 2``, ``killed by SIGTERM``)."""
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


class BashOutput(ToolOutput):
    """What ``bash`` returns."""

    output: str = ""
    """Combined stdout and stderr (head and tail only, when ``truncated``)."""

    exit_code: int | None = None
    """The shell's exit code (negative: killed by that signal); ``None`` for a task."""

    truncated: bool = False
    """Whether the middle of the output was left out."""

    task_id: str | None = None
    """The background task's id, when the command was started in the background."""

    note: str | None = None
    """What else happened, for the model (processes left running, a task)."""

    def to_model(self) -> str:
        """The output, then how the command ended when that is not a plain success."""
        if self.task_id is not None:
            return self.note or f"Started background task {self.task_id}."
        parts = [self.output.rstrip("\n")] if self.output.strip() else []
        if self.exit_code != 0:
            parts.append(f"[{describe_exit(self.exit_code)}]")
        elif not parts:
            parts.append("(no output; exit code 0)")
        if self.note:
            parts.append(f"[{self.note}]")
        return "\n".join(parts)


def terminal_of(ctx: Context) -> Terminal:
    """The session's terminal backend (a local one when the host gave none)."""
    return ctx.resources.get_or_default(Terminal, LocalTerminal)


def environment_of(ctx: Context) -> Mapping[str, str]:
    """The environment commands get: the session's ``Environment`` when the host gave
    one, else the allow-listed part of this process's (see :mod:`toolweave_shell._env`);
    the ``env`` param on top."""
    params = ctx.params(BashParams)
    host = ctx.get(Environment)
    return command_environment(
        host.variables if host is not None else None,
        inherit=params.inherit_env,
        passthrough=params.env_passthrough,
        extra=params.env,
    )


_DESCRIPTION = """\
Run a shell command in the workspace and get back its output (stdout and stderr \
combined, in the order written) and exit code.

How commands run:
- Every call starts a fresh non-interactive shell (`bash -c`) in the workspace root. \
`cd`, exported variables and shell functions do not carry over to the next call: \
chain dependent steps in one command (`cd web && npm test`).
- Standard input is closed, so anything that waits for input fails instead of \
hanging. Pass non-interactive flags (`-y`, `--yes`, `--no-edit`) and avoid \
interactive programs (editors, pagers, REPLs, `git rebase -i`, `git add -p`).
- `{param:timeout}` is in milliseconds; when it passes, the command and every process it \
started are stopped and you get the output so far. Long-running work (dev servers, \
file watchers, long builds you want to check on later) belongs in the background: \
set `{param:is_background}` and the call returns a task id at once; read its new output with \
{name:task_output|the task output tool}, wait for it with {name:wait_tasks|the task \
wait tool} or stop it with {name:kill_task|the task kill tool}. Do not append `&` yourself: \
processes a foreground command leaves behind are stopped when it returns.
- Very long output keeps only its beginning and end. Trim noisy commands yourself \
(`--quiet`, `| tail -n 50`, `| head -n 100`).

Use it for builds, tests, linters, formatters, package managers, git and other \
programs. Do not use it to read, search, list or edit files when the session has \
dedicated file and search tools: those are faster, confined to the workspace and \
easier for the user to review (so no `cat`, `head`, `grep`, `find`, `ls`, `sed -i` or \
`echo >` for files they can handle).

Quote paths that contain spaces. Give a short `{param:description}` of what the command does. \
Be careful with commands that destroy work or reach outside the workspace (`rm -rf`, \
`git reset --hard`, `git push --force`, installing system packages): run them only when \
the user asked for exactly that."""


class Bash(Tool[BashArgs, BashOutput]):
    """Run a shell command in the workspace; stream its output while it runs."""

    id = "bash"
    namespace = "shell"
    kind = Kind.EXECUTE
    description = _DESCRIPTION
    capabilities = Capabilities(read_only=False, scope="system", timeout=3_630.0)
    params = BashParams
    state = ShellTasks
    state_access = "shared"  # starting a task must not wait for a long wait_tasks
    emitted_notifications = EXECUTION_NOTIFICATIONS

    async def stream(self, ctx: Context, args: BashArgs) -> AsyncIterator[Progress | BashOutput]:
        """Start the command and yield its output lines as they come, then the result."""
        params = ctx.params(BashParams)
        terminal = terminal_of(ctx)
        env = environment_of(ctx)
        if "\x00" in args.command:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{ctx.param_name('command')}` holds a NUL character, which no command can hold",
            )
        size = len(args.command.encode("utf-8", "surrogatepass"))
        if size > MAX_COMMAND_BYTES:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{ctx.param_name('command')}` is {size:,} bytes in UTF-8; a command holds "
                f"at most {MAX_COMMAND_BYTES:,}. Write the script to a file and run that.",
            )
        if args.is_background:
            if not params.enabled_background:
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    "Background commands are turned off in this session; run the command "
                    f"without `{ctx.param_name('is_background')}` (with a "
                    f"`{ctx.param_name('timeout')}` if it takes long).",
                )
            record = await start_background(
                ctx, terminal, args.command, args.description, env, ctx.state(ShellTasks)
            )
            yield BashOutput(
                task_id=record.id,
                note=(
                    f"Started background task {record.id} (pid {record.pid}). It keeps "
                    f"running after this call{task_actions(ctx)}."
                ),
            )
            return
        limit_ms = min(args.timeout or params.default_timeout_ms, params.max_timeout_ms)
        try:
            # Shielded: a start cancelled halfway would kill the shell but not what it
            # already started; the cancellation arrives at the first await after it.
            with anyio.CancelScope(shield=True):
                process = await terminal.run(args.command, cwd=ctx.session.workspace, env=env)
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"The shell could not be started: {exc}"
            ) from exc
        follow = _follow(ctx, process, args, limit_ms, params.max_output_chars)
        async with aclosing(follow):
            async for item in follow:
                yield item


async def _follow(
    ctx: Context, process: RunningCommand, args: BashArgs, limit_ms: int, cap: int
) -> AsyncGenerator[Progress | BashOutput, None]:
    """Stream the output of a started foreground command until it ends or times out."""
    started = time.monotonic()
    deadline = anyio.current_time() + limit_ms / 1000
    text = CappedText(cap)
    lines = LineBatcher()
    timed_out = False
    leftovers = False
    strays = False
    finished = False
    exited_at: float | None = None
    try:
        while True:
            now = anyio.current_time()
            if exited_at is None and process.returncode is not None:
                exited_at = now
            if now >= deadline:
                timed_out = True
                break
            if exited_at is not None and now - exited_at > _DRAIN:
                leftovers = True  # the shell is gone, something it started holds the pipe
                break
            chunk: bytes | None = None
            with anyio.move_on_after(min(deadline - now, _POLL)):
                chunk = await process.receive()
            if chunk is None:  # quiet for a while: show a partial line ("waiting...")
                partial = lines.take_partial()
                if partial:
                    yield _progress(partial)
                continue
            if not chunk:
                break
            decoded, complete = lines.feed(chunk)
            text.append(decoded)
            if complete:
                yield _progress(complete)
        wait = getattr(process, "wait", None)  # a terminal written before wait() had none
        if not (timed_out or leftovers) and process.returncode is None and wait is not None:
            # The output ended, the command may not have (``exec >build.log 2>&1``):
            # its shell is the command, waited for as long as the call may last.
            partial = lines.take_partial()
            if partial:
                yield _progress(partial)
            with anyio.move_on_after(max(deadline - anyio.current_time(), 0)):
                await wait()
            timed_out = process.returncode is None
        if timed_out or leftovers:
            await process.kill()
        else:
            strays = await process.stop_leftovers()
        rest, last = lines.flush()
        text.append(rest)
        if last:
            yield _progress(last)
        await process.aclose()
        finished = True
    finally:
        if not finished:  # cancelled, failed, or closed early: leave nothing running
            with anyio.CancelScope(shield=True):
                await process.aclose()
    code = process.returncode
    note = None
    if leftovers or strays:
        what = "that kept its output open" if leftovers else "after it ended"
        note = (
            f"the command left processes running {what}; they were stopped (use "
            f"`{ctx.param_name('is_background')}` for servers and watchers)"
        )
    notify_end(
        ctx,
        code,
        timed_out=timed_out,
        data={
            "command": args.command,
            "description": args.description,
            "background": False,
            "duration_ms": int((time.monotonic() - started) * 1000),
        },
    )
    if timed_out:
        raise _timed_out(ctx, limit_ms, text.text())
    yield BashOutput(output=text.text(), exit_code=code, truncated=text.truncated, note=note)


def _timed_out(ctx: Context, limit_ms: int, output: str) -> ToolError:
    """The ``timeout`` error of a command that ran out of time, ending with the last
    ``TIMEOUT_TAIL_CHARS`` of its output (what the model needs to see where it hung)."""
    name = ctx.tool_name() or "bash"
    message = (
        f"{name} timed out after {limit_ms / 1000:g} s: the command and the processes it "
        "started were stopped; run long commands in the background or give a longer "
        f"`{ctx.param_name('timeout')}`."
    )
    tail = output.rstrip("\n")
    if not tail.strip():
        return ToolError(ErrorKind.TIMEOUT, f"{message}\nIt printed nothing.")
    if len(tail) > TIMEOUT_TAIL_CHARS:
        tail = "[... earlier output left out ...]\n" + tail[-TIMEOUT_TAIL_CHARS:]
    return ToolError(ErrorKind.TIMEOUT, f"{message}\nIts output until then:\n{tail}")
