"""Anthropic: tools with ``input_schema``, ``tool_use`` blocks in, ``tool_result`` blocks out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolweave.formats._calls import ToolCall, get, id_of, items_of
from toolweave.formats._frozen import Prefrozen
from toolweave.formats._schema import untitled

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition
    from toolweave.results import CallResult

__all__ = ["parse_calls", "reply_text", "result_messages", "tool"]


def tool(d: ToolDefinition) -> dict[str, Any]:
    """An Anthropic Messages API tool (read-only, as listings are; the schema without
    titles)."""
    return Prefrozen(name=d.name, description=d.description, input_schema=untitled(d.input_schema))


def parse_calls(message: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a ``Message`` (or of a list of content blocks)."""
    content = get(message, "content")
    calls: list[ToolCall] = []
    for block in items_of(content if content is not None else message):
        if get(block, "type") != "tool_use":
            continue
        args = get(block, "input")
        calls.append(
            ToolCall(
                get(block, "name") or "", args if args is not None else {}, id_of(get(block, "id"))
            )
        )
    return calls


def reply_text(message: Any) -> str:
    """The text blocks of a ``Message`` (or of a list of content blocks), joined."""
    content = get(message, "content")
    if isinstance(content, str):
        return content
    return "".join(
        str(get(block, "text") or "")
        for block in items_of(content if content is not None else message)
        if get(block, "type") == "text"
    )


def result_messages(results: list[CallResult]) -> list[dict[str, Any]]:
    """One ``user`` message holding a ``tool_result`` block per result (none when empty)."""
    blocks: list[dict[str, Any]] = []
    for r in results:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": r.call_id or "",
            "content": r.model_text,
        }
        if r.error is not None:
            block["is_error"] = True
        blocks.append(block)
    return [{"role": "user", "content": blocks}] if blocks else []
