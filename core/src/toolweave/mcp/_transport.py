"""Transports to a configured server, with an end-of-stream signal for quick failure detection."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TextIO

import anyio

from toolweave.mcp._config import ServerConfig
from toolweave.mcp._listing import ListingGuard
from toolweave.processes import protect_host

__all__ = ["MAX_LINE", "STOP_GRACE", "open_target"]

logger = logging.getLogger("toolweave.mcp")

STOP_GRACE = 0.5
"""Seconds a healthy stdio server gets to exit after its stdin closes before it is killed
(the SDK alone would wait 2 s, then SIGTERM and wait 2 s more). Then, exited or not, its
process group is killed: processes it started do not outlive it."""

MAX_LINE = 64 << 20
"""The longest line (one JSON-RPC message) a stdio server may write, in bytes: a longer
one ends the connection (a warning in the log) instead of filling the host's memory."""

_spawned: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "toolweave_mcp_spawned", default=None
)
"""Where the SDK's stdio transport, while one of ours opens, reports the process it spawns."""


def _hook_spawn() -> bool:
    """Let :func:`_stdio` see the process the SDK's ``stdio_client`` spawns.

    The SDK does not hand its process out; its (private) spawn function is wrapped once
    to report the process to the opening task (a context variable, so only our own
    transports are affected). Returns whether the hook is in place; if the SDK changed,
    we fall back to its own, slower teardown.
    """
    import mcp.client.stdio as sdk

    original = getattr(sdk, "_create_platform_compatible_process", None)
    if original is None or sys.platform == "win32":
        return False
    if getattr(original, "toolweave_hook", False):
        return True

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        seen = _spawned.get()
        if seen is not None:
            seen.append(process)
            stdout = getattr(process, "_stdout", None)
            if stdout is not None:
                process._stdout = _WholeLines(
                    stdout, MAX_LINE, kwargs.get("command", "?"), lambda: _kill_group(process)
                )
        return process

    spawn.toolweave_hook = True  # type: ignore[attr-defined]
    sdk._create_platform_compatible_process = spawn
    return True


class _WholeLines:
    """A stdio server's stdout handed on in whole lines, at most ``limit`` bytes each.

    The SDK's reader appends each chunk it reads to what it holds of the current line
    and splits the whole again, so a line of many chunks costs time in the square of its
    length. Handed whole lines, it holds nothing between reads. A line over ``limit``
    ends the stream and calls ``kill`` (the server's output then ends too, so the SDK's
    drain of it ends and the connection closes); what comes after is passed on as it
    comes.
    """

    __slots__ = ("_command", "_held", "_inner", "_kill", "_limit", "_over", "_size")

    def __init__(
        self, inner: Any, limit: int, command: str, kill: Callable[[], None] = lambda: None
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._command = command
        self._kill = kill
        self._held: list[bytes] = []
        self._size = 0
        self._over = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._over:
            return bytes(await self._inner.receive(max_bytes))
        while True:
            try:
                chunk = bytes(await self._inner.receive(max_bytes))
            except anyio.EndOfStream:
                if not self._held:
                    raise
                rest = b"".join(self._held)
                self._held, self._size = [], 0
                return rest
            if not self._held and chunk.endswith(b"\n"):
                return chunk  # the usual read: whole lines already
            cut = chunk.rfind(b"\n") + 1
            if cut:
                whole = b"".join((*self._held, chunk[:cut])) if self._held else chunk[:cut]
                rest = chunk[cut:]
                self._held, self._size = ([rest], len(rest)) if rest else ([], 0)
                return whole
            self._held.append(chunk)
            self._size += len(chunk)
            if self._size > self._limit:
                self._over = True
                self._held, self._size = [], 0
                logger.warning(
                    "MCP server %r wrote a message of more than %d MiB; it is stopped",
                    self._command,
                    self._limit >> 20,
                )
                self._kill()
                raise anyio.EndOfStream

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _kill_group(process: Any) -> None:
    """SIGKILL the server's process group (the SDK starts it in a session of its own,
    so the group's id is the server's pid), whether or not the server itself has exited:
    processes it started and left behind go too. A process that moved to a session or
    group of its own (``setsid``) is out of reach."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _exited(process: Any, within: float) -> bool:
    with anyio.move_on_after(within):
        while process.returncode is None:  # noqa: ASYNC110 - the SDK polls the same way
            await anyio.sleep(0.01)
    return process.returncode is not None


@asynccontextmanager
async def _stdio(
    params: Any, errlog: TextIO | None, urgent: Callable[[], bool]
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, but torn down within our budget: the server is ours,
    so when ``urgent()`` says so at the end (it never completed its handshake) it is
    killed at once; otherwise it gets :data:`STOP_GRACE` seconds after stdin closes."""
    from mcp.client.stdio import stdio_client

    protect_host()
    transport = stdio_client(params) if errlog is None else stdio_client(params, errlog=errlog)
    if not _hook_spawn():
        async with transport as streams:
            yield streams
        return
    seen: list[Any] = []
    token = _spawned.set(seen)
    try:
        entered = transport.__aenter__()
        streams = await entered
    finally:
        _spawned.reset(token)
    try:
        yield streams
    except BaseException as exc:
        await _stop(seen, urgent())
        if not await transport.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await _stop(seen, urgent())
        await transport.__aexit__(None, None, None)


async def _stop(seen: list[Any], urgent: bool) -> None:
    """End the server: close its stdin and give it :data:`STOP_GRACE` seconds to exit
    (none when ``urgent``), then kill its process group, which ends whatever it left
    running even when it exited in time."""
    with anyio.CancelScope(shield=True):
        for process in seen:
            if not urgent:
                stdin = getattr(process, "stdin", None)
                if stdin is not None:
                    with contextlib.suppress(Exception):
                        await stdin.aclose()
                await _exited(process, STOP_GRACE)
            _kill_group(process)
            await _exited(process, 2.0)


class _WatchedReadStream:
    """A transport's read stream that sets ``closed`` when the other side goes away, and
    passes what arrives through the connection's :class:`ListingGuard` (when it has one).

    An idle stdio server that exits is otherwise noticed only by the next request.
    """

    __slots__ = ("_closed", "_guard", "_inner", "_on_close")

    def __init__(
        self,
        inner: Any,
        closed: anyio.Event,
        guard: ListingGuard | None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._inner = inner
        self._closed = closed
        self._guard = guard
        self._on_close = on_close

    async def receive(self) -> Any:
        try:
            message = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            if self._on_close is not None:
                self._on_close()
            raise
        return message if self._guard is None else self._guard.received(message)

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _GuardedWriteStream:
    """A transport's write stream whose messages the :class:`ListingGuard` sees first
    (to know which answers are ``tools/list`` answers)."""

    __slots__ = ("_guard", "_inner")

    def __init__(self, inner: Any, guard: ListingGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def send(self, message: Any) -> None:
        self._guard.sent(message)
        await self._inner.send(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _GuardedWriteStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[Any],
    closed: anyio.Event,
    guard: ListingGuard | None = None,
    on_close: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read, write):
        if guard is not None:
            write = _GuardedWriteStream(write, guard)
        yield _WatchedReadStream(read, closed, guard, on_close), write


@asynccontextmanager
async def _http(config: ServerConfig) -> AsyncIterator[tuple[Any, Any]]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert config.url is not None
    timeout = httpx2.Timeout(max(30.0, config.timeout_s), read=300.0)
    async with (
        httpx2.AsyncClient(headers=config.headers, timeout=timeout) as http,
        streamable_http_client(config.url, http_client=http) as streams,
    ):
        yield streams


def open_target(
    config: ServerConfig,
    closed: anyio.Event,
    errlog: TextIO | None,
    urgent: Callable[[], bool] = lambda: True,
    guard: ListingGuard | None = None,
    on_close: Callable[[], None] | None = None,
) -> Any:
    """What to hand ``mcp.Client`` for ``config``: a transport, or an in-process server.

    Args:
        config: The server's configuration.
        closed: Set when the connection's read side ends (stdio and HTTP transports).
        errlog: Where a stdio server's stderr goes.
        urgent: Asked when a stdio connection closes: true kills the server at once
            (it never finished connecting), false gives it :data:`STOP_GRACE` seconds.
        guard: Sees the messages of a stdio or HTTP connection, and takes out of its
            ``tools/list`` answers the tools the SDK would refuse (an in-process server's
            answers do not pass through it).
        on_close: Called (with ``closed`` set) when the read side ends.
    """
    if config.type == "memory":
        return config.server
    if config.type == "http":
        return _watched(_http(config), closed, guard, on_close)
    from mcp.client.stdio import StdioServerParameters

    assert config.command is not None
    params = StdioServerParameters(
        command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
    )
    return _watched(_stdio(params, errlog, urgent), closed, guard, on_close)
