"""One configured server: its long-lived connection, supervision, sync and calls."""

from __future__ import annotations

import contextlib
import enum
import fcntl
import logging
import math
import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError

from toolweave.errors import ErrorKind, ToolError
from toolweave.mcp._config import ServerConfig, redact
from toolweave.mcp._convert import (
    closed_by_sdk,
    error_from_mcp,
    result_from_mcp,
    sent_by_server,
    timeout_error,
)
from toolweave.mcp._listing import ListingGuard
from toolweave.mcp._names import subject
from toolweave.mcp._transport import open_target
from toolweave.results import Progress

if TYPE_CHECKING:
    from toolweave.mcp._pool import MCPPool

__all__ = ["PendingCall", "ServerConnection", "ServerState", "ServerStatus"]

logger = logging.getLogger("toolweave.mcp")

DEBOUNCE = 0.05
"""Quiet seconds after a list_changed before re-listing, so a burst costs one re-list."""
COALESCE_MAX = 0.5
"""Longest delay of a re-list while notifications keep coming."""
BACKOFF_START = 0.2
"""First reconnect delay in seconds; doubled after each failure."""
BACKOFF_MAX = 30.0
"""Longest reconnect delay in seconds."""
MAX_PAGES = 100
"""Most tools/list pages read in one sync (a server that never ends its cursor is cut)."""
_MODERN = "2026-07-28"


class ServerState(enum.StrEnum):
    """Where a configured server's connection stands."""

    CONNECTING = "connecting"
    """Starting the server or completing the handshake."""
    ONLINE = "online"
    """Connected; its tools are listed."""
    OFFLINE = "offline"
    """Failed or stopped answering; its tools are not listed, and calls to them answer
    ``unavailable``."""
    STOPPED = "stopped"
    """Removed from the pool, or the pool is closed."""
    DISABLED = "disabled"
    """Configured with ``enabled = false``: kept in the configuration, never connected."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A snapshot of one server of a pool.

    Attributes:
        id: The server id from the configuration.
        state: The connection state.
        tools: Client names of the server's tools in the session's listing, sorted
            (none while the server is offline).
        error: Why the server is offline (or the last failure), if any.
        protocol_version: The negotiated protocol version while connected.
        group: The configured group label.
        connects: How many times a connection was established.
        syncs: How many times the tool list was read.
        list_changed: How many ``tools/list_changed`` notifications arrived.
        transport_errors: How many unreadable messages the transport delivered.
        skipped: Remote tools that were not added, with the reason.
        renamed: Remote tools whose wanted client name was taken, with the name used.
    """

    id: str
    state: ServerState
    tools: tuple[str, ...]
    error: str | None
    protocol_version: str | None
    group: str | None
    connects: int
    syncs: int
    list_changed: int
    transport_errors: int
    skipped: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)


class _ConnectionLost(Exception):
    """The transport ended, or the server stopped answering.

    Its text is for operators (it may quote the server's stderr); :attr:`public` is what
    a model may read: the error's type, or a sentence of our own.
    """

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = message if public is None else public


def _public(exc: BaseException) -> str:
    """What a model may read about ``exc``: our own sentence, else the error's type (the
    server's words and stderr may hold anything, secrets included)."""
    if isinstance(exc, _ConnectionLost):
        return exc.public
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _public(exc.exceptions[0])
    return type(exc).__name__


class PendingCall:
    """One remote call in flight: progress items, then the outcome, for one reader.

    The caller loops on :meth:`next_items` until :attr:`done`; the connection's call
    task writes. Either side may end first: writes after the end are dropped.

    Args:
        name: The tool's client name (what errors call it).
        remote: The tool's name on the server (what is sent).
    """

    __slots__ = ("_items", "_wake", "done", "name", "outcome", "remote", "scope")

    def __init__(self, name: str, remote: str) -> None:
        self.name = name
        self.remote = remote
        self._items: list[Progress] = []
        self._wake: anyio.Event | None = None  # while the reader waits
        self.scope = anyio.CancelScope()
        self.done = False
        self.outcome: Any = None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback."""
        if not self.done:
            self._items.append(Progress(message=message or "", progress=progress, total=total))
            if self._wake is not None:
                self._wake.set()

    def finish(self, outcome: Any) -> None:
        """Deliver the outcome (``(output, text)`` or a :class:`Failure`) once."""
        if not self.done:
            self.done = True
            self.outcome = outcome
            if self._wake is not None:
                self._wake.set()

    def cancel(self) -> None:
        """Stop the call (the SDK tells the server) and drop whatever arrives later; a
        call that is done already is left alone."""
        if not self.done:
            self.done = True
            self.scope.cancel()

    async def next_items(self) -> list[Progress]:
        """Wait for news: the progress items that arrived since the last call (the
        outcome is in :attr:`outcome` once :attr:`done`)."""
        if not (self._items or self.done):
            self._wake = anyio.Event()
            await self._wake.wait()
            self._wake = None
        items, self._items = self._items, []
        return items


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt: the error, and whether the request may not have reached the server."""

    error: ToolError
    transient: bool
    sent: bool = True


def describe(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups."""
    if isinstance(exc, _ConnectionLost):
        return str(exc)
    if isinstance(exc, BaseExceptionGroup):
        leaves = [describe(e) for e in exc.exceptions]
        return "; ".join(dict.fromkeys(leaves))
    if isinstance(exc, TimeoutError) and not str(exc):
        return "timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


STDERR_MAX = 4 * 1024 * 1024
"""Bytes a stdio server's stderr file may reach before it is cut back to its end."""
STDERR_KEEP = 64 * 1024
"""Bytes of the end of that file kept when it is cut."""
STDERR_CHECK = 1.0
"""Seconds between checks of that file's size."""


def _open_errlog() -> TextIO:
    """A temporary file for a server's stderr, in append mode: the server writes at its
    end even after :func:`_trim` cut it."""
    file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - the caller closes it
    fd = file.fileno()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return cast("TextIO", file)


def _trim(errlog: TextIO) -> None:
    """Cut the stderr file back to its last :data:`STDERR_KEEP` bytes once it is larger
    than :data:`STDERR_MAX` (what the server writes meanwhile may be lost)."""
    fd = errlog.fileno()
    size = os.fstat(fd).st_size
    if size <= STDERR_MAX:
        return
    kept = os.pread(fd, STDERR_KEEP, size - STDERR_KEEP)
    os.ftruncate(fd, 0)
    os.write(fd, kept)


async def _trim_loop(errlog: TextIO) -> None:
    while True:
        await anyio.sleep(STDERR_CHECK)
        with contextlib.suppress(OSError, ValueError):
            _trim(errlog)


def _tail(errlog: TextIO | None, limit: int = 400) -> str:
    if errlog is None:
        return ""
    try:
        fd = errlog.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - limit * 4)  # a character is at most 4 bytes of UTF-8
        data = os.pread(fd, size - start, start)
    except (OSError, ValueError):
        return ""
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    return text[-limit:].replace("\n", " | ")


class ServerConnection:
    """A configured server, supervised: connect, sync its tools, watch it, reconnect.

    Runs as one task of the pool. A failure is never raised to the pool: the server
    goes offline, its tools leave the session's listing (calls to them answer
    ``unavailable`` with a hint), and (with ``auto_reconnect``) it is reconnected with
    exponential backoff; once it is back, its tools are listed again.
    """

    def __init__(self, pool: MCPPool, server_id: str, config: ServerConfig) -> None:
        self.pool = pool
        self.id = server_id
        self.config = config
        self.state = ServerState.CONNECTING
        self.error: str | None = None
        """Why the server is offline, for operators (secrets replaced by ``***``)."""
        self.public_error: str | None = None
        """Why the server is offline, for the model: the error's type or our own words."""
        self._secrets = config.secrets()
        self.client: Client | None = None
        self.protocol_version: str | None = None
        self.connects = 0
        self.syncs = 0
        self.list_changed = 0
        self.transport_errors = 0
        self.next_attempt: float | None = None
        """When the next reconnect attempt starts (``anyio.current_time()`` clock)."""
        self.scope = anyio.CancelScope()
        self.settled = anyio.Event()
        self.finished = anyio.Event()
        self._online = anyio.Event()
        self._dirty = anyio.Event()
        self._retry_now = anyio.Event()
        self._calls: anyio.abc.TaskGroup | None = None
        self._pending: set[PendingCall] = set()
        self._guard = ListingGuard()

    def __repr__(self) -> str:
        return f"<ServerConnection {self.id} {self.state.value}>"

    # -- supervision ----------------------------------------------------------------

    async def run(self) -> None:
        """Connect and keep the connection alive until stopped."""
        delay = BACKOFF_START
        try:
            with self.scope:
                while True:
                    self.state = ServerState.CONNECTING
                    self.next_attempt = None
                    self._retry_now = anyio.Event()
                    before = self.connects
                    try:
                        await self._connection()
                        reason = public = "the connection ended"
                    except Exception as exc:
                        reason, public = describe(exc), _public(exc)
                    self._go_offline(reason, public)
                    self.settled.set()
                    if self.connects > before:
                        delay = BACKOFF_START
                    if not self.config.auto_reconnect:
                        self.next_attempt = None
                        await self._retry_now.wait()
                        continue
                    wait = delay * (0.8 + 0.4 * random.random())
                    self.next_attempt = anyio.current_time() + wait
                    with anyio.move_on_after(wait):
                        await self._retry_now.wait()
                    delay = min(delay * 2, BACKOFF_MAX)
        finally:
            self.state = ServerState.STOPPED
            self.client = None
            self._calls = None
            self.settled.set()
            self.finished.set()

    def stop(self) -> None:
        """Stop supervising (the connection closes, the task ends)."""
        self.scope.cancel()

    def reconnect(self) -> None:
        """Reconnect now: drop a live connection, or cut the backoff wait short."""
        if self.state is ServerState.ONLINE and self._calls is not None:
            self._calls.cancel_scope.cancel()
        self._retry_now.set()

    def _go_offline(self, reason: str, public: str | None = None) -> None:
        """Mark the server offline: ``reason`` for operators (status, logs; secrets are
        replaced here), ``public`` for the model (default: ``reason``, when it is a
        sentence of our own)."""
        if self.state is ServerState.OFFLINE:
            return
        reason = redact(reason, self._secrets)
        if self.state is ServerState.ONLINE:
            logger.warning("MCP server %r went offline: %s", self.id, reason)
        elif reason != self.error:
            logger.warning("MCP server %r could not connect: %s", self.id, reason)
        else:
            logger.debug("MCP server %r could not connect again: %s", self.id, reason)
        self.state = ServerState.OFFLINE
        self.error = reason
        self.public_error = reason if public is None else public
        self.client = None
        self.protocol_version = None
        self._online = anyio.Event()
        self.pool._server_offline(self)

    async def _connection(self) -> None:
        """One connection, from spawn to failure."""
        config = self.config
        closed = anyio.Event()
        with contextlib.ExitStack() as files:
            errlog: TextIO | None = None
            if config.type == "stdio":
                errlog = files.enter_context(_open_errlog())
            async with anyio.create_task_group() as trimmer:
                if errlog is not None:
                    trimmer.start_soon(_trim_loop, errlog)
                failure: Exception | None = None
                try:
                    await self._attempt(config, closed, errlog)
                except Exception as exc:  # raised as itself, not in a group
                    failure = exc
                finally:
                    trimmer.cancel_scope.cancel()
            if failure is not None:
                raise failure

    async def _attempt(
        self, config: ServerConfig, closed: anyio.Event, errlog: TextIO | None
    ) -> None:
        """Connect and serve once; the stderr tail goes into the failure's text."""
        deadline = anyio.current_time() + config.connect_timeout / 1000
        ended: list[bool] = []

        def ended_early() -> None:
            # The server's output ended before the handshake did: the SDK would wait
            # for the answer until the connect timeout.
            if self.state is ServerState.CONNECTING:
                ended.append(True)
                scope.cancel()

        with anyio.CancelScope(deadline=deadline) as scope:
            try:
                self._guard = ListingGuard()
                target = open_target(
                    config,
                    closed,
                    errlog,
                    lambda: self.state is not ServerState.ONLINE,
                    self._guard,
                    ended_early,
                )
                await self._session(target, scope, closed)
            except Exception as exc:
                tail = _tail(errlog)
                raise _ConnectionLost(
                    describe(exc) + (f" (server stderr: {tail})" if tail else ""),
                    _public(exc),
                ) from exc
        if scope.cancelled_caught and self.state is ServerState.CONNECTING:
            tail = _tail(errlog)
            public = (
                "the server closed its output before the handshake"
                if ended
                else f"no handshake within {config.connect_timeout:g} ms"
            )
            raise _ConnectionLost(public + (f" (server stderr: {tail})" if tail else ""), public)

    async def _session(self, target: Any, scope: anyio.CancelScope, closed: anyio.Event) -> None:
        from toolweave import __version__

        config = self.config
        client = Client(
            target,
            mode=config.mode,
            message_handler=self._on_message,
            client_info=types.Implementation(name="toolweave", version=__version__),
            cache=None,
        )
        async with client:
            self._dirty = anyio.Event()
            self._guard.version = client.protocol_version
            await self._refresh(client)
            scope.deadline = math.inf
            self.protocol_version = client.protocol_version
            try:
                async with anyio.create_task_group() as tg:
                    self._calls = tg
                    self.client = client
                    self.state = ServerState.ONLINE
                    self.error = None
                    self.connects += 1
                    self.pool._server_online(self)
                    self._online.set()
                    self.settled.set()
                    logger.info("MCP server %r online (%s)", self.id, client.protocol_version)
                    tg.start_soon(self._watch_eof, closed)
                    tg.start_soon(self._heartbeat, client)
                    tg.start_soon(self._sync_loop, client)
                    caps = client.server_capabilities.tools
                    if (
                        client.protocol_version == _MODERN
                        and caps is not None
                        and caps.list_changed
                    ):
                        tg.start_soon(self._listen, client)
            finally:
                self._calls = None
                self.client = None
                for pending in list(self._pending):  # streamed calls' readers stop waiting
                    pending.finish(self._lost_failure(pending.name, pending.remote))
                self._pending.clear()
        raise _ConnectionLost("the connection was closed")

    def _lost_failure(self, name: str, remote: str) -> Failure:
        return Failure(
            ToolError(
                ErrorKind.UNAVAILABLE,
                f"{subject(name, remote)}: the connection to MCP server {self.id!r} was lost "
                "during the call; it may or may not have taken effect. Check before "
                "repeating it.",
            ),
            transient=True,
        )

    async def _watch_eof(self, closed: anyio.Event) -> None:
        await closed.wait()
        self._go_offline("the server closed the connection")
        raise _ConnectionLost("the server closed the connection")

    async def _heartbeat(self, client: Client) -> None:
        interval = self.config.heartbeat_interval / 1000
        timeout = self.config.timeout_s
        use_ping = client.protocol_version != _MODERN
        while True:
            await anyio.sleep(interval)
            try:
                with anyio.fail_after(timeout):
                    if use_ping:
                        await client.session.send_ping()
                    else:
                        await self._refresh(client)
            except TimeoutError:
                reason = f"no answer to a heartbeat within {self.config.timeout:g} ms"
                self._go_offline(reason)
                raise _ConnectionLost(reason) from None
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND and use_ping:
                    use_ping = False
                    continue
                self._go_offline(describe(exc), _public(exc))
                raise

    async def _sync_loop(self, client: Client) -> None:
        poll = self.config.poll_interval / 1000
        while True:
            with anyio.move_on_after(poll):
                await self._dirty.wait()
            if self._dirty.is_set():
                # Trailing-edge debounce: re-list once the notifications pause (or after
                # COALESCE_MAX at the latest), so a burst costs a few re-lists.
                first = anyio.current_time()
                while anyio.current_time() - first < COALESCE_MAX:
                    self._dirty = anyio.Event()
                    with anyio.move_on_after(DEBOUNCE):
                        await self._dirty.wait()
                    if not self._dirty.is_set():
                        break
            self._dirty = anyio.Event()
            try:
                with anyio.fail_after(max(self.config.timeout_s * 2, 1.0)):
                    await self._refresh(client)
            except TimeoutError:
                reason = "the tool list did not arrive in time"
                self._go_offline(reason)
                raise _ConnectionLost(reason) from None

    async def _listen(self, client: Client) -> None:
        pause = 0.5
        while True:
            try:
                async with client.listen(tools_list_changed=True) as sub:
                    self._dirty.set()
                    pause = 0.5
                    async for _event in sub:  # also teed to _on_message, which counts
                        self._dirty.set()
            except ListenNotSupportedError:
                return
            except SubscriptionLost:
                logger.debug("list_changed subscription of %r lost; listening again", self.id)
            except MCPError as exc:
                if closed_by_sdk(exc):
                    raise
                logger.info("MCP server %r refused subscriptions/listen: %s", self.id, exc)
                return
            await anyio.sleep(pause)
            pause = min(pause * 2, 10.0)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed += 1
            self._dirty.set()
        elif isinstance(message, Exception):
            self.transport_errors += 1
            logger.debug("MCP server %r sent an unreadable message: %s", self.id, message)

    async def _refresh(self, client: Client) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        self._guard.take()  # what listings of the SDK's own left behind
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.syncs += 1
        self.pool._apply(self, tools, self._guard.take())

    def refresh_soon(self) -> None:
        """Re-read the tool list at the next opportunity."""
        self._dirty.set()

    # -- calls ----------------------------------------------------------------------

    @property
    def online(self) -> bool:
        """Whether the server is connected and its tools are listed."""
        return self.state is ServerState.ONLINE

    async def wait_online(self, within: float) -> bool:
        """Wait until the server is online, for at most ``within`` seconds."""
        if self.online:
            return True
        with anyio.move_on_after(within):
            await self._online.wait()
        return self.online

    def unavailable(self, name: str) -> ToolError:
        """The error for a call to the tool of client name ``name`` that cannot reach this
        server now, with a hint."""
        why = f" ({self.public_error})" if self.public_error else ""
        if self.state is ServerState.STOPPED:
            hint = "It was removed from the configuration; do not call its tools again."
        elif self.config.auto_reconnect:
            when = ""
            if self.next_attempt is not None:
                left = max(0.0, self.next_attempt - anyio.current_time())
                when = f" (next attempt in {left:.0f} s)"
            hint = f"It is reconnecting{when}: try again shortly, or continue without this tool."
        else:
            hint = "It will not come back by itself; continue without this tool."
        return ToolError(
            ErrorKind.UNAVAILABLE,
            f"{name} is unavailable: the MCP server {self.id!r} is {self.state.value}{why}. {hint}",
        )

    def start_call(
        self, remote: str, arguments: dict[str, Any], name: str
    ) -> PendingCall | Failure:
        """Send a call of tool ``remote`` (client name ``name``) on the live connection;
        its items arrive on the returned handle."""
        client, calls = self.client, self._calls
        if client is None or calls is None or self.state is not ServerState.ONLINE:
            return Failure(self.unavailable(name), transient=True, sent=False)
        pending = PendingCall(name, remote)
        self._pending.add(pending)
        calls.start_soon(self._run_call, client, pending, arguments)
        return pending

    async def call(self, remote: str, arguments: dict[str, Any], name: str) -> Any:
        """Run a call of tool ``remote`` (client name ``name``, what errors say) on the
        live connection in the caller's task, without progress: ``(output, text)``, or a
        :class:`Failure`.

        The caller's deadline bounds it (a session call always has one); cancelling
        the caller cancels the request on the server. No cancel scope of its own: when
        the connection ends under it, the SDK ends the request with ``CONNECTION_CLOSED``
        (``unavailable``, may be retried); a server in this process runs the call in
        the caller's task, where only the caller's deadline or cancellation stops it.
        An error the server answers (``CONNECTION_CLOSED`` included) is never retried.
        """
        client = self.client
        if client is None or self._calls is None or self.state is not ServerState.ONLINE:
            return Failure(self.unavailable(name), transient=True, sent=False)
        try:
            result = await client.call_tool(remote, arguments)
        except MCPError as exc:
            return self._error_failure(exc, name, remote)
        except Exception as exc:
            return _call_failure(exc, name, remote, self.id)
        try:
            return result_from_mcp(result, name, remote, self.id)
        except ToolError as err:
            return Failure(err, transient=False)

    async def _run_call(
        self, client: Client, pending: PendingCall, arguments: dict[str, Any]
    ) -> None:
        name, remote = pending.name, pending.remote
        try:
            with pending.scope:
                # The call's deadline is ours, not the SDK's read timeout, whose error
                # has the code a server may send too (REQUEST_TIMEOUT); the SDK tells
                # the server of the cancellation either way.
                with anyio.move_on_after(self.config.timeout_s) as timer:
                    try:
                        result = await client.call_tool(
                            remote, arguments, progress_callback=pending.progress
                        )
                    except MCPError as exc:
                        pending.finish(self._error_failure(exc, name, remote))
                        return
                    except Exception as exc:
                        pending.finish(_call_failure(exc, name, remote, self.id))
                        return
                    try:
                        pending.finish(result_from_mcp(result, name, remote, self.id))
                    except ToolError as err:
                        pending.finish(Failure(err, transient=False))
                if timer.cancelled_caught:
                    error = timeout_error(name, remote, self.id, self.config.timeout)
                    pending.finish(Failure(error, transient=False))
        finally:
            self._pending.discard(pending)
            if not pending.done:
                pending.finish(self._lost_failure(name, remote))

    def _error_failure(self, exc: MCPError, name: str, remote: str) -> Failure:
        """The failure of a call the SDK ended with ``exc``: transient (may be retried)
        only when the SDK says the connection closed under it; an error the server
        answered, whatever its code, is the server's word (``-32000`` is also the usual
        code of a server's own errors) and is never retried."""
        answered = sent_by_server(exc)
        error = error_from_mcp(exc, name, remote, self.id, self.config.timeout, answered=answered)
        return Failure(error, transient=not answered and closed_by_sdk(exc))


def _call_failure(exc: Exception, name: str, remote: str, server: str) -> Failure:
    if isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)):
        return Failure(
            ToolError(
                ErrorKind.UNAVAILABLE,
                f"{subject(name, remote)}: the connection to MCP server {server!r} failed "
                f"during the call: {describe(exc)}",
            ),
            transient=True,
        )
    return Failure(
        ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"{subject(name, remote)} on MCP server {server!r} returned an unusable result: "
            f"{describe(exc)}",
        ),
        transient=False,
    )
