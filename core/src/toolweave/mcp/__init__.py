"""MCP both ways: remote servers' tools in a session, and a session served over MCP.

Needs the optional extra: ``pip install 'toolweave[mcp]'``.

Client side: :class:`MCPPool` keeps long-lived connections (stdio, streamable HTTP)
to the servers of a configuration (:func:`load_servers`) and turns their tools into
external tools of a session, named ``<prefix><server>__<tool>`` (one prefix: the
server's, else the pool's, else the tool set's ``external_prefix``, else ``mcp__``)::

    async with MCPPool(session, config_path="mcp.json"):
        result = await session.call("mcp__time__get_current_time", {"timezone": "UTC"})

Server side: :func:`serve` (what ``toolweave serve`` runs), :func:`serve_stdio`,
:func:`serve_http` and :class:`SessionServer` expose a session's tools to any MCP
client; ``python -m toolweave.mcp`` serves installed packs.
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    raise ModuleNotFoundError(
        "toolweave.mcp needs the MCP SDK, an optional extra: pip install 'toolweave[mcp]'",
        name="mcp",
    ) from exc

from toolweave.center import set_mcp_entry_check
from toolweave.mcp._config import ServerConfig, load_servers, parse_servers
from toolweave.mcp._connection import ServerState, ServerStatus
from toolweave.mcp._names import DEFAULT_PREFIX
from toolweave.mcp._pool import MCPPool, RemoteToolInfo
from toolweave.mcp._server import (
    SessionServer,
    parse_http_address,
    serve,
    serve_http,
    serve_stdio,
)


def _check_pushed_entry(server_id: str, entry: object) -> None:
    """A pushed MCP server entry, read as the pools that follow the center read it."""
    parse_servers({"mcpServers": {server_id: entry}}, source="the pushed entry")


set_mcp_entry_check(_check_pushed_entry)
"""Centers of this process refuse the entries their following pools could not read."""

__all__ = [
    "DEFAULT_PREFIX",
    "MCPPool",
    "RemoteToolInfo",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "SessionServer",
    "load_servers",
    "parse_http_address",
    "parse_servers",
    "serve",
    "serve_http",
    "serve_stdio",
]
