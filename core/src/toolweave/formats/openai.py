"""OpenAI: Chat Completions and Responses API tools (plain and strict), calls and results.

Definitions:

- ``openai``: Chat Completions ``{"type": "function", "function": {...}}``.
- ``openai-strict``: the same with ``strict: true`` and the schema rewritten by
  :func:`~toolweave.formats.to_strict_schema`.
- ``openai-responses`` / ``openai-responses-strict``: the Responses API's flat
  ``{"type": "function", "name": ..., "parameters": ..., "strict": ...}``.

The reverse: :func:`parse_chat_calls` / :func:`chat_result_messages` for Chat
Completions, :func:`parse_responses_calls` / :func:`responses_result_items` for the
Responses API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolweave.formats._calls import ToolCall, first, get, id_of, items_of
from toolweave.formats._frozen import Prefrozen
from toolweave.formats._schema import untitled
from toolweave.formats._strict import to_strict_schema

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition
    from toolweave.results import CallResult

__all__ = [
    "chat",
    "chat_result_messages",
    "chat_strict",
    "chat_text",
    "parse_chat_calls",
    "parse_responses_calls",
    "responses",
    "responses_result_items",
    "responses_strict",
    "responses_text",
]


def chat(d: ToolDefinition) -> dict[str, Any]:
    """A Chat Completions function tool (read-only, as listings are; the schema
    without titles)."""
    return Prefrozen(
        type="function",
        function=Prefrozen(
            name=d.name, description=d.description, parameters=untitled(d.input_schema)
        ),
    )


def chat_strict(d: ToolDefinition) -> dict[str, Any]:
    """A Chat Completions function tool in strict mode.

    Raises:
        UnsupportedSchemaError: The schema cannot be made strict.
    """
    schema = to_strict_schema(d.input_schema, tool=d.name, format="openai-strict")
    return {
        "type": "function",
        "function": {
            "name": d.name,
            "description": d.description,
            "parameters": schema,
            "strict": True,
        },
    }


def responses(d: ToolDefinition) -> dict[str, Any]:
    """A Responses API function tool (read-only, as listings are; the schema without
    titles)."""
    return Prefrozen(
        type="function",
        name=d.name,
        description=d.description,
        parameters=untitled(d.input_schema),
        strict=False,
    )


def responses_strict(d: ToolDefinition) -> dict[str, Any]:
    """A Responses API function tool in strict mode.

    Raises:
        UnsupportedSchemaError: The schema cannot be made strict.
    """
    schema = to_strict_schema(d.input_schema, tool=d.name, format="openai-responses-strict")
    return {
        "type": "function",
        "name": d.name,
        "description": d.description,
        "parameters": schema,
        "strict": True,
    }


# -- Chat Completions: calls in, tool messages out -------------------------------------


def parse_chat_calls(message: Any) -> list[ToolCall]:
    """The function calls of an assistant message (or of a ``ChatCompletion``'s first choice).

    Tool calls of other types (custom tools) are left to the host.
    """
    choices = get(message, "choices")
    if choices:
        message = get(first(choices), "message")
    calls: list[ToolCall] = []
    for call in items_of(get(message, "tool_calls")):
        if (get(call, "type") or "function") != "function":
            continue
        fn = get(call, "function")
        args = get(fn, "arguments")
        calls.append(
            ToolCall(
                get(fn, "name") or "",
                args if args not in (None, "") else "{}",
                id_of(get(call, "id")),
            )
        )
    return calls


def chat_text(message: Any) -> str:
    """The text of an assistant message (or of a ``ChatCompletion``'s first choice)."""
    choices = get(message, "choices")
    if choices:
        message = get(first(choices), "message")
    content = get(message, "content")
    if isinstance(content, str):
        return content
    return "".join(str(get(part, "text") or "") for part in items_of(content))


def chat_result_messages(results: list[CallResult]) -> list[dict[str, Any]]:
    """One ``{"role": "tool", "tool_call_id": ..., "content": ...}`` message per result."""
    return [
        {"role": "tool", "tool_call_id": r.call_id or "", "content": r.model_text} for r in results
    ]


# -- Responses API: function_call items in, function_call_output items out -------------


def parse_responses_calls(response: Any) -> list[ToolCall]:
    """The ``function_call`` items of a ``Response`` (or of a list of output items)."""
    output = get(response, "output")
    calls: list[ToolCall] = []
    for item in items_of(output if output is not None else response):
        if get(item, "type") != "function_call":
            continue
        args = get(item, "arguments")
        calls.append(
            ToolCall(
                get(item, "name") or "",
                args if args not in (None, "") else "{}",
                id_of(get(item, "call_id")),
            )
        )
    return calls


def responses_text(response: Any) -> str:
    """The text of the ``message`` items of a ``Response`` (or of a list of output items)."""
    output = get(response, "output")
    return "".join(
        str(get(part, "text") or "")
        for item in items_of(output if output is not None else response)
        if get(item, "type") == "message"
        for part in items_of(get(item, "content"))
    )


def responses_result_items(results: list[CallResult]) -> list[dict[str, Any]]:
    """One ``function_call_output`` input item per result."""
    return [
        {"type": "function_call_output", "call_id": r.call_id or "", "output": r.model_text}
        for r in results
    ]
