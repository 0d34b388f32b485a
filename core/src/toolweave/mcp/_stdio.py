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

A line the SDK cannot read as a JSON-RPC message is answered here, as the HTTP
transport does, instead of reaching the server as an exception nobody replies to:
``-32700`` (parse error, id null) for a line that is not JSON, ``-32600`` (invalid
request) for JSON that is not a message, with the request's id when it can be read
(also when the message nests too deep to parse). A request whose id is neither a
string nor an integer (null included), which the SDK takes for a notification, gets
``-32600`` with id null too (only on pipes, where the line is known). Blank lines are
skipped.

At the end of the input (the client closed the pipe, maybe right after writing its last
requests) the requests already read are still served: the input ends for the server
only once each of them is answered (a request the client cancelled counts as
answered), or after ``grace`` seconds, whichever comes first; the answers are written
and flushed before the streams are given back. With nothing unanswered the input ends
at once.

A client that goes away (it closes its end of standard output, or a write fails with a
broken pipe or a reset connection) ends the serving at once and quietly: nobody is left
to read an answer, so the input ends without waiting, the calls in flight are
cancelled, and what the server still writes is dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio

__all__ = ["stdio_streams"]

_LINE_LIMIT = 1 << 30
"""The longest message line accepted (the SDK's own transport has no limit)."""

logger = logging.getLogger("toolweave.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
BAD_ID = "Invalid Request: the id must be a string or an integer"


@asynccontextmanager
async def stdio_streams(grace: float = 30.0) -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of MCP messages over this process's stdin/stdout.

    Args:
        grace: Seconds the requests read before the end of the input have to be
            answered; the read stream ends when they all are, or when this runs out.
    """
    from mcp.server.stdio import stdio_server

    unanswered = _Unanswered()
    pipes = _Pipes.claim(unanswered)
    try:
        if pipes is None:
            async with stdio_server() as (read, write):
                watched = _AnswerWatch(write, unanswered)
                yield _Answering(read, write, None, unanswered, grace), watched
            return
        try:
            lines, out = await pipes.open()
            async with stdio_server(stdin=lines, stdout=out) as (read, write):  # type: ignore[arg-type]
                watched = _AnswerWatch(write, unanswered)
                yield _Answering(read, write, lines.pending, unanswered, grace), watched
        finally:
            await pipes.release()
    except (OSError, BaseExceptionGroup) as exc:  # the SDK's own transport: a write failed
        leaves = _leaves(exc)
        if not all(_client_gone(leaf) for leaf in leaves):
            raise
        _say_gone(leaves[0])


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc`` (itself when it is no group)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the client went away (a broken pipe, a reset connection)."""
    import errno

    if isinstance(exc, ConnectionError):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.EPIPE, errno.ECONNRESET, errno.EIO)


def _say_gone(exc: BaseException | None) -> None:
    why = f" ({_describe(exc)})" if exc is not None else ""
    logger.info(
        "the MCP client closed the connection%s; stopping, with the calls in flight cancelled",
        why,
    )


def _describe(exc: BaseException) -> str:
    """A few words for an error of a pipe (``Broken pipe``), never an empty text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class _Unanswered:
    """The requests read from the client that the server has not answered yet.

    Ids are compared as text, as the SDK matches a cancellation to its request.
    """

    def __init__(self) -> None:
        self._ids: Counter[str] = Counter()
        self._changed: anyio.Event | None = None
        self.abandoned = False
        """The client went away: nothing is waited for any more."""

    def __len__(self) -> int:
        return self._ids.total()

    def read(self, message: Any) -> None:
        """Note a message read from the client."""
        import mcp.types as types

        if isinstance(message, types.JSONRPCRequest):
            self._ids[str(message.id)] += 1
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            # The SDK does not answer a request its client cancelled.
            self._settle(message.params.get("requestId"))

    def written(self, message: Any) -> None:
        """Note a message written to the client."""
        import mcp.types as types

        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._settle(message.id)

    def _settle(self, request_id: object) -> None:
        if request_id is None:
            return
        key = str(request_id)
        if self._ids[key] > 0:
            self._ids[key] -= 1
            if self._ids[key] == 0:
                del self._ids[key]
            if self._changed is not None:
                self._changed.set()

    def abandon(self) -> None:
        """The client went away: stop waiting for the answers (nobody would read them)."""
        self.abandoned = True
        if self._changed is not None:
            self._changed.set()

    async def wait(self, grace: float) -> None:
        """Return once every request read is answered, or after ``grace`` seconds, or
        at once when the client went away."""
        with anyio.move_on_after(grace):
            while self._ids and not self.abandoned:
                self._changed = anyio.Event()
                await self._changed.wait()
        if self._ids and not self.abandoned:
            logger.warning(
                "standard input closed; exiting with %d request(s) unanswered after %g s",
                len(self),
                grace,
            )


class _AnswerWatch:
    """The SDK's write stream, noting the answers that go through it."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: Any) -> None:
        try:
            await self._inner.send(item)
        finally:  # handed over, or never will be: either way nothing more to wait for
            self._unanswered.written(getattr(item, "message", None))

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnswerWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _Answering:
    """The SDK's read stream, minus the lines it could not read, which are answered
    with a JSON-RPC error on the write stream instead.

    The SDK's reader sends exactly one item (a message or an exception) per line, in
    order, so ``pending`` (the lines handed to it, when known) pairs each exception
    with its line.

    At the end of the input the stream ends only once the requests read are answered
    (see ``unanswered``), or ``grace`` seconds later.
    """

    def __init__(
        self,
        inner: Any,
        write: Any,
        pending: deque[str] | None,
        unanswered: _Unanswered | None = None,
        grace: float = 0.0,
    ) -> None:
        self._inner = inner
        self._write = write
        self._pending = pending
        self._unanswered = unanswered
        self._grace = grace

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def __aenter__(self) -> _Answering:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self.receive_any()
            if not isinstance(item, Exception):
                return item

    async def receive(self) -> Any:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None

    async def receive_any(self) -> Any:
        """The next message, or the exception standing for a line answered here."""
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            if self._unanswered is not None and self._unanswered:
                await self._unanswered.wait(self._grace)
            raise
        line = self._pending.popleft() if self._pending else None
        if isinstance(item, Exception):
            await self._answer(error_for(line, item))
        elif line is not None and _request_with_bad_id(item, line):
            await self._answer(_error(INVALID_REQUEST, BAD_ID))
            return ValueError(BAD_ID)
        elif self._unanswered is not None:
            self._unanswered.read(getattr(item, "message", None))
        return item

    async def _answer(self, error: Any) -> None:
        from mcp.shared.message import SessionMessage

        logger.debug("answering an unreadable message: %s", error.error.message)
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._write.send(SessionMessage(error))

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()


def _error(code: int, message: str, request_id: int | str | None = None) -> Any:
    import mcp.types as types

    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _request_with_bad_id(item: Any, line: str) -> bool:
    """Whether ``item``, the SDK's reading of ``line``, is a notification although the
    line has an ``id``: a request whose id is neither a string nor an integer (null, a
    boolean, a fraction, an object, an array). The SDK's models ignore members they do
    not know, so such a request reads as a notification, which nobody answers; JSON-RPC
    wants an answer to a request (``"id": null`` included), and MCP forbids both a null
    id and an id on a notification."""
    import mcp.types as types

    if not isinstance(getattr(item, "message", None), types.JSONRPCNotification):
        return False  # read only for what the SDK took for a notification
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # the SDK read it, so this is not expected
        return False
    return has_bad_id(data)


def has_bad_id(data: object) -> bool:
    """Whether the parsed message ``data`` is a request (``"jsonrpc": "2.0"``, a string
    ``method``) whose ``id`` is neither a string nor an integer: what the SDK takes for
    a notification (see ``_request_with_bad_id``). A response is never one; over HTTP
    and stdio alike."""
    return (
        isinstance(data, dict)
        and data.get("jsonrpc") == "2.0"
        and isinstance(data.get("method"), str)
        and "id" in data
        and not _valid_id(data["id"])
    )


def error_for(line: str | None, exc: Exception) -> Any:
    """The JSON-RPC error answering ``line``, which the SDK refused with ``exc``."""
    if line is None:  # the SDK's own transport: only the exception is known
        not_json = "json_invalid" in str(exc) and "recursion limit" not in str(exc)
        if not_json:
            return _error(PARSE_ERROR, "Parse error: the line is not JSON")
        return _error(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
    try:
        data = json.loads(line)
    except RecursionError:
        return _error(
            INVALID_REQUEST,
            "Invalid Request: the message nests too deep to be read",
            _top_level_id(line),
        )
    except ValueError:
        return _error(PARSE_ERROR, "Parse error: the line is not JSON")
    request_id = data.get("id") if isinstance(data, dict) else None
    if not _valid_id(request_id):
        request_id = None
    return _error(INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC message", request_id)


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_COLON = re.compile(r"\s*:\s*")


def _top_level_id(text: str) -> int | str | None:
    """The ``id`` member of the JSON object ``text``, read without parsing its other
    members (which may nest deeper than a parser's recursion allows); else ``None``."""
    pos = len(text) - len(text.lstrip())
    if not text.startswith("{", pos):
        return None
    depth = 0
    key_next = False
    try:
        while pos < len(text):
            char = text[pos]
            if char == '"':
                value, end = _scanstring(text, pos + 1)
                if depth == 1 and key_next:
                    colon = _COLON.match(text, end)
                    if colon is None:
                        return None
                    if value == "id":
                        found, _ = json.JSONDecoder().raw_decode(text, colon.end())
                        return found if _valid_id(found) else None
                    key_next = False
                    end = colon.end()
                pos = end
                continue
            if char in "{[":
                depth += 1
                key_next = char == "{" and depth == 1
            elif char in "}]":
                depth -= 1
                if depth <= 0:
                    return None
            elif char == "," and depth == 1:
                key_next = True
            pos += 1
    except (ValueError, RecursionError):
        return None
    return None


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
        self.pending: deque[str] = deque()
        """The lines handed to the SDK whose message the server has not received."""

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            if line.strip():
                text = line.decode("utf-8", errors="replace")
                self.pending.append(text)
                return text


class _Output:
    """Standard output, as the SDK's transport writes it: ``write`` then ``flush``.

    Once the client is gone (see :meth:`_Pipes.client_gone`) what is written is dropped:
    the SDK's writer does not expect a failure, which would end the server with it.
    """

    def __init__(self, writer: asyncio.StreamWriter, pipes: _Pipes) -> None:
        self._writer = writer
        self._pipes = pipes

    async def write(self, text: str) -> None:
        if not self._pipes.gone:
            self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._pipes.gone:
            return
        try:
            await self._writer.drain()
        except OSError as exc:  # ConnectionResetError, BrokenPipeError: the reader left
            self._pipes.client_gone(exc)


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """The protocol of standard output: tells :class:`_Pipes` when the pipe is lost
    (asyncio watches a pipe's write end, so a client that closes its end is seen at
    once, with nothing to write)."""

    def __init__(self, pipes: _Pipes, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._pipes = pipes

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._pipes.client_gone(exc)


class _Pipes:
    """Private duplicates of stdin and stdout, served on the running asyncio loop."""

    def __init__(self, stdin: int, stdout: int, unanswered: _Unanswered | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self._unanswered = unanswered
        self._transports: list[asyncio.BaseTransport] = []
        self._reading: asyncio.BaseTransport | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._released = False
        self.gone = False
        """The client went away: standard output is lost."""

    def client_gone(self, exc: BaseException | None) -> None:
        """Standard output is lost (the client closed its end, or a write failed): end
        the input now, without waiting for the answers of the requests read, so that
        the server stops and cancels the calls in flight."""
        if self.gone or self._released:
            return
        self.gone = True
        _say_gone(exc)
        if self._unanswered is not None:
            self._unanswered.abandon()
        if self._reading is not None:
            self._reading.close()  # the reader sees the end of its input

    @classmethod
    def claim(cls, unanswered: _Unanswered | None = None) -> _Pipes | None:
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
        return cls(taken[0], taken[1], unanswered)

    async def open(self) -> tuple[_Lines, _Output]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_LINE_LIMIT, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(self.stdin, "rb", buffering=0, closefd=False),
        )
        self._transports.append(read_transport)
        self._reading = read_transport
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: _WriteProtocol(self, loop),
            os.fdopen(self.stdout, "wb", buffering=0, closefd=False),
        )
        self._transports.append(write_transport)
        write_transport.set_write_buffer_limits(high=0)  # flush() waits until written
        self._writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        return _Lines(reader), _Output(self._writer, self)

    async def release(self) -> None:
        """Finish writing, then give fds 0 and 1 back, blocking as they were."""
        if self._writer is not None and not self.gone:
            with suppress(OSError, RuntimeError):  # the client went away
                await self._writer.drain()
        self._released = True  # closing the pipes below is no client going away
        for transport in self._transports:
            transport.close()
        await asyncio.sleep(0)  # let the transports let go of the descriptors
        for private, fd in ((self.stdin, 0), (self.stdout, 1)):
            try:
                os.set_blocking(private, True)
                os.dup2(private, fd)
            finally:
                os.close(private)
