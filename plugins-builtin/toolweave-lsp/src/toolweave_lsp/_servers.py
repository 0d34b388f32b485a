"""The session's language servers: started on first use, one per workspace and
command, started again when one dies, stopped when the session closes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, ToolError
from toolweave.resources import Environment, Workspace, safe_environ

from toolweave_lsp._client import LspClient, LspStopped, file_uri
from toolweave_lsp._files import FileRefused, read_source

__all__ = ["LanguageServers", "LspParams", "OpenFile", "servers_of"]

logger = logging.getLogger("toolweave.lsp")


def _default_servers() -> dict[str, list[str]]:
    return {"python": [sys.executable, "-m", "pylsp"]}


class LspParams(BaseModel):
    """Configuration of the language-server tools (each tool has its own copy; the
    defaults suit Python with the bundled ``python-lsp-server``)."""

    servers: dict[str, list[str]] = Field(default_factory=_default_servers)
    """The command line of the server of each language id (``{"python": ["pylsp"]}``).
    Any server that speaks LSP over its standard input and output works, e.g.
    ``["basedpyright-langserver", "--stdio"]``."""

    languages: dict[str, str] = Field(default_factory=lambda: {".py": "python", ".pyi": "python"})
    """The language id of each file extension."""

    start_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Seconds a server may take to start and answer ``initialize``."""

    request_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Seconds a server may take to answer one request."""

    diagnostics_wait_s: float = Field(default=5.0, gt=0, le=120)
    """Seconds to wait for a server to publish the diagnostics of a file it was
    just told about."""

    env_passthrough: list[str] = Field(default_factory=list)
    """Variables of the host's environment the server gets besides the allow-list
    (names or ``fnmatch`` patterns), when the host gave no ``Environment``."""


class OpenFile:
    """A workspace file as its server sees it.

    Attributes:
        path: The resolved path inside the workspace.
        shown: The path as the model should see it (relative to the workspace).
        text: The file's text, as sent to the server.
        uri: Its ``file://`` URI.
        client: The file's language server.
        changed: The server was just told the text (it will publish diagnostics).
        published_before: How many times the server had published the file's
            diagnostics before that.
    """

    __slots__ = ("changed", "client", "path", "published_before", "shown", "text", "uri")

    def __init__(self, path: Path, shown: str, text: str, client: LspClient) -> None:
        self.path = path
        self.shown = shown
        self.text = text
        self.uri = file_uri(path)
        self.client = client
        self.changed = False
        self.published_before = client.published(self.uri)


class LanguageServers:
    """The language servers of one session (a resource; the pack gives every session
    its own and stops them when it closes)."""

    def __init__(self) -> None:
        self._clients: dict[tuple[Path, tuple[str, ...]], LspClient] = {}
        self._starting = anyio.Lock()
        self.closed = False

    def __repr__(self) -> str:
        return f"<LanguageServers {list(self._clients.values())}>"

    @property
    def clients(self) -> list[LspClient]:
        """The servers started so far (running or not)."""
        return list(self._clients.values())

    def language_of(self, params: LspParams, path: Path) -> str | None:
        """The language id of ``path``, or ``None`` when no server is configured for it."""
        language = params.languages.get(path.suffix.lower())
        return language if language is not None and language in params.servers else None

    async def client(self, ctx: Context, params: LspParams, language: str) -> LspClient:
        """The running server of ``language`` for the session's workspace, started (or
        started again, when the last one died) as needed."""
        if self.closed:
            raise ToolError(ErrorKind.UNAVAILABLE, "the session is closing")
        root = ctx.resources.require(Workspace).root
        command = tuple(params.servers[language])
        key = (root, command)
        async with self._starting:
            found = self._clients.get(key)
            if found is not None and found.alive:
                return found
            if found is not None:
                logger.warning("language server %s stopped; starting it again", command[0])
                await found.close()
            host_env = ctx.resources.get(Environment)
            env = (
                dict(host_env.variables)
                if host_env is not None
                else safe_environ(params.env_passthrough)
            )
            client = LspClient(command, root, env=env, request_timeout=params.request_timeout_s)
            await client.start(params.start_timeout_s)
            self._clients[key] = client
            return client

    async def open(self, ctx: Context, params: LspParams, asked: str) -> OpenFile:
        """The workspace file ``asked``, read and synchronised with its server.

        The file is read in a worker thread, opened without waiting: only a regular
        file of at most 8 MiB is read (a FIFO, socket or device is refused, never
        waited on).

        Raises:
            ToolError: ``not_found``, ``permission_denied`` (outside the workspace),
                ``invalid_params`` (no server for its language, not a regular file, too
                large, not text), ``unavailable`` (the server cannot start).
        """
        workspace = ctx.resources.require(Workspace)
        path = workspace.resolve(asked, must_exist=True)
        shown = workspace.relative(path)
        if path.is_dir():
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is a directory, not a file")
        language = self.language_of(params, path)
        if language is None:
            known = ", ".join(sorted(params.languages)) or "none"
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"no language server is configured for `{shown}` (extensions with one: {known})",
            )
        # In a worker thread, opened without waiting: a FIFO named `app.py` is refused
        # at once instead of stopping the event loop until something writes to it.
        try:
            text = await anyio.to_thread.run_sync(
                read_source, workspace, path, abandon_on_cancel=True
            )
        except FileRefused as exc:
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` {exc}") from None
        except UnicodeDecodeError:
            raise ToolError(ErrorKind.INVALID_PARAMS, f"`{shown}` is not UTF-8 text") from None
        except FileNotFoundError:
            raise ToolError(ErrorKind.NOT_FOUND, f"`{shown}` does not exist") from None
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"`{shown}` cannot be read: {exc.strerror or exc}"
            ) from None
        for attempt in (1, 2):
            client = await self.client(ctx, params, language)
            opened = OpenFile(path, shown, text, client)
            try:
                opened.changed = await client.sync_document(path, text, language)
            except LspStopped as exc:
                if attempt == 2:
                    raise ToolError(ErrorKind.UNAVAILABLE, str(exc)) from None
                continue
            return opened
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        """Stop every server (idempotent)."""
        self.closed = True
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


async def ask(
    ctx: Context,
    params: LspParams,
    asked: str,
    method: str,
    extra: Callable[[OpenFile], dict[str, Any]],
) -> tuple[OpenFile, Any]:
    """Open ``asked`` and send ``method`` about it: ``textDocument`` and what ``extra``
    returns for the opened file. One more try on a fresh server when the server died
    on the way."""
    servers = servers_of(ctx)
    for attempt in (1, 2):
        opened = await servers.open(ctx, params, asked)
        fields = extra(opened)
        try:
            answer = await opened.client.request(
                method, {"textDocument": {"uri": opened.uri}, **fields}
            )
        except LspStopped as exc:
            if attempt == 2:
                raise ToolError(ErrorKind.UNAVAILABLE, str(exc)) from None
            continue
        return opened, answer
    raise AssertionError("unreachable")  # pragma: no cover


def servers_of(ctx: Context) -> LanguageServers:
    """The session's :class:`LanguageServers`."""
    return ctx.resources.get_or_default(LanguageServers, LanguageServers)
