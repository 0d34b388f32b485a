"""The client pool: MCP servers' tools as external tools of a session, kept in sync."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, final

import anyio
import anyio.abc
import mcp.types as types

from toolweave.errors import ConfigError, ConfigIssue, UsageError
from toolweave.mcp._config import ServerConfig, load_servers, parse_servers
from toolweave.mcp._connection import ServerConnection, ServerState, ServerStatus, describe
from toolweave.mcp._forward import remote_tool
from toolweave.mcp._names import DEFAULT_PREFIX, MAX_NAME, client_name, fit, sanitize
from toolweave.mcp._reload import file_signature, watch_file

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.center import Center
    from toolweave.runtime._session import Session

__all__ = ["MCPPool", "RemoteToolInfo"]

logger = logging.getLogger("toolweave.mcp")


@dataclass(frozen=True, slots=True)
class RemoteToolInfo:
    """Where a client name of the session leads.

    Attributes:
        name: The client-visible name in the session.
        server: The server id.
        remote: The tool's name on the server.
    """

    name: str
    server: str
    remote: str


@dataclass(slots=True)
class _Registered:
    name: str
    """The client-visible name."""
    fingerprint: str


def _retired(server_id: str) -> str:
    """The center's reason for the tools of a server removed from the configuration."""
    return f"MCP server {server_id} was removed from the configuration"


def _server_of(entry: ToolEntry) -> str:
    """The server id of a remote tool's entry (its source is ``mcp:<server>``)."""
    return entry.tool.source.removeprefix("mcp:")


def _pushed_entries(center: Center) -> dict[str, Any]:
    """The MCP server entries pushed to ``center``, by id, as stored (secrets included).

    Read through :meth:`Center.mcp_servers <toolweave.center.Center.mcp_servers>`; when
    a stored value cannot even be read as a mapping there (one written by another
    version, say), each entry is taken as it is, to be validated (and refused) on its
    own."""
    try:
        return dict(center.mcp_servers(reveal=True))
    except (TypeError, ValueError) as exc:
        logger.debug("reading the pushed MCP server entries one by one: %s", exc)
    return {
        str(target): value
        for (scope, target, flag), value in center.snapshot.flags.items()
        if scope == "mcp" and flag == "config"
    }


def _fingerprint(tool: types.Tool) -> str:
    return json.dumps(
        [
            tool.description,
            tool.title,
            tool.input_schema,
            None if tool.annotations is None else tool.annotations.model_dump(mode="json"),
        ],
        sort_keys=True,
        default=str,
    )


@final
class MCPPool:
    """Long-lived connections to MCP servers whose tools join a session.

    Each remote tool becomes an external tool of ``session`` under the client name
    ``<prefix><server>__<tool>``, with the server's input schema; arguments are
    validated against it before any request is sent. One prefix is applied, by the
    session: the server's ``prefix``, else the pool's, else the tool set's
    ``external_prefix``, else ``mcp__``. A client name from a server's ``names`` map is
    used as given, without a prefix. A name taken by a built-in tool (or another
    external tool) is never shadowed: the tool gets the default name instead, or a
    numbered one, as reported in :attr:`ServerStatus.renamed`.

    The pool keeps the tools in sync (``tools/list_changed``, reconnects, periodic
    polling) and watches each server (heartbeats). An offline server's tools leave the
    listing but stay callable: a call answers ``unavailable`` with a hint (reconnecting,
    or gone for good). With ``auto_reconnect`` the pool reconnects with backoff and the
    tools are listed again. With ``config_path`` it also follows edits of the server
    file.

    Use it as an async context manager; entering opens every server concurrently and
    returns once each has connected or failed (each within its connect timeout)::

        async with MCPPool(session, config_path="mcp.json") as pool:
            result = await session.call("mcp__time__get_current_time", {"timezone": "UTC"})

    Args:
        session: The session whose external tools the pool manages.
        servers: Server configurations by id (see :func:`~toolweave.mcp.parse_servers`).
        config_path: A server file (JSON or TOML); read at start and watched for
            changes while ``watch`` is on. Combined with ``servers`` (ids must differ).
        prefix: Client-name prefix of the pool's servers' tools, in place of the set's
            ``external_prefix`` (default: that, else ``"mcp__"``). A server's own
            ``prefix`` wins over both.
        watch: Follow edits of ``config_path``.
        reload_interval: Seconds between checks of ``config_path``.
        center: A registry center whose pushed MCP server entries the pool follows
            (:meth:`Center.push_mcp_server <toolweave.center.Center.push_mcp_server>`):
            servers pushed, changed or removed there are connected, reconnected or
            dropped within a second. Each entry is validated on its own: an invalid
            one is left out (see :attr:`center_error`) and holds up no other. Ids must
            differ from the pool's own servers'.
    """

    def __init__(
        self,
        session: Session,
        servers: Mapping[str, ServerConfig] | None = None,
        *,
        config_path: str | Path | None = None,
        prefix: str | None = None,
        watch: bool = True,
        reload_interval: float = 1.0,
        center: Center | None = None,
    ) -> None:
        self.session = session
        self.center = center
        self._center_servers: dict[str, ServerConfig] = {}
        self.config_path = Path(config_path) if config_path is not None else None
        if prefix is None:
            prefix = session.toolset.config.external_prefix
        self.prefix: str = DEFAULT_PREFIX if prefix is None else prefix
        """The prefix of the client names of the servers' tools (a server's own wins)."""
        self.watch = watch
        self.reload_interval = reload_interval
        self.version = 0
        """Bumped on every change of the pool's tools (like ``session.external_version``)."""
        self.reload_error: ConfigError | None = None
        """The problem with the server file at the last reload, if it was invalid."""
        self.center_error: ConfigError | None = None
        """The problems with the entries pushed to ``center``, as last read: each invalid
        entry is left out (a server it changed keeps its last valid entry), every other
        one is applied. ``None`` when they are all valid."""
        self._center_problems = ""
        self._code_servers: dict[str, ServerConfig] = dict(servers or {})
        self._configs: dict[str, ServerConfig] = {}
        self._connections: dict[str, ServerConnection] = {}
        self._records: dict[str, dict[str, _Registered]] = {}
        self._skipped: dict[str, dict[str, str]] = {}
        self._invalid: dict[str, dict[str, str]] = {}
        """The fingerprints of the skipped tools that are unusable as they are (their name
        or schema), by server: tried again only once their definition changes."""
        self._renamed: dict[str, dict[str, str]] = {}
        self._by_name: dict[str, RemoteToolInfo] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._stack: AsyncExitStack | None = None

    def __repr__(self) -> str:
        states = {sid: c.state.value for sid, c in self._connections.items()}
        return f"<MCPPool {states}>"

    # -- lifecycle ------------------------------------------------------------------

    async def __aenter__(self) -> MCPPool:
        if self._tg is not None:
            raise UsageError("this MCPPool is already open")
        configs = dict(self._code_servers)
        seen = None
        if self.config_path is not None:
            seen = file_signature(self.config_path)  # before reading: no edit is missed
            for sid, config in load_servers(self.config_path).items():
                if sid in configs:
                    raise UsageError(f"MCP server {sid!r} is configured both in code and in a file")
                configs[sid] = config
        stack = AsyncExitStack()
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        self._stack = stack
        try:
            started = [self._start(sid, cfg) for sid, cfg in configs.items()]
            await self._settle(started)
            if self.config_path is not None and self.watch:
                self._tg.start_soon(
                    watch_file, self.config_path, self.reload_interval, self._file_changed, seen
                )
            if self.center is not None:
                self._tg.start_soon(self._follow, self.center)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg, stack = self._tg, self._stack
        self._tg = self._stack = None
        for conn in self._connections.values():
            conn.stop()
        if tg is not None:
            tg.cancel_scope.cancel()
        try:
            if stack is not None:
                await stack.__aexit__(exc_type, exc, tb)
        finally:
            for sid in list(self._connections):
                self._drop_tools(sid)
            self._connections.clear()
            self._configs.clear()

    def _start(self, server_id: str, config: ServerConfig) -> ServerConnection | None:
        assert self._tg is not None
        self._configs[server_id] = config
        if not config.enabled:
            return None
        conn = ServerConnection(self, server_id, config)
        self._connections[server_id] = conn
        self._tg.start_soon(conn.run, name=f"mcp:{server_id}")
        return conn

    @staticmethod
    async def _settle(started: list[ServerConnection | None]) -> None:
        for conn in started:
            if conn is not None:
                await conn.settled.wait()

    async def _stop(self, server_id: str) -> None:
        conn = self._connections.pop(server_id, None)
        self._configs.pop(server_id, None)
        if conn is not None:
            conn.stop()
            await conn.finished.wait()
        self._drop_tools(server_id)

    # -- servers ----------------------------------------------------------------------

    async def add_server(self, server_id: str, config: ServerConfig) -> ServerStatus | None:
        """Connect one more server; returns once it is online or has failed once.

        Returns:
            Its status, or ``None`` when the configuration disables it.

        Raises:
            UsageError: The pool is not open, or the id is taken.
        """
        if self._tg is None:
            raise UsageError("open the MCPPool (async with) before adding servers")
        if server_id in self._configs:
            raise UsageError(f"MCP server {server_id!r} is already in the pool")
        conn = self._start(server_id, config)
        if conn is None:
            return None
        await conn.settled.wait()
        return self.status(server_id)

    async def remove_server(self, server_id: str) -> bool:
        """Disconnect a server and remove its tools; ``True`` when it was there."""
        if server_id not in self._configs:
            return False
        await self._stop(server_id)
        return True

    def reconnect(self, server_id: str) -> None:
        """Reconnect a server now (drops a live connection; skips a backoff wait).

        Raises:
            KeyError: No such server is connected.
        """
        self._connections[server_id].reconnect()

    def refresh(self, server_id: str | None = None) -> None:
        """Re-read the tool list of one server (or all) at the next opportunity."""
        for sid, conn in self._connections.items():
            if server_id is None or sid == server_id:
                conn.refresh_soon()

    async def wait_online(self, server_id: str, within: float = 10.0) -> bool:
        """Wait until a server is online; ``False`` when ``within`` seconds pass first."""
        conn = self._connections.get(server_id)
        if conn is None:
            return False
        return await conn.wait_online(within)

    async def reload(self, servers: Mapping[str, ServerConfig] | None = None) -> dict[str, str]:
        """Apply a new set of servers: add, remove, and reconnect changed ones.

        Args:
            servers: The new configuration (default: re-read ``config_path``; servers
                given in code are kept).

        Returns:
            What happened to each server id that changed (``added``, ``removed``,
            ``reconnected``).

        Raises:
            ConfigError: The server file is invalid (nothing is changed).
        """
        if self._tg is None:
            raise UsageError("open the MCPPool (async with) before reloading it")
        if servers is None:
            wanted = dict(self._code_servers)
            if self.config_path is not None:
                wanted.update(load_servers(self.config_path))
        else:
            wanted = dict(servers)
        for sid, config in self._center_servers.items():
            wanted.setdefault(sid, config)
        changes: dict[str, str] = {}
        for sid in [s for s in self._configs if s not in wanted]:
            names = [record.name for record in self._records.get(sid, {}).values()]
            await self._stop(sid)
            self._retire(sid, names)
            changes[sid] = "removed"
        started: list[ServerConnection | None] = []
        for sid, config in wanted.items():
            old = self._configs.get(sid)
            if old is not None and old == config:
                continue
            if old is not None:
                await self._stop(sid)
            changes[sid] = "added" if old is None else "reconnected"
            started.append(self._start(sid, config))
        await self._settle(started)
        if changes:
            logger.info("MCP servers reloaded: %s", changes)
        return changes

    async def _follow(self, center: Center, interval: float = 0.25) -> None:
        """Keep the servers pushed to ``center`` connected (runs until the pool closes)."""
        seen: object = None
        while True:
            snapshot = center.snapshot
            if snapshot is not seen:
                seen = snapshot
                pushed = self._read_center(center)
                if pushed != self._center_servers:
                    self._center_servers = pushed
                    try:
                        await self.reload()
                    except ConfigError as exc:
                        self.reload_error = exc
                        logger.error("MCP servers not reloaded: %s", exc)
            await anyio.sleep(interval)

    def _read_center(self, center: Center) -> dict[str, ServerConfig]:
        """The servers of the entries pushed to ``center``, each validated on its own: an
        invalid entry is left out (and reported in :attr:`center_error` and the log), so
        that it holds up no other addition, change or removal; a server it changed
        keeps its last valid entry."""
        pushed: dict[str, ServerConfig] = {}
        issues: list[ConfigIssue] = []
        for sid, entry in _pushed_entries(center).items():
            try:
                pushed.update(parse_servers({"mcpServers": {sid: entry}}, source="the center"))
            except ConfigError as exc:
                issues.extend(exc.issues)
                kept = self._center_servers.get(sid)
                if kept is not None:
                    pushed[sid] = kept
        self.center_error = ConfigError(issues) if issues else None
        problems = str(self.center_error or "")
        if problems != self._center_problems:  # said once, not at every look
            self._center_problems = problems
            if self.center_error is not None:
                logger.warning(
                    "MCP server entries pushed to the center left out (the others are applied): %s",
                    self.center_error,
                )
        return pushed

    async def _file_changed(self) -> None:
        try:
            await self.reload()
        except ConfigError as exc:
            self.reload_error = exc
            logger.error("MCP server file %s not applied: %s", self.config_path, exc)
        else:
            self.reload_error = None

    # -- listings -------------------------------------------------------------------

    def status(self, server_id: str) -> ServerStatus:
        """A snapshot of one server.

        Raises:
            KeyError: No such server is in the pool (disabled ones included).
        """
        conn = self._connections.get(server_id)
        config = self._configs[server_id]
        hidden = self.session.unlisted
        records = self._records.get(server_id, {}).values()
        tools = tuple(sorted(r.name for r in records if r.name not in hidden))
        skipped = dict(self._skipped.get(server_id, {}))
        renamed = dict(self._renamed.get(server_id, {}))
        if conn is None:
            return ServerStatus(
                server_id, ServerState.DISABLED, (), None, None, config.group, 0, 0, 0, 0
            )
        return ServerStatus(
            id=server_id,
            state=conn.state,
            tools=tools,
            error=conn.error,
            protocol_version=conn.protocol_version,
            group=config.group,
            connects=conn.connects,
            syncs=conn.syncs,
            list_changed=conn.list_changed,
            transport_errors=conn.transport_errors,
            skipped=skipped,
            renamed=renamed,
        )

    @property
    def servers(self) -> dict[str, ServerStatus]:
        """Every configured server's status, by id."""
        return {sid: self.status(sid) for sid in self._configs}

    @property
    def tools(self) -> dict[str, RemoteToolInfo]:
        """The remote tools currently in the session, by client name (an offline
        server's included: they are callable but not listed)."""
        return dict(self._by_name)

    # -- the session's external tools ---------------------------------------------------

    def _prefix_for(self, conn: ServerConnection) -> str:
        prefix = conn.config.prefix if conn.config.prefix is not None else self.prefix
        return sanitize(prefix) if prefix else ""

    def _register(
        self, conn: ServerConnection, tool: types.Tool, keep: str | None
    ) -> _Registered | None:
        """Add ``tool`` to the session: under ``keep`` (its client name before an update)
        or its configured name, both as given, else under the default name."""
        sid = conn.id
        skipped = self._skipped.setdefault(sid, {})
        if not tool.name:
            skipped[tool.name] = "invalid tool definition: the name is empty"
            self._invalid.setdefault(sid, {})[tool.name] = _fingerprint(tool)
            logger.warning("MCP server %r: a tool with an empty name skipped", sid)
            return None
        try:
            erased = remote_tool(self, conn, tool)
        except Exception as exc:
            skipped[tool.name] = f"invalid input schema: {describe(exc)}"
            self._invalid.setdefault(sid, {})[tool.name] = _fingerprint(tool)
            logger.warning("MCP server %r: tool %r skipped: %s", sid, tool.name, describe(exc))
            return None
        try:
            self.session.toolset.external_entry(erased)  # refused by the set's mode?
        except UsageError as exc:
            skipped[tool.name] = str(exc)
            return None
        prefix = self._prefix_for(conn)
        limit = MAX_NAME - len(prefix)
        default = client_name("", sid, tool.name, limit)
        given = conn.config.names.get(tool.name) or keep
        wanted = prefix + default if given is None else given
        candidates = [(given, "")] if given is not None else []
        candidates += [(default, prefix)]
        candidates += [(fit(f"{default}_{i}", limit), prefix) for i in range(2, 10)]
        reason = ""
        for base, part in candidates:
            try:
                entry = self.session.register_external(erased, name=base, prefix=part)
            except UsageError as exc:
                reason = str(exc)
                continue
            if entry.name != wanted:
                self._renamed.setdefault(sid, {})[tool.name] = entry.name
                logger.warning(
                    "MCP server %r: tool %r is listed as %r (%s)",
                    sid,
                    tool.name,
                    entry.name,
                    reason,
                )
            else:
                self._renamed.get(sid, {}).pop(tool.name, None)
            self._by_name[entry.name] = RemoteToolInfo(entry.name, sid, tool.name)
            if self.center is not None:
                self._declare(entry, conn.config)
            elif keep is not None:
                self._redeclare(entry)
            return _Registered(entry.name, _fingerprint(tool))
        skipped[tool.name] = f"no free client name ({reason})"
        return None

    def _declare(self, entry: ToolEntry, config: ServerConfig) -> None:
        """Register a remote tool in the center with its server's group and role
        whitelist (before any session judges it). A failure is logged: the tool then
        joins the center the way any external tool does."""
        from toolweave.center._center import record_of
        from toolweave.errors import CenterError

        assert self.center is not None
        record = record_of(entry, None, (config.group,) if config.group else ())
        if config.roles is not None:
            record = dataclasses.replace(record, roles=tuple(config.roles))
        try:
            self.center.register([record])
            flag = self.center.snapshot.flags.get(("tool", entry.name, "status"))
            if flag is not None and flag.get("reason") == _retired(_server_of(entry)):
                self.center.enable(entry.name, actor="mcp-pool", reason="its server is back")
        except CenterError as exc:
            logger.error("registering %s with the center failed: %s", entry.name, exc)

    def _redeclare(self, entry: ToolEntry) -> None:
        """Tell the centers the session is attached to about a remote tool whose
        definition changed (its read-only flag included, which their own check of the
        description and schema would miss), so that its pin is checked again."""
        from toolweave.center._attach import CenterHook

        for hook in self.session.hooks:
            if isinstance(hook, CenterHook) and not hook.center.store.readonly:
                hook.center._register_external(entry)

    def _retire(self, server_id: str, names: list[str]) -> None:
        """Mark the tools of a server removed from the configuration offline in the
        center (kept, with their history; enabled again if the server comes back)."""
        if self.center is None:
            return
        from toolweave.errors import CenterError

        for name in names:
            try:
                self.center.set_status(
                    name, "offline", actor="mcp-pool", reason=_retired(server_id)
                )
            except CenterError as exc:
                logger.error("marking %s offline in the center failed: %s", name, exc)

    def _unregister(self, name: str) -> None:
        self.session.unregister_external(name)
        self._by_name.pop(name, None)

    def _apply(
        self,
        conn: ServerConnection,
        tools: list[types.Tool],
        refused: dict[str, str] | None = None,
    ) -> None:
        """Make the session's tools of ``conn`` match the server's list ``tools``;
        ``refused``: the tools taken out of that list before the SDK read it (it would
        have refused the whole list), with the reasons."""
        sid = conn.id
        if self._connections.get(sid) is not conn:
            return  # a stopped connection's late answer
        records = self._records.setdefault(sid, {})
        latest: dict[str, types.Tool] = {}
        for tool in tools:
            latest.setdefault(tool.name, tool)
        changed = False
        for remote in [r for r in records if r not in latest]:
            self._unregister(records.pop(remote).name)
            changed = True
        skipped = self._skipped.setdefault(sid, {})
        refused = {r: why for r, why in (refused or {}).items() if r not in latest}
        for remote in [r for r in skipped if r not in latest and r not in refused]:
            del skipped[remote]
        for remote, why in refused.items():
            if skipped.get(remote) != why:
                logger.warning("MCP server %r: tool %r skipped: %s", sid, remote, why)
                skipped[remote] = why
        invalid = self._invalid.setdefault(sid, {})
        for remote in [r for r in invalid if r not in latest]:
            del invalid[remote]
        for remote, tool in latest.items():
            old = records.get(remote)
            current = _fingerprint(tool)
            if old is not None and old.fingerprint == current:
                continue
            if old is None and remote in skipped and invalid.get(remote) == current:
                continue  # skipped as it is, and unchanged: not tried (nor said) again
            invalid.pop(remote, None)
            keep = None
            if old is not None:
                keep = old.name
                self._unregister(records.pop(remote).name)
            skipped.pop(remote, None)
            record = self._register(conn, tool, keep)
            if record is not None:
                records[remote] = record
            changed = True
        if changed:
            self.version += 1

    def _drop_tools(self, server_id: str) -> None:
        records = self._records.pop(server_id, {})
        for record in records.values():
            self._unregister(record.name)
        self._renamed.pop(server_id, None)
        self._invalid.pop(server_id, None)
        if records:
            self.version += 1

    def _set_listed(self, server_id: str, listed: bool) -> None:
        changed = False
        for record in self._records.get(server_id, {}).values():
            changed = self.session.set_listed(record.name, listed) or changed
        if changed:
            self.version += 1

    def _server_offline(self, conn: ServerConnection) -> None:
        """Take an offline server's tools out of the listing; calls to them stay possible
        and answer ``unavailable`` with a hint until the server is back."""
        if self._connections.get(conn.id) is conn:
            self._set_listed(conn.id, False)

    def _server_online(self, conn: ServerConnection) -> None:
        """List a (re)connected server's tools again."""
        if self._connections.get(conn.id) is conn:
            self._set_listed(conn.id, True)
