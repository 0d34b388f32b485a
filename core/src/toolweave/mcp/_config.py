"""MCP server configuration: the two file forms people use, validated into one model.

Two shapes are accepted, in JSON or TOML::

    {"mcp_servers": {"files": {"type": "stdio", "command": ["python", "./server.py"],
                               "group": "mcp_file", "permission": ["admin"],
                               "auto_reconnect": true, "heartbeat_interval": 10},
                     "orders": {"type": "http", "url": "http://127.0.0.1:8002/mcp/v1",
                                "group": "mcp_order", "timeout": 5000}}}

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                    "docs": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}}}}

The first (``mcp_servers``, the ``.mcp_servers.json`` of the registry center's design)
takes every option of :class:`ServerConfig`, with that design's meanings: ``command``
may be a list (the program and its arguments), ``permission`` may be a list of roles
(the role whitelist of the server's tools in the registry center), ``group`` names the
center group of its tools, and ``heartbeat_interval`` is in **seconds** (``timeout``,
``connect_timeout`` and ``poll_interval`` stay in milliseconds). The second
(``mcpServers``, the form most desktop clients write) takes only the connection keys.
Unknown keys (top-level ones included) and bad values raise one
:class:`~toolweave.ConfigError` listing every problem, each naming the server and the
field.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolweave._secrets import MASK, strip_userinfo
from toolweave.errors import ConfigError, ConfigIssue

__all__ = [
    "DEFAULT_HEARTBEAT_MS",
    "DEFAULT_POLL_MS",
    "DEFAULT_RETRY_DELAY_MS",
    "DEFAULT_RETRY_MIN_REMAINING_MS",
    "DEFAULT_TIMEOUT_MS",
    "ServerConfig",
    "load_servers",
    "parse_servers",
]

DEFAULT_TIMEOUT_MS = 3000
"""Milliseconds a remote call may take when the server's configuration says nothing."""
DEFAULT_HEARTBEAT_MS = 10_000
"""Milliseconds between liveness checks of a connected server."""
DEFAULT_POLL_MS = 60_000
"""Milliseconds between re-reads of a server's tool list (besides list_changed)."""
DEFAULT_RETRY_DELAY_MS = 50
"""Milliseconds before the first retry of a call after a transient failure."""
DEFAULT_RETRY_MIN_REMAINING_MS = 100
"""Milliseconds of a call's timeout that must remain for a retry to be made."""

MAX_TIMEOUT_MS = 3_600_000
"""Longest ``timeout`` (and ``retry_min_remaining``): one hour."""
MAX_CONNECT_TIMEOUT_MS = 600_000
"""Longest ``connect_timeout``: ten minutes."""
MAX_HEARTBEAT_MS = 3_600_000
"""Longest ``heartbeat_interval``: one hour."""
MAX_POLL_MS = 86_400_000
"""Longest ``poll_interval``: one day."""

_COMMON_FORM_KEYS = frozenset({"type", "command", "args", "env", "cwd", "url", "headers"})
_FILE_TYPES = "`stdio` or `http` (streamable HTTP)"
"""The transports a file may name (``memory`` servers exist only in code)."""


class _FieldProblem(ValueError):
    """A problem of the whole entry that one field stands for (reported at that field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


_TYPE_ALIASES = {"streamable-http": "http", "streamable_http": "http", "streamableHttp": "http"}


class ServerConfig(BaseModel):
    """How to reach one MCP server and how its tools join a session.

    Durations are in milliseconds.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True, allow_inf_nan=False
    )

    type: Literal["stdio", "http", "memory"] = "stdio"
    """Transport: ``stdio`` (spawn ``command``), ``http`` (streamable HTTP at ``url``) or
    ``memory`` (an in-process server object; only from code, see :meth:`in_process`)."""
    command: str | None = None
    """Executable to spawn (stdio)."""
    args: list[str] = Field(default_factory=list)
    """Arguments of ``command`` (stdio)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the server process (stdio); the process gets only
    a minimal environment (PATH, HOME, USER, ...) plus these."""
    cwd: str | None = None
    """Working directory of the server process (stdio)."""
    url: str | None = None
    """Endpoint of a streamable-HTTP server (``http``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request (``http``), e.g. an authorization header."""
    group: str | None = None
    """The registry center group of the server's tools (for listings, role and group
    filters, and operators' enable/disable)."""
    permission: Literal["auto", "read_only", "read_write"] = "auto"
    """Whether the server's tools change things: ``read_only`` or ``read_write`` for all
    of them, ``auto`` to trust each tool's ``readOnlyHint`` annotation."""
    roles: tuple[str, ...] | None = None
    """The roles that may list and call the server's tools, in a registry center (a file
    in the ``mcp_servers`` form writes them as ``permission: [...]``); ``None``: every
    role."""
    auto_reconnect: bool = True
    """Reconnect with exponential backoff after the server fails or stops answering."""
    heartbeat_interval: float = Field(DEFAULT_HEARTBEAT_MS, gt=0, le=MAX_HEARTBEAT_MS)
    """Milliseconds between liveness checks (a ping, or a cheap request where the
    protocol has no ping)."""
    poll_interval: float = Field(DEFAULT_POLL_MS, gt=0, le=MAX_POLL_MS)
    """Milliseconds between periodic re-reads of the tool list."""
    timeout: float = Field(DEFAULT_TIMEOUT_MS, gt=0, le=MAX_TIMEOUT_MS)
    """Milliseconds a call (and a heartbeat) may take before it fails with ``timeout``."""
    connect_timeout: float = Field(10_000, gt=0, le=MAX_CONNECT_TIMEOUT_MS)
    """Milliseconds allowed to start the server and complete the handshake."""
    retries: int = Field(2, ge=0, le=10)
    """How many times a call is retried after a transient failure (the server was
    reconnecting, or the connection dropped under an idempotent or read-only tool).
    Every retry fits in the call's ``timeout`` (see ``retry_delay`` and
    ``retry_min_remaining``)."""
    retry_delay: float = Field(DEFAULT_RETRY_DELAY_MS, ge=0, le=10_000)
    """Milliseconds to wait before the first retry; doubled for each further one."""
    retry_min_remaining: float = Field(DEFAULT_RETRY_MIN_REMAINING_MS, ge=0, le=MAX_TIMEOUT_MS)
    """A retry is made only when at least this many milliseconds of the call's
    ``timeout`` remain after its wait; otherwise the failure is answered at once."""
    prefix: str | None = None
    """Client-name prefix for this server's tools (``<prefix><server>__<tool>``), in place
    of the pool's (default: the pool's, which defaults to the tool set's
    ``external_prefix``, else ``mcp__``)."""
    names: dict[str, str] = Field(default_factory=dict)
    """Client names for individual remote tools (remote name → client name), used as
    given: no prefix is put before them."""
    mode: Literal["auto", "legacy", "2026-07-28"] = "auto"
    """Protocol era: ``auto`` negotiates (2026-07-28, else the 2025 handshake);
    ``legacy`` forces the handshake; ``2026-07-28`` skips negotiation."""
    enabled: bool = True
    """``False`` keeps the entry in the file but never connects."""
    server: Any = Field(default=None, exclude=True)
    """The in-process server object of a ``memory`` server (an ``mcp`` ``Server`` or
    ``MCPServer``)."""

    @model_validator(mode="after")
    def _check_transport(self) -> ServerConfig:
        if self.type == "stdio":
            if not self.command:
                raise _FieldProblem("command", "a stdio server needs `command`")
            if self.url is not None or self.headers:
                field = "url" if self.url is not None else "headers"
                raise _FieldProblem(
                    field, "`url` and `headers` belong to http servers, not stdio ones"
                )
        elif self.type == "http":
            if not self.url:
                raise _FieldProblem("url", "an http server needs `url`")
            if not self.url.startswith(("http://", "https://")):
                raise _FieldProblem(
                    "url",
                    f"`url` must start with http:// or https://, got {strip_userinfo(self.url)!r}",
                )
            stdio = {"command": self.command, "args": self.args, "env": self.env, "cwd": self.cwd}
            given = [name for name, value in stdio.items() if value]
            if given:
                raise _FieldProblem(
                    given[0], "`command`, `args`, `env` and `cwd` belong to stdio servers"
                )
        elif self.server is None:
            raise ValueError("a memory server is created in code with ServerConfig.in_process()")
        return self

    @classmethod
    def in_process(cls, server: Any, **options: Any) -> ServerConfig:
        """A configuration for a server object living in this process (tests, benchmarks).

        Args:
            server: An ``mcp.server.Server`` or ``mcp.server.mcpserver.MCPServer``.
            **options: Any other field (``timeout``, ``mode``, ...).
        """
        return cls(type="memory", server=server, **options)

    @property
    def timeout_s(self) -> float:
        """:attr:`timeout` in seconds."""
        return self.timeout / 1000

    def secrets(self) -> tuple[str, ...]:
        """What :func:`redact` hides in texts about this server: every ``env`` and
        ``headers`` value (and the part after a scheme word, like a bearer token), and
        the userinfo of ``url``; longest first."""
        found: set[str] = set()
        for value in (*self.env.values(), *self.headers.values()):
            found.add(value)
            parts = value.split(None, 1)
            if len(parts) == 2:
                found.add(parts[1])
        if self.url is not None:
            found.update(_userinfo(self.url))
        return tuple(sorted((v for v in found if len(v) >= MIN_SECRET), key=len, reverse=True))


MIN_SECRET = 4
"""Shortest configured value :func:`redact` hides (``DEBUG=1`` would otherwise blank out
every ``1`` of a message)."""


def _userinfo(url: str) -> list[str]:
    """The userinfo of ``url`` and its parts (``user:password``, ``password``, ``user``)."""
    from urllib.parse import urlsplit

    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return []
    if "@" not in netloc:
        return []
    info = netloc.rsplit("@", 1)[0]
    user, _, password = info.partition(":")
    return [part for part in (info, password, user) if part]


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` (longest first) replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


_SECRET_FIELDS = frozenset({"env", "headers"})
"""Fields whose values are never repeated in messages (they hold keys and tokens)."""


def _issue(server_id: str, root: str, field: str, message: str, actual: Any = None) -> ConfigIssue:
    path = f"{root}.{server_id}" + (f".{field}" if field else "")
    top = field.split(".", 1)[0]
    if top in _SECRET_FIELDS:
        actual = None
    elif top == "url" and isinstance(actual, str):
        actual = strip_userinfo(actual)
    elif _long_int(actual):
        actual = f"an integer of {_digits(actual)} digits"
    return ConfigIssue(
        tool_id=f"mcp:{server_id}",
        message=message,
        path=path,
        actual=actual,
        tag="mcp_server",
    )


def _prepare(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Spell the transport the model's way: aliases resolved, ``http`` inferred from ``url``."""
    data = dict(raw)
    kind = data.get("type")
    if isinstance(kind, str):
        data["type"] = _TYPE_ALIASES.get(kind, kind)
    elif "type" not in data and "url" in data and "command" not in data:
        data["type"] = "http"
    return data


MIN_HEARTBEAT_S = 0.1
MAX_HEARTBEAT_S = 3600.0

_DURATIONS: dict[str, str] = {
    "heartbeat_interval": f"{MAX_HEARTBEAT_S:g} s",  # only a file's `mcp_servers` form has it
    "poll_interval": f"{MAX_POLL_MS} ms",
    "timeout": f"{MAX_TIMEOUT_MS} ms",
    "connect_timeout": f"{MAX_CONNECT_TIMEOUT_MS} ms",
    "retry_delay": "10000 ms",
    "retry_min_remaining": f"{MAX_TIMEOUT_MS} ms",
}
"""The fields held as floats, with their upper bound (for messages)."""


def _long_int(value: Any) -> bool:
    """Whether ``value`` is an integer too long to show (or to hold as a float)."""
    return isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64


def _digits(value: int) -> int:
    """The number of decimal digits of ``value`` (about, past 4000 digits: Python refuses
    to write out an integer of more than 4300 digits)."""
    value = abs(value)
    if value.bit_length() < 13_000:
        return len(str(value))
    return int(value.bit_length() * 0.30103) + 1


def _huge_numbers(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The fields held as floats whose value is an integer too large for a float (JSON
    and TOML read ``1`` followed by 400 zeros as such an integer), as (field, message):
    checked before anything converts them, which would raise ``OverflowError``."""
    problems: list[tuple[str, str]] = []
    for field, bound in _DURATIONS.items():
        value = data.get(field)
        if not isinstance(value, int) or not _long_int(value):
            continue
        try:
            float(value)
        except OverflowError:
            problems.append(
                (
                    field,
                    f"`{field}` is too large (a number of {_digits(value)} digits; "
                    f"at most {bound})",
                )
            )
    return problems


def _design_form(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Read an ``mcp_servers`` entry with the center design's meanings, in place (see the
    module docs); the problems found, as (field, message)."""
    problems: list[tuple[str, str]] = []
    command = data.get("command")
    if isinstance(command, list):
        if not command or not all(isinstance(part, str) and part for part in command):
            problems.append(("command", "`command` as a list holds the program and its arguments"))
        else:
            data["command"] = command[0]
            extra = data.get("args") or []
            data["args"] = [*command[1:], *(extra if isinstance(extra, list) else [extra])]
    permission = data.get("permission")
    if isinstance(permission, list):
        if not all(isinstance(role, str) and role.strip() for role in permission):
            problems.append(("permission", "`permission` as a list holds role names"))
        else:
            data["roles"] = tuple(permission)
            del data["permission"]
    heartbeat = data.get("heartbeat_interval")
    if heartbeat is not None:
        if isinstance(heartbeat, bool) or not isinstance(heartbeat, int | float):
            problems.append(("heartbeat_interval", "`heartbeat_interval` is a number of seconds"))
        elif not MIN_HEARTBEAT_S <= heartbeat <= MAX_HEARTBEAT_S:
            problems.append(
                (
                    "heartbeat_interval",
                    f"`heartbeat_interval` is in seconds in this form, between "
                    f"{MIN_HEARTBEAT_S:g} and {MAX_HEARTBEAT_S:g} (got {heartbeat:g})",
                )
            )
        else:
            data["heartbeat_interval"] = heartbeat * 1000
    return problems


def parse_servers(data: Any, *, source: str = "configuration") -> dict[str, ServerConfig]:
    """Validate server definitions in either form (see the module docs).

    Args:
        data: The parsed file: a mapping with ``mcp_servers`` or ``mcpServers``.
        source: Where the data came from, for messages.

    Returns:
        The servers by id, in file order (disabled ones included).

    Raises:
        ConfigError: Every problem found, each naming the server and the field.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(
            [ConfigIssue("", f"{source} must be a mapping", tag="mcp_server", actual=data)]
        )
    roots = [k for k in ("mcp_servers", "mcpServers") if k in data]
    unknown_roots = sorted(str(k) for k in data if k not in ("mcp_servers", "mcpServers"))
    if roots and unknown_roots:
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    f"{source}: unknown top-level key `{key}` (a server file holds "
                    "`mcp_servers` or `mcpServers`)",
                    path=key,
                    tag="mcp_server",
                )
                for key in unknown_roots
            ]
        )
    if not roots:
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    f"{source} has neither `mcp_servers` nor `mcpServers`",
                    expected=["mcp_servers", "mcpServers"],
                    actual=sorted(str(k) for k in data),
                    tag="mcp_server",
                )
            ]
        )
    issues: list[ConfigIssue] = []
    servers: dict[str, ServerConfig] = {}
    for root in roots:
        block = data[root]
        if not isinstance(block, Mapping):
            issues.append(
                ConfigIssue(
                    "", f"`{root}` must map server ids to settings", path=root, actual=block
                )
            )
            continue
        for server_id, raw in block.items():
            if not isinstance(server_id, str) or not server_id.strip():
                issues.append(
                    _issue(str(server_id), root, "", "server id must be a non-empty name")
                )
                continue
            if server_id in servers:
                issues.append(_issue(server_id, root, "", "server is defined twice"))
                continue
            if not isinstance(raw, Mapping):
                issues.append(_issue(server_id, root, "", "settings must be a mapping", actual=raw))
                continue
            if root == "mcpServers":
                unknown = sorted(set(raw) - _COMMON_FORM_KEYS)
                for key in unknown:
                    issues.append(
                        _issue(
                            server_id,
                            root,
                            key,
                            f"unknown key `{key}` (this form takes "
                            f"{', '.join(sorted(_COMMON_FORM_KEYS))}; use `mcp_servers` for more)",
                        )
                    )
                if unknown:
                    continue
            prepared = _prepare(raw)
            huge = _huge_numbers(prepared)
            for field, message in huge:
                issues.append(_issue(server_id, root, field, message))
            if huge:
                continue
            if root == "mcp_servers":
                problems = _design_form(prepared)
                for field, message in problems:
                    issues.append(_issue(server_id, root, field, message, actual=raw.get(field)))
                if problems:
                    continue
            if prepared.get("type") == "memory":
                issues.append(
                    _issue(
                        server_id,
                        root,
                        "type",
                        "`memory` servers can only be created in code",
                        actual="memory",
                    )
                )
                continue
            if prepared.get("type") == "sse":
                issues.append(
                    _issue(
                        server_id,
                        root,
                        "type",
                        "the SSE transport is not supported; use `http` (streamable HTTP)",
                        actual="sse",
                    )
                )
                continue
            if "server" in prepared:
                issues.append(_issue(server_id, root, "server", "unknown key `server`"))
                continue
            try:
                servers[server_id] = ServerConfig.model_validate(prepared)
            except ValidationError as exc:
                for err in exc.errors(include_url=False):
                    loc = ".".join(str(p) for p in err.get("loc", ()))
                    kind = err.get("type", "")
                    actual = err.get("input") if kind != "extra_forbidden" else None
                    cause = (err.get("ctx") or {}).get("error")
                    if kind == "extra_forbidden":
                        message = f"unknown key `{loc}`"
                    elif loc == "type" and kind == "literal_error":
                        message = f"`type` must be {_FILE_TYPES}"
                    else:
                        message = str(err.get("msg", "invalid value"))
                        message = message.removeprefix("Value error, ")
                    if not loc and isinstance(cause, _FieldProblem):
                        loc = cause.field
                        actual = prepared.get(loc)
                    issues.append(_issue(server_id, root, loc, message, actual=actual))
    if issues:
        raise ConfigError(issues)
    return servers


def load_servers(path: str | Path) -> dict[str, ServerConfig]:
    """Read and validate a server file (``.json``, or ``.toml``).

    Raises:
        ConfigError: The file cannot be read or parsed, or its servers are invalid.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            [ConfigIssue("", f"cannot read {file}: {exc.strerror or exc}", tag="mcp_server")]
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    f"{file} is not UTF-8 text (byte {exc.start} cannot be decoded)",
                    tag="mcp_server",
                )
            ]
        ) from exc
    kind = "TOML" if file.suffix == ".toml" else "JSON"
    try:
        data: Any = tomllib.loads(text) if file.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            [ConfigIssue("", f"{file} is not valid {kind}: {exc}", tag="mcp_server")]
        ) from exc
    except RecursionError as exc:
        raise ConfigError(
            [ConfigIssue("", f"{file} nests too deeply to be read as {kind}", tag="mcp_server")]
        ) from exc
    try:
        return parse_servers(data, source=str(file))
    except RecursionError as exc:
        raise ConfigError(
            [ConfigIssue("", f"{file} nests too deeply to be checked", tag="mcp_server")]
        ) from exc
