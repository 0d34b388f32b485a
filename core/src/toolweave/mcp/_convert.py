"""Translations between MCP results and toolweave's outputs and errors, both directions."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolweave.errors import ErrorKind, ToolError
from toolweave.formats.mcp import hints
from toolweave.mcp._names import subject
from toolweave.results import CallResult

if TYPE_CHECKING:
    from toolweave.authoring import Capabilities

__all__ = [
    "ERROR_KIND_META",
    "annotations_for",
    "call_result_to_mcp",
    "closed_by_sdk",
    "error_from_mcp",
    "result_from_mcp",
    "scope_from",
    "sent_by_server",
    "timeout_error",
]

ERROR_KIND_META: Final = "toolweave/error_kind"
"""The ``_meta`` key of a failed result that carries the :class:`ErrorKind` (toolweave's
server sets it; toolweave's client reads it back, so kinds survive an MCP hop)."""

_KINDS: Final = frozenset(kind.value for kind in ErrorKind)


def _finite(value: Any) -> bool:
    """Whether ``value`` is valid JSON data: no NaN or infinite number anywhere in it."""
    if isinstance(value, str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return True
    for item in value:  # noqa: SIM110 - a loop: no generator object per result
        if not (isinstance(item, str) or _finite(item)):
            return False
    return True


def _not_json(name: str, remote: str, server: str) -> ToolError:
    return ToolError(
        ErrorKind.EXECUTION_ERROR,
        f"{subject(name, remote)} on MCP server {server!r} returned a number that JSON cannot "
        "hold (NaN or Infinity) in its structured output; the result was refused",
    )


def _error_from_result(
    result: types.CallToolResult, text: str, name: str, remote: str, server: str
) -> ToolError:
    """The error an ``isError`` result stands for: the kind toolweave's server put in
    ``_meta`` (its text then starts with ``"<kind>: "``), else ``execution_error``."""
    kind = (result.meta or {}).get(ERROR_KIND_META)
    if not isinstance(kind, str) or kind not in _KINDS:
        return ToolError(
            ErrorKind.EXECUTION_ERROR,
            text or f"{subject(name, remote)} failed on MCP server {server!r} without a message",
        )
    message = text.removeprefix(f"{kind}: ")
    structured = result.structured_content
    data = structured.get("data") if isinstance(structured, dict) else None
    if data is not None and not _finite(data):
        data = None
    return ToolError(
        kind, message or f"{subject(name, remote)} failed on MCP server {server!r}", data
    )


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        return f"[{block.type}: {block.mime_type}]"
    if isinstance(block, types.ResourceLink):
        return f"[resource: {block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[resource: {resource.uri}]"
    return f"[{getattr(block, 'type', 'content')}]"


def result_from_mcp(
    result: types.CallToolResult, name: str, remote: str, server: str
) -> tuple[Any, str]:
    """The ``(output, model text)`` of a remote call's result.

    ``name`` is the tool's client name, ``remote`` its name on ``server``: errors name
    the tool as the model knows it (see :func:`~toolweave.mcp._names.subject`).

    Structured content, when present, is the output; otherwise the output is the text
    (all-text results) or the content blocks as JSON (images, resources).

    Raises:
        ToolError: The result has ``isError`` set: the kind toolweave's server sent in
            ``_meta`` (see :data:`ERROR_KIND_META`), else ``execution_error``, with the
            server's text. Or ``execution_error`` when the output holds NaN or Infinity,
            which JSON cannot (the host must always get valid JSON).
    """
    content = result.content
    if len(content) == 1 and isinstance(content[0], types.TextContent):
        text = content[0].text
        only_text = True
    else:
        text = "\n".join(_block_text(b) for b in content)
        only_text = all(isinstance(b, types.TextContent) for b in content)
    if result.is_error:
        raise _error_from_result(result, text, name, remote, server)
    structured = result.structured_content
    if structured is not None:
        if not _finite(structured):
            raise _not_json(name, remote, server)
        if not text:
            text = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
        return structured, text
    if only_text:
        return text, text
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in content]
    if not _finite(blocks):
        raise _not_json(name, remote, server)
    return blocks, text


_SDK_CLOSED = "Connection closed"
"""The message of the SDK's own ``CONNECTION_CLOSED`` errors: the connection ended (or
its dispatcher stopped) while a request waited for its answer, or before it was sent.
An SDK server that shuts down answers the requests it still holds with the same error."""
_SDK_ABANDONED = (
    "SSE stream ended without a response",
    "SSE stream failed: ",
    "SSE stream ended and reconnection attempts were exhausted",
)
"""How the SDK's streamable-HTTP transport begins the ``CONNECTION_CLOSED`` errors it
makes up for a request whose answer can no longer arrive."""


def closed_by_sdk(exc: MCPError) -> bool:
    """Whether ``exc`` is the SDK's own word that the connection ended under a request
    (the request may or may not have reached the server), rather than an error the
    server answered with the same code.

    The SDK reports a closed connection with ``CONNECTION_CLOSED`` (-32000), the code
    servers commonly use for any error of their own, and gives both the same form: it
    is told by its origin, the SDK's fixed wording with no ``data`` (``Connection
    closed``; the ``SSE stream ...`` sentences of the HTTP transport), or a write that
    failed on a closed transport (the error is raised while handling that failure).
    """
    if exc.code != types.CONNECTION_CLOSED:
        return False
    if isinstance(exc.__context__, (anyio.BrokenResourceError, anyio.ClosedResourceError)):
        return True
    message = exc.message
    return exc.data is None and (message == _SDK_CLOSED or message.startswith(_SDK_ABANDONED))


def sent_by_server(exc: MCPError) -> bool:
    """Whether ``exc`` is an error the server answered (or one the transport made up for
    an answer, like an HTTP error status): anything but the SDK's own word that the
    connection closed (:func:`closed_by_sdk`) or that its read timeout ran out, which
    it raises while handling the ``TimeoutError`` of its clock (the pool sets no such
    timeout: a call's deadline is its own)."""
    if exc.code == types.REQUEST_TIMEOUT:
        return not isinstance(exc.__context__, TimeoutError)
    return not closed_by_sdk(exc)


def timeout_error(name: str, remote: str, server: str, timeout: float) -> ToolError:
    """The error of a call that did not answer within its ``timeout`` (milliseconds)."""
    return ToolError(
        ErrorKind.TIMEOUT,
        f"{subject(name, remote)} did not answer within {timeout:g} ms (MCP server "
        f"{server!r}) and was cancelled; try a smaller request",
    )


def error_from_mcp(
    exc: MCPError,
    name: str,
    remote: str,
    server: str,
    timeout: float,
    *,
    answered: bool = False,
) -> ToolError:
    """The tool error for a JSON-RPC error answer (or a transport failure) of a call.

    Args:
        exc: The SDK's error.
        name: The tool's client name (what the model called).
        remote: The tool's name on the server.
        server: The server id.
        timeout: The call's timeout in milliseconds (the server's ``timeout``).
        answered: The server sent ``exc`` (see :func:`sent_by_server`): a
            ``CONNECTION_CLOSED`` or ``REQUEST_TIMEOUT`` it sends is an
            ``execution_error`` with its message, like any error of its own; otherwise
            those codes are the SDK's (``unavailable``, ``timeout``).
    """
    code = exc.code
    if code == types.REQUEST_TIMEOUT and not answered:
        return timeout_error(name, remote, server, timeout)
    if code == types.CONNECTION_CLOSED and not answered:
        return ToolError(
            ErrorKind.UNAVAILABLE,
            f"{subject(name, remote)}: the MCP server {server!r} closed the connection during "
            "the call; it may or may not have taken effect. Check before repeating it.",
        )
    if code == types.INVALID_PARAMS:
        return ToolError(
            ErrorKind.INVALID_PARAMS,
            f"{subject(name, remote)}: the MCP server {server!r} rejected the arguments: "
            f"{exc.message}",
        )
    if code == types.METHOD_NOT_FOUND:
        return ToolError(
            ErrorKind.UNIMPLEMENTED,
            f"{name} is unusable: the MCP server {server!r} does not serve tool calls",
        )
    return ToolError(
        ErrorKind.EXECUTION_ERROR,
        f"{subject(name, remote)} failed on MCP server {server!r}: {exc.message}",
    )


def call_result_to_mcp(result: CallResult) -> types.CallToolResult:
    """The MCP answer for a toolweave call result.

    An error becomes an ``isError`` result whose text starts with its kind
    (``"permission_denied: <message>"``, what the client's model reads), whose
    structured content is :meth:`ToolError.to_dict`, and whose ``_meta`` carries the
    kind under :data:`ERROR_KIND_META` for toolweave clients.
    """
    error = result.error
    if error is not None:
        kind = error.kind.value
        shown = result.text if result.text.startswith(f"{kind}: ") else f"{kind}: {result.text}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=shown)],
            structured_content=error.to_dict(),
            is_error=True,
            _meta={ERROR_KIND_META: kind},
        )
    text = [types.TextContent(type="text", text=result.text)]
    output = result.output
    if isinstance(output, dict):
        structured: dict[str, Any] | None = output
    elif output is None or isinstance(output, str):
        structured = None
    else:
        structured = {"result": output}
    return types.CallToolResult(content=text, structured_content=structured, is_error=False)


def annotations_for(capabilities: Capabilities, read_only: bool) -> types.ToolAnnotations:
    """The MCP hints a tool's capabilities support, and no others (unset: unknown), as
    :func:`toolweave.formats.mcp.hints` chooses them.

    Args:
        capabilities: The tool's declared capabilities.
        read_only: Whether it changes nothing (as resolved from the capabilities and kind).
    """
    return types.ToolAnnotations.model_validate(hints(read_only, capabilities.scope))


def scope_from(annotations: types.ToolAnnotations | None) -> str:
    """The :attr:`Capabilities.scope` of a remote tool: ``network`` when its server says
    it reaches an open world (``openWorldHint``), else ``external`` (unknown: a closed
    world on the server's side is not the host's workspace)."""
    if annotations is not None and annotations.open_world_hint:
        return "network"
    return "external"
