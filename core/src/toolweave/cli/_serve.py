"""``toolweave serve``: the installed packs' tools as an MCP server (stdio or HTTP)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import anyio
import typer
from anyio.abc import TaskStatus

from toolweave.cli._common import (
    DEFAULT_SESSION,
    ConfigOpt,
    ExcludeOpt,
    PacksOpt,
    SessionOpt,
    WorkspaceOpt,
    build_toolset,
    err,
    guarded,
    load_packs,
    session_id,
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
    watch_plugins,
)

__all__ = ["register"]


@guarded
def serve(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
            show_default=False,
        ),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Let --http bind an address that is not loopback (0.0.0.0, a LAN "
            "address). The server has no authentication: anyone who can reach it can "
            "call every tool.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    name: Annotated[
        str, typer.Option("--name", help="Server name shown to clients.")
    ] = "toolweave",
    session_name: SessionOpt = DEFAULT_SESSION,
    config: ConfigOpt = None,
    no_config: NoConfigOpt = False,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    center: CenterOpt = None,
    role: RoleOpt = None,
    cohort: CohortOpt = None,
    plugins: PluginsOpt = None,
    no_plugins: NoPluginsOpt = False,
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="OpenTelemetry spans and metrics for every call (toolweave[otel]; the "
            "SDK's exporters from the OTEL_* environment), as TOOLWEAVE_OTEL=1 does.",
        ),
    ] = False,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
) -> None:
    """Serve the tools over MCP until stopped (stdio by default).

    The packs' tools are served with those of the workspace's plugin folders
    (./tools/plugins, --plugins DIR, $TOOLWEAVE_PLUGINS), followed while serving: a
    file added, changed or deleted changes the listing and clients get
    `tools/list_changed`; a file that fails is reported on standard error with its line
    and its last good version is kept. The servers of the MCP server file
    (./.mcp_servers.json or ./mcp.json, --mcp FILE) join too, and edits of the file are
    followed.

    Over stdio nothing but the protocol is written to standard output; messages go to
    standard error. Over HTTP it binds only a loopback address unless --allow-remote is
    given, and answers only requests whose Host (and Origin, when sent) name the
    address it is bound to or localhost, so that web pages cannot reach it through
    DNS rebinding. Ctrl-C stops it (exit 0), over stdio and HTTP alike; over stdio so
    does the end of its input (the client closing the pipe, or Ctrl-D on a terminal),
    once the requests already read are answered (each call ends by its tool's timeout
    at the latest).

    With --center (or $TOOLWEAVE_CENTER) the served session is under the registry
    center as --role: a tool the operators disable leaves the listing within a second
    and clients get `tools/list_changed`; calls are checked and audited.

    **Examples**

        toolweave serve --packs fs,search    # for an MCP client to start
        toolweave serve --http 127.0.0.1:8765 --config toolweave.toml
        toolweave serve --http 0.0.0.0:8765 --allow-remote   # no authentication!
        toolweave serve --center .toolweave/center.db --role common_user
        toolweave serve --plugins ./my-tools --mcp .mcp_servers.json
    """
    from toolweave.mcp import parse_http_address, serve_http, serve_stdio
    from toolweave.mcp._server import check_exposure

    address = parse_http_address(http) if http is not None else None  # fails before start
    if address is not None:
        check_exposure(address[0], allow_remote=allow_remote)
    root = workspace or Path.cwd()
    folders = plugin_folders(plugins, no_plugins, root)
    server_file = mcp_file(mcp, no_mcp, root)
    config = resolve_config(config, no_config, root)
    toolset = build_toolset(load_packs(packs, exclude), config)
    session = toolset.session(workspace=root, session_id=session_id(session_name))

    def count() -> int:
        return len(session.definitions("neutral"))

    def ready(url: str) -> None:
        err.print(f"serving {count()} tools over MCP at [bold]{url}[/] (Ctrl-C stops)")

    terminal = _TerminalInput.take() if address is None else None

    async def main() -> None:
        async with (
            mcp_pool(session, server_file, registry, watch=True),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(watch_plugins, loaded)
            if address is None:

                def stopper() -> None:
                    # Ctrl-C stops at once: the end of the input alone would let the
                    # calls in flight finish first.
                    if terminal is not None:
                        terminal.close()
                    tg.cancel_scope.cancel()

                await tg.start(_stop_on_interrupt, stopper)
                err.print(f"serving {count()} tools over MCP on stdio")
                if terminal is not None:
                    err.print(
                        "[dim]hint: standard input is a terminal; an MCP client starts this "
                        "command itself and talks to it over a pipe. Ctrl-C or Ctrl-D stops it.[/]"
                    )
                    tg.start_soon(terminal.feed)
                await serve_stdio(session, name=name, telemetry=otel or None)
            else:
                await serve_http(
                    session,
                    *address,
                    on_ready=ready,
                    allow_remote=allow_remote,
                    name=name,
                    telemetry=otel or None,
                )
            tg.cancel_scope.cancel()

    with attached(session, center, role, cohort) as registry:
        loaded = open_plugins(session, folders, registry, workspace=root)
        try:
            anyio.run(main)
        except BaseException as exc:
            leaf = _leaf(exc)  # the task group wraps what the server raised
            if isinstance(leaf, KeyboardInterrupt):
                pass
            elif address is None and isinstance(leaf, (BrokenPipeError, ConnectionResetError)):
                # The client went away (the server itself ends quietly then): no error.
                err.print("[dim]the MCP client closed the connection[/]")
            else:
                raise leaf from None
        finally:
            if terminal is not None:
                terminal.restore()
            if loaded is not None:
                loaded.close()


async def _stop_on_interrupt(
    stop: Callable[[], object], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Call ``stop`` on the first Ctrl-C (SIGINT): the server stops without waiting for
    the calls in flight, and the command exits with 0."""
    if sys.platform == "win32":  # pragma: no cover - no signal receivers there
        task_status.started()
        return
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            err.print("[dim]stopping (Ctrl-C)[/]")
            stop()
            return


class _TerminalInput:
    """Standard input that is a terminal, handed to the server through a pipe.

    The MCP SDK reads a terminal in a worker thread that nothing can interrupt, so
    Ctrl-C could not stop the server. Here file descriptor 0 becomes the read end of a
    pipe that :meth:`feed` fills with what is typed; closing its write end (Ctrl-C, or
    Ctrl-D typed on the terminal) ends the server as a client closing the pipe does.
    """

    def __init__(self, tty: int, write_end: int) -> None:
        self.tty = tty
        self.write_end: int | None = write_end

    @classmethod
    def take(cls) -> _TerminalInput | None:
        """Put a pipe in place of standard input when it is a terminal (else ``None``)."""
        if sys.platform == "win32":  # pragma: no cover - POSIX descriptors only
            return None
        try:
            if not os.isatty(0):
                return None
        except OSError:
            return None
        tty = os.dup(0)
        read_end, write_end = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
        return cls(tty, write_end)

    async def feed(self) -> None:
        """Copy what is typed into the pipe until end of input (Ctrl-D) or :meth:`close`."""
        try:
            while self.write_end is not None:
                await anyio.wait_readable(self.tty)
                data = os.read(self.tty, 65536)
                if not data or self.write_end is None:
                    break
                os.write(self.write_end, data)
        finally:
            self.close()

    def close(self) -> None:
        """Close the pipe's write end: the server reads the end of its input."""
        if self.write_end is not None:
            os.close(self.write_end)
            self.write_end = None

    def restore(self) -> None:
        """Give standard input back to the terminal."""
        self.close()
        os.dup2(self.tty, 0)
        os.close(self.tty)


def _leaf(exc: BaseException) -> BaseException:
    """The one exception inside task groups that each hold one; else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command("serve")(serve)
