"""A Language Server Protocol client over a server's stdin and stdout.

One :class:`LspClient` is one running server for one workspace. Requests are
serialised (one in flight at a time, under a lock): the client reads the server's
messages only while it waits for an answer, keeping the diagnostics the server
publishes on the way and answering the requests a server sends its client
(configuration, progress tokens, capability registration) with empty results. So no
task outlives a call, and a server that stops answering costs the call its timeout
and nothing more.

The server runs in a process group of its own (:func:`toolweave.processes.process_group`)
and is stopped with everything it started when the client closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from anyio.abc import Process
from toolweave import ErrorKind, ToolError
from toolweave.processes import ProcessTree, process_group

__all__ = ["LspClient", "LspStopped", "file_uri", "uri_path"]

logger = logging.getLogger("toolweave.lsp")

MAX_MESSAGE = 64 * 1024 * 1024
"""The largest message the client reads from a server (bytes)."""


class LspStopped(Exception):
    """The server's process is gone, or its output is not the protocol."""


def file_uri(path: Path) -> str:
    """The ``file://`` URI of an absolute path."""
    return path.as_uri()


def uri_path(uri: str) -> Path | None:
    """The path of a ``file://`` URI, or ``None`` for another scheme."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class LspClient:
    """One language server process, started by :meth:`start`, stopped by :meth:`close`.

    Attributes:
        command: The server's command line.
        root: The workspace the server works on.
        capabilities: What the server said it can do, after :meth:`start`.
        diagnostics: The latest diagnostics the server published, by document URI.
    """

    def __init__(
        self,
        command: Sequence[str],
        root: Path,
        *,
        env: Mapping[str, str] | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        self.command = list(command)
        self.root = root
        self.env = dict(env) if env is not None else None
        self.request_timeout = request_timeout
        self.capabilities: dict[str, Any] = {}
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self._published: dict[str, int] = {}
        """How many times diagnostics were published per URI (a new one is news)."""
        self._documents: dict[str, tuple[int, str]] = {}
        """Open documents: URI → (version, text)."""
        self._stack = AsyncExitStack()
        self._process: Process | None = None
        self._stderr: Any = None
        self._buffer = b""
        self._next_id = 0
        self._lock = anyio.Lock()
        self._dead = ""
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        state = "stopped" if self._dead else "running" if self._process else "not started"
        return f"<LspClient {self.command[0]!r} on {self.root} ({state})>"

    @property
    def alive(self) -> bool:
        """Whether the server runs and speaks the protocol."""
        process = self._process
        return process is not None and process.returncode is None and not self._dead

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self, seconds: float) -> None:
        """Start the server and run the ``initialize`` handshake within ``seconds``.

        Raises:
            ToolError: ``unavailable`` when the command cannot be started or the
                server does not complete the handshake.
        """
        self._stderr = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115 - the stack closes it
        try:
            self._process = await self._stack.enter_async_context(
                process_group(
                    self.command,
                    stdin=PIPE,
                    stdout=PIPE,
                    stderr=self._stderr,
                    cwd=self.root,
                    env=self.env,
                    grace=1.0,
                )
            )
        except OSError as exc:
            await self._stack.aclose()
            self._stderr = None
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"the language server `{' '.join(self.command)}` could not be started: "
                f"{exc.strerror or exc}",
            ) from None
        # A host that never closes its session still leaves no server behind: when the
        # client is collected, or the interpreter exits, the server's tree is killed.
        tree = ProcessTree(self._process.pid)
        self._finalizer = weakref.finalize(self, _abandon, tree, self._stderr)
        root_uri = file_uri(self.root)
        params = {
            "processId": os.getpid(),
            "rootUri": root_uri,
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": True},
                    "publishDiagnostics": {"relatedInformation": False},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "definition": {"linkSupport": False},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                    "diagnostic": {},
                },
                "workspace": {"configuration": True, "workspaceFolders": True},
                "general": {"positionEncodings": ["utf-16"]},
            },
        }
        try:
            with anyio.fail_after(seconds):
                answer = await self._request_unlocked("initialize", params)
                found = answer.get("capabilities") if isinstance(answer, dict) else None
                self.capabilities = dict(found) if isinstance(found, dict) else {}
                await self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        except (TimeoutError, LspStopped, ToolError) as exc:
            why = "did not answer in time" if isinstance(exc, TimeoutError) else str(exc)
            tail = self.stderr_tail()
            await self.close()
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"the language server `{' '.join(self.command)}` did not start: {why}"
                + (f"\n{tail}" if tail else ""),
            ) from None

    async def close(self) -> None:
        """Ask the server to exit, then stop its whole process group (idempotent)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None and not self._dead:
            with anyio.move_on_after(1.0, shield=True):
                async with self._lock:
                    with contextlib.suppress(LspStopped, ToolError):
                        await self._request_unlocked("shutdown", None)
                        await self._send({"jsonrpc": "2.0", "method": "exit"})
        self._dead = self._dead or "closed"
        if self._finalizer is not None:
            self._finalizer.detach()
        with anyio.CancelScope(shield=True):
            await self._stack.aclose()

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the server wrote to its standard error."""
        stream = self._stderr
        if stream is None or stream.closed:
            return ""
        try:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - limit))
            return str(stream.read().decode("utf-8", "replace").strip())
        except OSError:
            return ""

    # -- documents ----------------------------------------------------------------------

    async def sync_document(self, path: Path, text: str, language: str) -> bool:
        """Open ``path`` in the server, or send its new text when it changed since;
        ``True`` when the server was told something (new diagnostics will follow)."""
        uri = file_uri(path)
        known = self._documents.get(uri)
        if known is not None and known[1] == text:
            return False
        async with self._lock:
            if known is None:
                self._documents[uri] = (1, text)
                doc = {"uri": uri, "languageId": language, "version": 1, "text": text}
                await self._send(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didOpen",
                        "params": {"textDocument": doc},
                    }
                )
            else:
                version = known[0] + 1
                self._documents[uri] = (version, text)
                await self._send(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didChange",
                        "params": {
                            "textDocument": {"uri": uri, "version": version},
                            "contentChanges": [{"text": text}],
                        },
                    }
                )
                await self._send(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didSave",
                        "params": {"textDocument": {"uri": uri}},
                    }
                )
        return True

    def published(self, uri: str) -> int:
        """How many times the server published diagnostics for ``uri``."""
        return self._published.get(uri, 0)

    async def wait_diagnostics(self, uri: str, after: int, seconds: float) -> bool:
        """Read the server's messages until it publishes diagnostics for ``uri`` more
        than ``after`` times; ``False`` when it did not within ``seconds``."""
        if self._published.get(uri, 0) > after:
            return True
        with anyio.move_on_after(seconds):
            async with self._lock:
                while self._published.get(uri, 0) <= after:
                    self._handle(await self._read())
                return True
        return False

    # -- requests -----------------------------------------------------------------------

    async def request(self, method: str, params: Any, *, seconds: float | None = None) -> Any:
        """Send a request and return its result.

        Raises:
            ToolError: ``timeout`` when the server does not answer in time,
                ``execution_error`` when it answers with an error.
            LspStopped: The server is gone (the caller may start another).
        """
        seconds = self.request_timeout if seconds is None else seconds
        try:
            with anyio.fail_after(seconds):
                async with self._lock:
                    return await self._request_unlocked(method, params)
        except TimeoutError:
            raise ToolError(
                ErrorKind.TIMEOUT,
                f"the language server did not answer `{method}` within {seconds:g} s",
            ) from None

    async def _request_unlocked(self, method: str, params: Any) -> Any:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)
        while True:
            answer = await self._read()
            if answer.get("id") == ident and "method" not in answer:
                error = answer.get("error")
                if error is not None:
                    detail = error.get("message") if isinstance(error, dict) else error
                    if not isinstance(detail, (str, int, float)):
                        detail = "(no message)"  # a structure is not walked into text
                    raise ToolError(
                        ErrorKind.EXECUTION_ERROR,
                        f"the language server failed `{method}`: {detail}",
                    )
                return answer.get("result")
            self._handle(answer)

    def _handle(self, message: dict[str, Any]) -> None:
        """Take in a notification (the server's requests are answered as they come)."""
        method = message.get("method")
        params = message.get("params")
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            uri = params.get("uri")
            if isinstance(uri, str):
                found = params.get("diagnostics")
                self.diagnostics[uri] = list(found) if isinstance(found, list) else []
                self._published[uri] = self._published.get(uri, 0) + 1

    # -- the wire -----------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None or self._dead:
            raise LspStopped(self._dead or "the language server is not running")
        body = json.dumps(message, ensure_ascii=False).encode()
        try:
            await process.stdin.send(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._stopped(f"writing to it failed ({exc!r})") from None

    async def _read(self) -> dict[str, Any]:
        """The server's next message.

        Raises:
            LspStopped: The server is gone, or its output is not the protocol.
            ToolError: ``execution_error`` for a message nested too deeply to parse
                (skipped; the stream stays in step).
        """
        process = self._process
        if process is None or process.stdout is None or self._dead:
            raise LspStopped(self._dead or "the language server is not running")
        while True:
            head, sep, rest = self._buffer.partition(b"\r\n\r\n")
            if sep:
                length = _content_length(head)
                if length is None or length > MAX_MESSAGE:
                    raise self._stopped(f"its output is not the protocol ({head[:80]!r})")
                if len(rest) >= length:
                    body, self._buffer = rest[:length], rest[length:]
                    try:
                        message = json.loads(body)
                    except RecursionError:
                        # The message was taken off the stream whole, so the next one
                        # is read as usual: this call fails, the server goes on.
                        raise ToolError(
                            ErrorKind.EXECUTION_ERROR,
                            f"the language server `{' '.join(self.command)}` sent a "
                            "message nested too deeply to read (over the JSON parser's "
                            "nesting limit); it was skipped",
                        ) from None
                    except ValueError:
                        raise self._stopped("it sent a message that is not JSON") from None
                    if not isinstance(message, dict):
                        raise self._stopped("it sent a message that is not an object")
                    if "id" in message and "method" in message:
                        await self._answer(message)
                        continue
                    return message
            elif len(self._buffer) > 8192:
                raise self._stopped("its output is not the protocol (no message header)")
            try:
                self._buffer += await process.stdout.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise self._stopped("it exited") from None

    async def _answer(self, request: dict[str, Any]) -> None:
        """Answer a request of the server's with what a minimal client says."""
        method = request.get("method")
        params = request.get("params") or {}
        result: Any = None
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            result = [None] * (len(items) if isinstance(items, list) else 0)
        elif method == "workspace/workspaceFolders":
            result = [{"uri": file_uri(self.root), "name": self.root.name}]
        await self._send({"jsonrpc": "2.0", "id": request.get("id"), "result": result})

    def _stopped(self, why: str) -> LspStopped:
        self._dead = f"the language server stopped: {why}"
        tail = self.stderr_tail(600)
        return LspStopped(self._dead + (f"\n{tail}" if tail else ""))


def _abandon(tree: ProcessTree, stderr: Any) -> None:
    """Kill every process of a server whose client was never closed (synchronously:
    there may be no event loop left), and close the file of its standard error."""
    if os.name == "posix":
        tree.kill_now()
    stderr.close()


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None
