"""Standard input and output for ``toolweave serve``, read and written on the event loop.

The SDK's ``stdio_server()`` reads and writes the process's standard streams through
worker threads: each line read and each message written is a thread hop, which is
most of the server's cost per call. When both streams are pipes or sockets (as for a
server a client started) and the loop is asyncio, the same transport is fed from
non-blocking pipes instead; the SDK still parses and serialises every message.

As the SDK does, the streams are taken over while serving: file descriptor 0 reads
the null device and 1 writes to standard error, so stray reads and prints miss the
wire; both are restored (in blocking mode) on exit. Anything else (a terminal, a file,
another event loop) uses the SDK's transport unchanged.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

__all__ = ["stdio_streams"]

_LINE_LIMIT = 1 << 30
"""The longest message line accepted (the SDK's own transport has no limit)."""


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of MCP messages over this process's stdin/stdout."""
    from mcp.server.stdio import stdio_server

    pipes = _Pipes.claim()
    if pipes is None:
        async with stdio_server() as streams:
            yield streams
        return
    try:
        lines, out = await pipes.open()
        async with stdio_server(stdin=lines, stdout=out) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        await pipes.release()


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Lines:
    """Lines of standard input, as the SDK's transport iterates them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Output:
    """Standard output, as the SDK's transport writes it: ``write`` then ``flush``."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


class _Pipes:
    """Private duplicates of stdin and stdout, served on the running asyncio loop."""

    def __init__(self, stdin: int, stdout: int) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self._transports: list[asyncio.BaseTransport] = []
        self._writer: asyncio.StreamWriter | None = None

    @classmethod
    def claim(cls) -> _Pipes | None:
        """Take over fds 0 and 1 when both are pipes or sockets on an asyncio loop."""
        if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        import fcntl

        taken: list[int] = []
        try:
            for fd in (0, 1):
                taken.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, 0)
            finally:
                os.close(null)
            os.dup2(2, 1)
        except OSError:
            for fd, private in enumerate(taken):
                os.dup2(private, fd)
                os.close(private)
            return None  # the SDK's transport copes as it can
        return cls(taken[0], taken[1])

    async def open(self) -> tuple[_Lines, _Output]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_LINE_LIMIT, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(self.stdin, "rb", buffering=0, closefd=False),
        )
        self._transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop),
            os.fdopen(self.stdout, "wb", buffering=0, closefd=False),
        )
        self._transports.append(write_transport)
        write_transport.set_write_buffer_limits(high=0)  # flush() waits until written
        self._writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        return _Lines(reader), _Output(self._writer)

    async def release(self) -> None:
        """Finish writing, then give fds 0 and 1 back, blocking as they were."""
        if self._writer is not None:
            with suppress(ConnectionError, RuntimeError):  # the client went away
                await self._writer.drain()
        for transport in self._transports:
            transport.close()
        await asyncio.sleep(0)  # let the transports let go of the descriptors
        for private, fd in ((self.stdin, 0), (self.stdout, 1)):
            try:
                os.set_blocking(private, True)
                os.dup2(private, fd)
            finally:
                os.close(private)
