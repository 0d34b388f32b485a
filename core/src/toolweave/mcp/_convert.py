"""Translations between MCP results and toolweave's outputs and errors, both directions."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolweave.errors import ErrorKind, ToolError
from toolweave.results import CallResult

__all__ = ["call_result_to_mcp", "error_from_mcp", "result_from_mcp"]


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


def result_from_mcp(result: types.CallToolResult, tool: str, server: str) -> tuple[Any, str]:
    """The ``(output, model text)`` of a remote call's result.

    Structured content, when present, is the output; otherwise the output is the text
    (all-text results) or the content blocks as JSON (images, resources).

    Raises:
        ToolError: ``execution_error`` with the server's text when the result has
            ``isError`` set.
    """
    content = result.content
    if len(content) == 1 and isinstance(content[0], types.TextContent):
        text = content[0].text
        only_text = True
    else:
        text = "\n".join(_block_text(b) for b in content)
        only_text = all(isinstance(b, types.TextContent) for b in content)
    if result.is_error:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            text or f"{tool} failed on MCP server {server!r} without a message",
        )
    structured = result.structured_content
    if structured is not None:
        if not text:
            text = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
        return structured, text
    if only_text:
        return text, text
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in content]
    return blocks, text


def error_from_mcp(exc: MCPError, tool: str, server: str, timeout: float) -> ToolError:
    """The tool error for a JSON-RPC error answer (or a transport failure) of a call."""
    code = exc.code
    if code == types.REQUEST_TIMEOUT:
        return ToolError(
            ErrorKind.TIMEOUT,
            f"{tool} did not answer within {timeout:g} s (MCP server {server!r}) and was "
            "cancelled; try a smaller request",
        )
    if code == types.CONNECTION_CLOSED:
        return ToolError(
            ErrorKind.UNAVAILABLE,
            f"the MCP server {server!r} closed the connection during {tool}; the call may or "
            "may not have taken effect. Check before repeating it.",
        )
    if code == types.INVALID_PARAMS:
        return ToolError(ErrorKind.INVALID_PARAMS, f"{tool} rejected the arguments: {exc.message}")
    if code == types.METHOD_NOT_FOUND:
        return ToolError(
            ErrorKind.UNIMPLEMENTED, f"the MCP server {server!r} does not serve tool calls"
        )
    return ToolError(
        ErrorKind.EXECUTION_ERROR, f"{tool} failed on MCP server {server!r}: {exc.message}"
    )


def call_result_to_mcp(result: CallResult) -> types.CallToolResult:
    """The MCP answer for a toolweave call result (errors become ``isError`` results)."""
    text = [types.TextContent(type="text", text=result.text)]
    if result.error is not None:
        return types.CallToolResult(
            content=text, structured_content=result.error.to_dict(), is_error=True
        )
    output = result.output
    if isinstance(output, dict):
        structured: dict[str, Any] | None = output
    elif output is None or isinstance(output, str):
        structured = None
    else:
        structured = {"result": output}
    return types.CallToolResult(content=text, structured_content=structured, is_error=False)
