"""``toolweave call NAME JSON``: run one tool on the current directory and print its text."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from toolweave.cli._common import (
    DEFAULT_SESSION,
    SESSION_ENV,
    ConfigOpt,
    ExcludeOpt,
    PacksOpt,
    SessionOpt,
    WorkspaceOpt,
    build_toolset,
    err,
    fail,
    guarded,
    load_packs,
    out,
    print_json,
    session_id,
    unknown_tool,
)
from toolweave.cli._discovery import NoConfigOpt, resolve_config
from toolweave.cli._registry import CenterOpt, CohortOpt, RoleOpt, attached
from toolweave.cli._sources import (
    McpOpt,
    NoMcpOpt,
    NoPluginsOpt,
    PluginsOpt,
    mcp_file,
    mcp_pool,
    open_plugins,
    plugin_folders,
)

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from toolweave.center import Center
    from toolweave.cli._ask import TerminalAskUser
    from toolweave.results import CallResult, Progress
    from toolweave.runtime._session import Session

__all__ = ["LiveProgress", "exit_code", "progress_line", "register", "show_progress"]

CALL_ID = "cli-call"
EXIT_CANCELLED = 130
"""Exit code of a call cancelled with Ctrl-C (128 + SIGINT, as shells do)."""
EXIT_COMMAND_FAILED = 3
"""Exit code of a call that succeeded while the command it ran exited non-zero."""


def progress_line(item: Progress) -> str:
    """One progress item as a line (``[3/10] message``)."""
    prefix = ""
    if item.progress is not None:
        total = f"/{item.total:g}" if item.total is not None else ""
        prefix = f"[{item.progress:g}{total}] "
    return prefix + item.message.rstrip("\n")


def show_progress(item: Progress) -> None:
    """Print one progress item on standard error (no markup is interpreted)."""
    from rich.text import Text

    err.print(Text(progress_line(item), style="dim"))


def _same_destination() -> bool:
    """Whether standard output and standard error end up in one place (one terminal, or
    one file as with ``2>&1``): there, progress printed as it comes would be read again
    in the result."""
    if out.is_terminal and err.is_terminal:
        return True
    try:
        a, b = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and stat.S_ISREG(a.st_mode)


class LiveProgress:
    """A call's progress on the terminal while it runs: a spinner under the last few
    progress lines, erased when the call ends (the result then says it all, once).

    Used when standard output and standard error are the same terminal; elsewhere
    progress lines are printed to standard error as they come (:func:`show_progress`).
    """

    def __init__(self, console: Console, name: str, keep: int = 8) -> None:
        from rich.live import Live
        from rich.spinner import Spinner
        from rich.text import Text

        self._lines: deque[str] = deque(maxlen=max(1, keep))
        self._spinner = Spinner("dots", Text(f"{name} running…", style="dim"))
        self._live = Live(self, console=console, transient=True, refresh_per_second=8)

    def __rich__(self) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        shown = [Text(line, style="dim", no_wrap=True, overflow="ellipsis") for line in self._lines]
        return Group(*shown, self._spinner)

    def add(self, item: Progress) -> None:
        """Show ``item`` as the newest line (the oldest shown scrolls away)."""
        self._lines.append(progress_line(item))

    def start(self) -> None:
        """Draw the display (again, after :meth:`stop`)."""
        self._live.start()

    def stop(self) -> None:
        """Erase the display (a question is asked meanwhile, or the call ended)."""
        self._live.stop()

    def __enter__(self) -> LiveProgress:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _watch_interrupts(session: Session, call_id: str) -> None:
    """First Ctrl-C cancels the call cleanly; a second one stops the process at once."""
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        count = 0
        async for _ in signals:
            count += 1
            if count > 1:
                raise KeyboardInterrupt
            err.print("[yellow]cancelling… (Ctrl-C again to stop at once)[/]")
            session.cancel(call_id)


async def _deadline(session: Session, seconds: float, expired: list[bool]) -> None:
    """Cancel the call when ``--timeout`` passes (whatever the tool's own deadline)."""
    await anyio.sleep(seconds)
    expired.append(True)
    session.cancel(CALL_ID)


async def run_call(
    session: Session,
    name: str,
    arguments: object,
    quiet: bool,
    seconds: float | None = None,
    asker: TerminalAskUser | None = None,
) -> CallResult:
    """Run one call in streaming mode, showing progress, honouring Ctrl-C and a time limit.

    ``asker``, when given, hides the spinner while it waits for an answer.
    """
    from toolweave.errors import ErrorKind, ToolError
    from toolweave.results import CallResult

    result: CallResult | None = None
    expired: list[bool] = []
    async with anyio.create_task_group() as tg:
        if sys.platform != "win32":
            tg.start_soon(_watch_interrupts, session, CALL_ID)
        if seconds is not None:
            tg.start_soon(_deadline, session, seconds, expired)
        shared = _same_destination()
        live = None
        if err.is_terminal and not quiet:
            live = LiveProgress(err, name, max(1, min(8, err.height // 3)) if shared else 0)
        if asker is not None:
            asker.spinner = live
        with live or contextlib.nullcontext():
            async with session.stream(name, arguments, CALL_ID) as items:
                async for item in items:
                    if isinstance(item, CallResult):
                        result = item
                    elif quiet:
                        continue
                    elif live is not None and shared:
                        live.add(item)
                    elif not shared:
                        show_progress(item)
        tg.cancel_scope.cancel()
    assert result is not None
    if expired and result.error is not None and result.error.kind == ErrorKind.CANCELLED:
        message = f"{name} did not finish within {seconds:g} s (--timeout) and was stopped"
        result.error = ToolError(ErrorKind.TIMEOUT, message)
        result.text = message
    return result


@guarded
def call(
    name: Annotated[str, typer.Argument(help="The tool's client-visible name.")],
    arguments: Annotated[
        str,
        typer.Argument(help="The arguments as a JSON object; '-' reads them from standard input."),
    ] = "{}",
    workspace: WorkspaceOpt = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            "-t",
            help="Stop the call after this many seconds (exit 1 with 'timeout').",
            show_default=False,
            min=0.001,
        ),
    ] = None,
    session_name: SessionOpt = DEFAULT_SESSION,
    config: ConfigOpt = None,
    no_config: NoConfigOpt = False,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    json_: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the whole result as JSON (name, output, text, error) instead of "
            "the text the model reads; no progress is shown.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not show progress.")] = False,
    ask: Annotated[
        bool | None,
        typer.Option(
            "--ask/--no-ask",
            help="Answer the tool's questions (ask_user) on the terminal "
            "[default: when standard input is a terminal].",
            show_default=False,
        ),
    ] = None,
    center: CenterOpt = None,
    role: RoleOpt = None,
    cohort: CohortOpt = None,
    plugins: PluginsOpt = None,
    no_plugins: NoPluginsOpt = False,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            metavar="FILE",
            help="Permission rules (TOML or JSON: allow / ask / deny, per role): a call "
            "the rules send to `ask` is put to you on the terminal.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run one tool on the current directory and print what the model would read.

    The tool may come from a pack, a plugin folder of the workspace (./tools/plugins,
    --plugins DIR, $TOOLWEAVE_PLUGINS) or the MCP server file (./.mcp_servers.json or
    ./mcp.json, --mcp FILE).

    Streaming tools show their progress as it happens, on standard error: on a terminal
    the last lines stay above a spinner and are erased when the result is printed, so
    output is read once. Ctrl-C cancels the call cleanly (exit 130).

    Exit codes: 0 done; 1 the call failed (its error kind is printed); 2 an unknown
    tool, or arguments that are not a JSON object (nothing ran); 3 the call ran a
    command that exited non-zero (bash; its output is printed); 130 Ctrl-C.

    State (todo list, plan mode, background tasks) belongs to a session: the calls of
    a workspace share the session `cli` unless --session-id or $TOOLWEAVE_SESSION
    names another. A background task goes on after the command; later calls read it.

    When standard input is a terminal (or with --ask), questions from ask_user are put
    to you there: answer with a choice's number or your own words; an empty line
    declines.

    With --center (or $TOOLWEAVE_CENTER) the call goes through the registry center as a
    session of --role: a disabled tool answers `unavailable`, a tool the role may not use
    `permission_denied`, and the call is audited.

    With --policy FILE the call is checked against permission rules; one the rules send
    to `ask` is put to you (allow once, always, deny); without a terminal it stays
    pending and the command exits 1.

    **Examples**

        toolweave call read_file '{"path": "README.md", "limit": 20}'
        toolweave call bash '{"command": "pytest -q"}'
        echo '{"pattern": "TODO"}' | toolweave call grep -
        toolweave call list_dir --json
        toolweave call ask_user '{"question": "Deploy now?", "choices": ["y", "n"]}'
        toolweave call list_dir --center .toolweave/center.db --role dev
        toolweave call text_summary '{"text": "hi"}' --plugins tools
        toolweave call bash '{"command": "git status"}' --policy policy.toml
    """
    text = sys.stdin.read() if arguments == "-" else arguments
    check_arguments(text, name, from_stdin=arguments == "-")
    root = workspace or Path.cwd()
    folders = plugin_folders(plugins, no_plugins, root)
    server_file = mcp_file(mcp, no_mcp, root)
    sid = session_id(session_name)
    config = resolve_config(config, no_config, root)
    toolset = build_toolset(load_packs(packs, exclude), config)
    session = toolset.session(workspace=root, session_id=sid)
    if ask is None:
        ask = arguments != "-" and _interactive()
    asker = _terminal_asker(session) if ask else None

    async def main() -> CallResult:
        async with mcp_pool(session, server_file, registry):
            return await run_call(session, name, text, quiet or json_, timeout, asker)

    with attached(session, center, role, cohort) as registry:
        if policy is not None:
            _attach_policy(session, policy, role, asker, registry)
        loaded = open_plugins(session, folders, registry, workspace=root)
        try:
            result = anyio.run(main)
        finally:
            if loaded is not None:
                loaded.close()
    if json_:
        print_json(result.to_dict())
    if _is_unknown(session, name, result):
        unknown_tool(name, [d["name"] for d in session.definitions("neutral")])
    if not json_ and result.error is None:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
        sys.stdout.flush()
    if not json_:
        _explain(result, sid, "task_output" in session.toolset.names)
    code = exit_code(result)
    if code:
        raise typer.Exit(code)


def check_arguments(text: str, name: str, *, from_stdin: bool = False) -> None:
    """Refuse arguments that are not a JSON object, saying where and how to quote them.

    Raises:
        CliError: Not JSON (with the position), or JSON but not an object; exit 2.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.split("\n")
        line = lines[exc.lineno - 1] if exc.lineno <= len(lines) else ""
        where = f"line {exc.lineno}, " if len(lines) > 1 else ""
        shown = line.strip() and len(line) <= 200
        pointer = f"\n  {line}\n  {' ' * (exc.colno - 1)}^" if shown else ""
        if from_stdin:
            hint = 'standard input must hold one JSON object, such as {"path": "README.md"}'
        elif '"' not in text and ":" in text:
            hint = (
                "the shell ate the double quotes: put the whole JSON in single quotes, "
                f'e.g. toolweave call {name} \'{{"path": "README.md"}}\''
            )
        else:
            hint = (
                "put the JSON in single quotes so the shell keeps its double quotes, e.g. "
                f'toolweave call {name} \'{{"path": "README.md"}}\' (or pass - and '
                "write it on standard input)"
            )
        fail(
            f"the arguments are not valid JSON: {exc.msg} at {where}column {exc.colno}{pointer}",
            hint,
            2,
        )
    if not isinstance(value, dict):
        fail(
            f"the arguments must be a JSON object, not {type(value).__name__}",
            f"name each argument: toolweave call {name} '{{\"name\": value}}'",
            2,
        )


def _is_unknown(session: Session, name: str, result: CallResult) -> bool:
    """Whether ``result`` says that ``session`` has no tool ``name`` (rather than the
    tool saying that something it looked for is not found)."""
    failed = result.error is not None and result.error.kind.value == "not_found"
    return failed and session.resolve(name) is None


def exit_code(result: CallResult) -> int:
    """The exit code of ``toolweave call`` for ``result``: 0 for a success, 1 for a
    failed call, 130 for one cancelled with Ctrl-C, 3 when the call succeeded but the
    command it ran exited non-zero (an ``exit_code`` in the tool's output, as ``bash``
    reports)."""
    if result.error is not None:
        return EXIT_CANCELLED if result.error.kind.value == "cancelled" else 1
    output = result.output
    ran = output.get("exit_code") if isinstance(output, dict) else None
    if isinstance(ran, int) and not isinstance(ran, bool) and ran != 0:
        return EXIT_COMMAND_FAILED
    return 0


def _explain(result: CallResult, sid: str, task_tools: bool) -> None:
    """The error line of a failed call, and hints that carry over to the next call."""
    from rich.text import Text

    error = result.error
    output = result.output if isinstance(result.output, dict) else {}
    again = "" if sid == DEFAULT_SESSION else f" --session-id {sid}"
    if error is not None:
        err.print(Text.assemble(("error: ", "bold red"), f"{error.kind.value}: {error.message}"))
        if error.kind.value == "not_found" and "session" in error.message:
            err.print(
                Text(
                    f"hint: this call ran in session {sid!r}; state and background tasks "
                    "belong to the session that made them: pass its --session-id (or "
                    f"${SESSION_ENV})",
                    style="dim",
                )
            )
    elif isinstance(output.get("task_id"), str) and task_tools:
        task = json.dumps({"task_id": output["task_id"]})
        err.print(
            Text(
                f"hint: it runs on after this command; read its output with "
                f"`toolweave call task_output '{task}'{again}`",
                style="dim",
            )
        )


def _attach_policy(
    session: Session,
    path: Path,
    role: str | None,
    asker: TerminalAskUser | None,
    registry: Center | None,
) -> None:
    """Put ``session`` under the rules of ``path``; ``ask`` goes to the terminal (the
    ask_user prompt's channel) when there is one, "always" answers to the center."""
    from toolweave.policy import PolicyConfig, ask_user_approver, attach_policy, flag_recorder

    attach_policy(
        session,
        PolicyConfig.load(path),
        role=role,
        approver=ask_user_approver(asker) if asker is not None else None,
        recorder=flag_recorder(registry.store) if registry is not None else None,
    )


def _interactive() -> bool:
    """Whether standard input is a terminal a person can answer on."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _terminal_asker(session: Session) -> TerminalAskUser:
    """Put ``session``'s questions to the terminal."""
    from toolweave.cli import _ask

    return _ask.install(session, err, sys.stdin)


def register(app: typer.Typer) -> None:
    """Add ``call`` to ``app``."""
    app.command("call")(call)
