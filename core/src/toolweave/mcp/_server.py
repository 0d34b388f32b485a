"""Serving a session's tool set as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import itertools
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolweave.errors import UsageError
from toolweave.mcp._connection import describe
from toolweave.mcp._convert import annotations_for, call_result_to_mcp
from toolweave.results import Progress

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

    from toolweave.runtime._session import Session

__all__ = ["SessionServer", "parse_http_address", "serve", "serve_http", "serve_stdio"]

logger = logging.getLogger("toolweave.mcp")

MAX_LEGACY_CONNECTIONS = 1024
"""Most 2025-era connections remembered for out-of-band list_changed notifications."""

EOF_MARGIN = 5.0
"""Seconds added to the longest tool timeout for the stdio server's wait at the end of
its input (see :meth:`SessionServer.run_stdio`)."""


class _Server(Server[Any]):
    """The SDK's low-level server, announcing ``tools.listChanged`` to 2025-era clients."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


@final
class SessionServer:
    """A session's tools served over MCP, through the session's own call path.

    Tools are listed with their client names, rendered descriptions and schemas, and
    the annotations their capabilities support (``readOnlyHint``, ``destructiveHint``,
    ``idempotentHint``, ``openWorldHint``; see ``annotations_for``);
    calls run through :meth:`Session.call` (validation, reminders, state, guards
    apply as for any host call); progress items become MCP progress notifications;
    a change of the session's external tools sends ``tools/list_changed`` to clients
    of both protocol eras.

    Args:
        session: The session to serve.
        name: The server name announced to clients.
        version: The server version (default: toolweave's).
        instructions: Optional instructions for the client's model.
        watch_interval: Seconds between checks for changed external tools.
        telemetry: Give the session a :class:`~toolweave.observe.TelemetryHook` (spans
            and metrics through the global OpenTelemetry providers), unless it has one;
            by default when the environment sets ``TOOLWEAVE_OTEL=1``. Either way, the
            W3C trace context a client sends in a request's ``params._meta`` is read
            (by the MCP SDK's server middleware), so the call's spans are its children.
        eof_grace: Over stdio, seconds the requests read before the end of the input
            have to be answered (see :meth:`run_stdio`); by default the longest
            timeout of the session's tools plus 5 s.
    """

    def __init__(
        self,
        session: Session,
        *,
        name: str = "toolweave",
        version: str | None = None,
        instructions: str | None = None,
        watch_interval: float = 0.1,
        telemetry: bool | None = None,
        eof_grace: float | None = None,
    ) -> None:
        from toolweave import __version__

        if telemetry is None:
            telemetry = os.environ.get("TOOLWEAVE_OTEL", "").lower() in ("1", "true")
        if telemetry:
            from toolweave.observe import TelemetryHook

            if not any(isinstance(hook, TelemetryHook) for hook in session.hooks):
                TelemetryHook().attach(session)
        self.session = session
        self.watch_interval = watch_interval
        self.eof_grace = eof_grace
        self._bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus)
        self._legacy: dict[int, Any] = {}
        self._calls = itertools.count(1)
        self._listing: list[types.Tool] | None = None
        self._listing_version = -1
        self.server: Server[Any] = _Server(
            name,
            version=version or __version__,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listen,
        )

    # -- handlers -------------------------------------------------------------------

    def _remember(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        connection = getattr(ctx.session, "_connection", ctx.session)
        key = id(connection)
        if key not in self._legacy:
            if len(self._legacy) >= MAX_LEGACY_CONNECTIONS:
                self._legacy.pop(next(iter(self._legacy)))
            self._legacy[key] = ctx.session

    def tools(self) -> list[types.Tool]:
        """The MCP tool list (rebuilt when the session's listing changes)."""
        version = self.session.listing_version
        if self._listing is None or self._listing_version != version:
            session = self.session
            external = session.external
            listing: list[types.Tool] = []
            for item in session.definitions("mcp"):
                tool = types.Tool.model_validate(item)
                entry = session.toolset.get(tool.name) or external.get(tool.name)
                if entry is not None:
                    erased = entry.tool
                    tool.annotations = annotations_for(erased.capabilities, erased.read_only)
                listing.append(tool)
            self._listing = listing
            self._listing_version = version
        return self._listing

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        return types.ListToolsResult(tools=self.tools())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx)
        step = 0.0

        async def progress(item: Progress) -> None:
            nonlocal step
            step = item.progress if item.progress is not None else step + 1
            await ctx.session.report_progress(step, item.total, item.message or None)

        # The session's own call path: a tool that does not stream takes the inline
        # path, a streaming one reports each progress item to the client.
        result = await self.session.call(
            params.name, params.arguments or {}, f"mcp-{next(self._calls)}", on_progress=progress
        )
        return call_result_to_mcp(result)

    # -- list_changed -----------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        """Tell every connected client that the tool list changed (both eras)."""
        await self._bus.publish(ToolsListChanged())
        for key, session in list(self._legacy.items()):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:
                logger.debug("dropping a closed MCP connection: %s", exc)
                self._legacy.pop(key, None)

    async def watch(self) -> None:
        """Send ``tools/list_changed`` whenever the session's listing changes (its external
        tools, or a registry center's overlay).

        Runs until cancelled; :meth:`run_stdio` and :meth:`run_http` run it.
        """
        seen = self.session.listing_version
        while True:
            await anyio.sleep(self.watch_interval)
            now = self.session.listing_version
            if now != seen:
                seen = now
                await self.notify_tools_changed()

    # -- transports -------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve on this process's stdin and stdout until the client closes the pipe.

        The requests read before the end of the input are still answered: the server
        stops once each has its answer written (or was cancelled by the client), or
        after :meth:`eof_grace_seconds`, whichever comes first. A client that writes
        its requests and closes the pipe gets every answer, since a call ends by its
        tool's timeout at the latest.
        """
        from toolweave.mcp._stdio import stdio_streams

        grace = self.eof_grace_seconds()
        async with stdio_streams(grace) as (read, write), anyio.create_task_group() as tg:
            tg.start_soon(self.watch)
            await self.server.run(read, write, self.server.create_initialization_options())
            tg.cancel_scope.cancel()

    def eof_grace_seconds(self) -> float:
        """How long :meth:`run_stdio` waits at the end of its input for the answers of
        the requests it has read: ``eof_grace`` when given, else the longest timeout of
        the session's tools (built-in and external, 120 s by default) plus 5 s."""
        if self.eof_grace is not None:
            return self.eof_grace
        session = self.session
        longest = max(session.default_timeout, session.external_timeout)
        for entry in [*session.toolset.entries, *session.external.values()]:
            if entry.timeout is not None:
                longest = max(longest, entry.timeout)
        return longest + EOF_MARGIN

    def http_app(
        self, host: str = "127.0.0.1", path: str = "/mcp", port: int | None = None
    ) -> Starlette:
        """The streamable-HTTP ASGI app, with DNS-rebinding protection whatever the host.

        A request is answered only when its ``Host`` header names ``host`` or a
        loopback name (``127.0.0.1``, ``localhost``, ``[::1]``) with ``port`` (any port
        when ``port`` is ``None``), and its ``Origin``, when sent, is ``http://`` one of
        those; on a wildcard address (``0.0.0.0``, ``::``) the machine's host name and
        its addresses count as ``host``. Other requests get 421 (Host) or 403 (Origin).

        A request body is read up to 4 MiB (larger: 413). A POST whose body is a
        request with an id that is not a string or an integer gets 400 with a JSON-RPC
        error (``-32600``, id null) rather than being taken for a notification (202)
        and never run.
        """
        from toolweave.mcp._http import MAX_BODY, RefuseBadIds

        security = security_settings(host, port)
        app = self.server.streamable_http_app(
            streamable_http_path=path, transport_security=security, max_request_body_size=MAX_BODY
        )
        app.add_middleware(RefuseBadIds, path=path, security=security, max_body=MAX_BODY)
        return app

    async def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        path: str = "/mcp",
        on_ready: Callable[[str], None] | None = None,
        allow_remote: bool = False,
    ) -> None:
        """Serve streamable HTTP on ``host:port`` until cancelled.

        Only a loopback address is served unless ``allow_remote`` is set: the server
        has no authentication, and every tool (a shell among them) would be open to
        the network. Either way requests must name this server in ``Host`` and
        ``Origin`` (see :meth:`http_app`).

        Cancelled, it ends the streams clients hold open (:meth:`_end_streams`), lets
        requests in flight finish for up to 2 s, and returns without a traceback, the
        port closed.

        Args:
            host: Interface to bind (loopback by default).
            port: TCP port; ``0`` picks a free one.
            path: The endpoint path.
            on_ready: Called with the endpoint URL once the server accepts connections.
            allow_remote: Serve on an address that is not loopback.

        Raises:
            UsageError: ``host`` is not loopback and ``allow_remote`` is not set, or
                the port cannot be bound.
        """
        import uvicorn

        check_exposure(host, allow_remote=allow_remote)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        url = f"http://{shown}:{bound}{path}"
        config = uvicorn.Config(
            self.http_app(host, path, bound),
            log_level="warning",
            timeout_graceful_shutdown=2,
            lifespan="on",
        )
        server = uvicorn.Server(config)

        async def announce() -> None:
            while not server.started:  # noqa: ASYNC110 - uvicorn offers only this flag
                await anyio.sleep(0.01)
            if on_ready is not None:
                on_ready(url)

        async def run() -> None:
            # Shielded: cancelled mid-serve, uvicorn would skip its shutdown and leave
            # the app's lifespan task to die with a traceback. It stops on should_exit
            # instead (within its 0.1 s tick and the graceful shutdown's 2 s).
            try:
                with anyio.CancelScope(shield=True):
                    await server.serve(sockets=[sock])
            finally:
                stopped.set()

        stopped = anyio.Event()
        with sock:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.watch)
                tg.start_soon(announce)
                tg.start_soon(run)
                try:
                    await stopped.wait()
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._end_streams()
                    server.should_exit = True
                    tg.cancel_scope.cancel()

    async def _end_streams(self) -> None:
        """End the streams clients keep open, so that the HTTP server's shutdown does not
        wait for them and then cut them off: listen streams (2026-07-28) close
        gracefully; 2025-era sessions are terminated (their GET streams end)."""
        self._listen.close()
        manager = getattr(self.server, "_session_manager", None)
        sessions = getattr(manager, "_server_instances", None)
        for transport in list(sessions.values()) if isinstance(sessions, dict) else ():
            try:
                await transport.terminate()
            except Exception as exc:  # a session ending on its own meanwhile
                logger.debug("terminating an MCP session at shutdown: %s", describe(exc))


async def serve_stdio(session: Session, **options: Any) -> None:
    """Serve ``session``'s tools over stdio until the client closes the pipe.

    Args:
        session: The session to serve.
        **options: Passed to :class:`SessionServer` (``name``, ``instructions``, ...).
    """
    await SessionServer(session, **options).run_stdio()


async def serve_http(
    session: Session,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    on_ready: Callable[[str], None] | None = None,
    allow_remote: bool = False,
    **options: Any,
) -> None:
    """Serve ``session``'s tools over streamable HTTP at ``http://host:port/mcp``.

    Args:
        session: The session to serve.
        host: Interface to bind (loopback by default).
        port: TCP port; ``0`` picks a free one (see ``on_ready``).
        on_ready: Called with the endpoint URL once connections are accepted.
        allow_remote: Serve on an address that is not loopback (refused otherwise).
        **options: Passed to :class:`SessionServer`.
    """
    await SessionServer(session, **options).run_http(
        host, port, on_ready=on_ready, allow_remote=allow_remote
    )


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, *, allow_remote: bool = False) -> None:
    """Refuse to serve on an address other machines can reach, unless allowed.

    Raises:
        UsageError: ``host`` is not a loopback address and ``allow_remote`` is not set.
    """
    if allow_remote or _is_loopback(host):
        return
    raise UsageError(
        f"refusing to serve MCP on {host}: it is not a loopback address, and the server "
        "has no authentication (every tool would be open to the network). Bind "
        "127.0.0.1, or pass --allow-remote (allow_remote=True) to serve it anyway"
    )


def _host_forms(name: str, port: int | None) -> list[str]:
    """``Host`` header values naming ``name`` on ``port`` (any port when ``None``)."""
    if ":" in name:
        name = f"[{name}]"
    if port is None:
        return [f"{name}:*"]
    return [f"{name}:{port}", name] if port == 80 else [f"{name}:{port}"]


def _names_of_this_machine() -> list[str]:
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
        except OSError:
            continue
    return sorted(name for name in names if name)


def security_settings(host: str, port: int | None = None) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection for a server bound to ``host:port``: the
    ``Host`` must be ``host`` or a loopback name with that port, the ``Origin`` (when
    sent) ``http://`` one of them. A wildcard ``host`` stands for the machine's names."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = [host.strip("[]"), *_LOOPBACK_NAMES]
    if names[0] in ("0.0.0.0", "::", ""):
        names = [*names[1:], *_names_of_this_machine()]
    hosts: list[str] = []
    for name in names:
        hosts += [form for form in _host_forms(name.lower(), port) if form not in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{form}" for form in hosts],
    )


def parse_http_address(address: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:8000`` for IPv6; ``:8000`` or ``8000`` for loopback).

    Raises:
        UsageError: The address is not of that form.
    """
    text = address.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise UsageError(f"expected HOST:PORT (e.g. 127.0.0.1:8000), got {address!r}")
    return host, port


def _announce(url: str) -> None:
    print(f"toolweave: serving MCP on {url}", file=sys.stderr, flush=True)


def serve(
    session: Session,
    *,
    http: str | None = None,
    on_ready: Callable[[str], None] | None = None,
    allow_remote: bool = False,
    **options: Any,
) -> None:
    """Serve ``session``'s tools over MCP until stopped (blocking; for ``toolweave serve``).

    Args:
        session: The session to serve.
        http: ``HOST:PORT`` to serve streamable HTTP; ``None`` serves stdio.
        on_ready: For HTTP, called with the endpoint URL once connections are accepted
            (default: a line on stderr).
        allow_remote: For HTTP, serve on an address that is not loopback.
        **options: Passed to :class:`SessionServer`.

    Raises:
        UsageError: ``http`` is not a valid address, is not loopback without
            ``allow_remote``, or the port cannot be bound.
    """
    if http is None:
        anyio.run(functools.partial(serve_stdio, session, **options))
        return
    host, port = parse_http_address(http)
    check_exposure(host, allow_remote=allow_remote)
    ready = on_ready or _announce

    async def main() -> None:
        await serve_http(session, host, port, on_ready=ready, allow_remote=allow_remote, **options)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
