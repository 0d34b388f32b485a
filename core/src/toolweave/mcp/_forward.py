"""A remote tool as an external tool of a session: the call is forwarded through the pool."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import mcp.types as types

from toolweave.catalog._erasure import ErasedTool
from toolweave.catalog._external import external_tool, unresolvable_refs
from toolweave.errors import ErrorKind, ToolError
from toolweave.mcp._connection import Failure, PendingCall, ServerState
from toolweave.mcp._convert import _finite, scope_from
from toolweave.mcp._names import namespace_for, subject

if TYPE_CHECKING:
    from toolweave.mcp._config import ServerConfig
    from toolweave.mcp._connection import ServerConnection
    from toolweave.mcp._pool import MCPPool

__all__ = ["remote_tool", "retry_budget", "retry_wait"]

RESERVE_MAX = 0.1
"""Most seconds the retries of a call leave unused at the end of its timeout, so that a
failure is answered as what it is (``unavailable`` with a hint) before the session's
deadline makes it a ``timeout``."""
RESERVE_SHARE = 0.1
"""The share of a short timeout left unused that way (10 % below one second)."""


def retry_budget(timeout: float) -> float:
    """Seconds from a call's start within which its attempts, the waits between them and
    the waits for a reconnect must end, for a call ``timeout`` in seconds."""
    return timeout - min(RESERVE_MAX, timeout * RESERVE_SHARE)


def retry_wait(config: ServerConfig, attempts: int, left: float) -> float | None:
    """The wait in seconds before retry ``attempts + 1`` of a call with ``left`` seconds of
    its budget remaining; ``None`` when it is not retried: ``retries`` are used up, or
    less than ``retry_min_remaining`` would be left after the wait (``retry_delay``,
    doubled after each retry)."""
    if attempts >= config.retries:
        return None
    wait: float = config.retry_delay / 1000 * 2.0**attempts
    if left - wait < config.retry_min_remaining / 1000:
        return None
    return wait


def _read_only(tool: types.Tool, permission: str) -> bool:
    if permission == "read_only":
        return True
    if permission == "read_write":
        return False
    annotations = tool.annotations
    return bool(annotations is not None and annotations.read_only_hint)


def _idempotent(tool: types.Tool, read_only: bool) -> bool:
    annotations = tool.annotations
    return read_only or bool(annotations is not None and annotations.idempotent_hint)


def remote_tool(pool: MCPPool, server: ServerConnection, tool: types.Tool) -> ErasedTool:
    """The erased handle of ``tool`` of ``server``: validates against the server's schema,
    then forwards the call (progress included) through the pool's live connection.

    Raises:
        jsonschema.SchemaError: The server's input schema is not a valid JSON Schema.
        ValueError: It holds a number JSON cannot carry (NaN, an infinity), which would
            make the whole listing invalid JSON, or a ``$ref`` that cannot be resolved
            within it, which would make every call fail.
    """
    import jsonschema

    schema = dict(tool.input_schema)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    if not _finite(schema):
        raise ValueError("it holds a number JSON cannot carry (NaN or an infinity)")
    dangling = unresolvable_refs(schema)
    if dangling:
        raise ValueError(f"$ref {dangling[0]!r} cannot be resolved within it")
    config = server.config
    server_id = server.id
    remote = tool.name
    read_only = _read_only(tool, config.permission)
    retry_safe = _idempotent(tool, read_only)

    def shown(ctx: Any) -> str:
        """The client name the call came under: what its errors call the tool."""
        entry = getattr(ctx, "entry", None)
        if entry is not None:
            return str(entry.name)
        record = pool._records.get(server_id, {}).get(remote)
        return remote if record is None else record.name

    def connection(name: str) -> ServerConnection:
        current = pool._connections.get(server_id)
        if current is None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"{name} is unavailable: the MCP server {server_id!r} was removed from "
                "the configuration; do not call its tools again.",
            )
        return current

    async def ready(name: str, attempts: int, deadline: float) -> ServerConnection:
        """The live connection, once it is online when it is connecting or this is a
        retry (an offline server answers at once)."""
        current = connection(name)
        if current.state is ServerState.CONNECTING or attempts:
            await current.wait_online(deadline - anyio.current_time())
        return current

    async def settle(
        current: ServerConnection, outcome: Failure, attempts: int, deadline: float
    ) -> None:
        """Raise the failure, or wait before the next attempt when it may be retried."""
        retry = outcome.transient and (outcome.sent is False or retry_safe)
        if attempts == 0 and outcome.sent is False and current.state is ServerState.OFFLINE:
            retry = False  # offline before the call: answer at once, with the hint
        wait = retry_wait(config, attempts, deadline - anyio.current_time()) if retry else None
        if wait is None:
            raise outcome.error
        await anyio.sleep(wait)

    window = retry_budget(config.timeout_s)

    async def forward(ctx: Any, arguments: dict[str, Any]) -> AsyncIterator[Any]:
        name = shown(ctx)
        deadline = anyio.current_time() + window
        attempts = 0
        while True:
            current = await ready(name, attempts, deadline)
            started = current.start_call(remote, arguments, name)
            outcome: Any = None
            if isinstance(started, PendingCall):
                try:
                    while not started.done:
                        for item in await started.next_items():
                            yield item
                    outcome = started.outcome
                finally:
                    started.cancel()
            else:
                outcome = started
            if not isinstance(outcome, Failure):
                if outcome is None:
                    raise ToolError(
                        ErrorKind.EXECUTION_ERROR,
                        f"{subject(name, remote)} on MCP server {server_id!r} ended "
                        "without a result",
                    )
                yield outcome
                return
            await settle(current, outcome, attempts, deadline)
            attempts += 1

    def budget(started: float) -> float:
        """The deadline of a call that started at ``started`` (``time.monotonic()``)."""
        return anyio.current_time() + window - (time.monotonic() - started)

    async def call(ctx: Any, arguments: dict[str, Any]) -> Any:
        # A blocking call nobody reads progress of: awaited in the caller's task. The
        # first attempt on a live connection goes straight out; the deadline is worked
        # out (from the call's start) only once there is something to wait for.
        started = time.monotonic()
        name = shown(ctx)
        deadline: float | None = None
        attempts = 0
        while True:
            current = pool._connections.get(server_id)
            if attempts or current is None or current.state is not ServerState.ONLINE:
                if deadline is None:
                    deadline = budget(started)
                current = await ready(name, attempts, deadline)
            outcome = await current.call(remote, arguments, name)
            if not isinstance(outcome, Failure):
                return outcome
            if deadline is None:
                deadline = budget(started)
            await settle(current, outcome, attempts, deadline)
            attempts += 1

    description = tool.description or (tool.title or f"{remote} (from MCP server {server_id})")
    return external_tool(
        id=remote,
        namespace=namespace_for(server_id),
        description=description,
        input_schema=schema,
        call=call,
        stream=forward,
        source=f"mcp:{server_id}",
        read_only=read_only,
        timeout=config.timeout_s,
        scope=scope_from(tool.annotations),
    )
