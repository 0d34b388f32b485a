"""Transports to a configured server, with an end-of-stream signal for quick failure detection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TextIO

import anyio

from toolweave.mcp._config import ServerConfig

__all__ = ["open_target"]


class _WatchedReadStream:
    """A transport's read stream that sets ``closed`` when the other side goes away.

    An idle stdio server that exits is otherwise noticed only by the next request.
    """

    __slots__ = ("_closed", "_inner")

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise

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


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[Any], closed: anyio.Event
) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read, write):
        yield _WatchedReadStream(read, closed), write


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


def open_target(config: ServerConfig, closed: anyio.Event, errlog: TextIO | None) -> Any:
    """What to hand ``mcp.Client`` for ``config``: a transport, or an in-process server.

    Args:
        config: The server's configuration.
        closed: Set when the connection's read side ends (stdio and HTTP transports).
        errlog: Where a stdio server's stderr goes.
    """
    if config.type == "memory":
        return config.server
    if config.type == "http":
        return _watched(_http(config), closed)
    from mcp.client.stdio import StdioServerParameters, stdio_client

    assert config.command is not None
    params = StdioServerParameters(
        command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
    )
    if errlog is None:
        return _watched(stdio_client(params), closed)
    return _watched(stdio_client(params, errlog=errlog), closed)
