"""Tool definitions in the formats model providers expect, and the way back.

Each format is a function from a neutral :class:`~toolweave.ToolDefinition` to the
provider's JSON; :func:`render` applies one to a whole listing and
``ToolSet.definitions(format)`` caches the result.

| format | what it is |
|---|---|
| ``neutral`` | ``{"name", "description", "input_schema"}`` as the tool declares it |
| ``openai`` | Chat Completions function tools |
| ``openai-strict`` | the same in strict mode (schemas rewritten, ``strict: true``) |
| ``openai-responses`` | Responses API function tools |
| ``openai-responses-strict`` | the same in strict mode |
| ``anthropic`` | Messages API tools (``input_schema``) |
| ``gemini`` | function declarations in Gemini's OpenAPI subset |
| ``mcp`` | MCP ``Tool`` objects (``inputSchema``) |

Underscores work in place of hyphens (``openai_strict``). Every format but ``neutral``
leaves out the schema's ``title`` keywords (pydantic's ``"title": "Limit"`` for a field
``limit``): no provider needs them, and the model would read them on every turn.

The way back, for a host's loop: :func:`parse_tool_calls` reads the tool calls of a
model reply, :func:`tool_result_messages` writes results as the messages to append,
and :func:`run_tool_calls` does both around a session::

    messages += await run_tool_calls(session, reply.choices[0].message, "openai")
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolweave.errors import UsageError
from toolweave.formats import anthropic, gemini, mcp, openai
from toolweave.formats._calls import (
    MAX_CONCURRENT_CALLS,
    PROVIDERS,
    Provider,
    ToolCall,
    drop_optional_nulls,
    parse_tool_calls,
    reply_text,
    run_tool_calls,
    tool_result_messages,
)
from toolweave.formats._frozen import FrozenDict, FrozenList, freeze
from toolweave.formats._schema import UnsupportedSchemaError
from toolweave.formats._strict import to_strict_schema
from toolweave.formats.gemini import gemini_schema

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition

__all__ = [
    "FORMATS",
    "MAX_CONCURRENT_CALLS",
    "PROVIDERS",
    "FrozenDict",
    "FrozenList",
    "Provider",
    "ToolCall",
    "UnsupportedSchemaError",
    "drop_optional_nulls",
    "encode",
    "gemini_schema",
    "parse_tool_calls",
    "register_format",
    "register_provider",
    "render",
    "reply_text",
    "run_tool_calls",
    "to_strict_schema",
    "tool_result_messages",
]

Formatter = Callable[["ToolDefinition"], dict[str, Any]]


def _neutral(d: ToolDefinition) -> dict[str, Any]:
    return d.to_dict()


FORMATS: dict[str, Formatter] = {
    "neutral": _neutral,
    "openai": openai.chat,
    "openai-strict": openai.chat_strict,
    "openai-responses": openai.responses,
    "openai-responses-strict": openai.responses_strict,
    "anthropic": anthropic.tool,
    "gemini": gemini.declaration,
    "mcp": mcp.tool,
}
"""Every known format by name; :func:`register_format` adds more."""


_READ_ONLY: set[Formatter] = {openai.chat, openai.responses, anthropic.tool, mcp.tool}
"""Formatters whose output is read-only already (frozen all the way down)."""


def register_format(name: str, formatter: Formatter) -> None:
    """Make ``formatter`` available as ``definitions(name)``."""
    FORMATS[name] = formatter


def register_provider(provider: Provider) -> None:
    """Make a provider's tool calls, results and reply text known to
    :func:`parse_tool_calls`, :func:`tool_result_messages` and :func:`reply_text`."""
    PROVIDERS[provider.name] = provider


register_provider(
    Provider("openai", openai.parse_chat_calls, openai.chat_result_messages, openai.chat_text)
)
register_provider(
    Provider(
        "openai-responses",
        openai.parse_responses_calls,
        openai.responses_result_items,
        openai.responses_text,
    )
)
register_provider(
    Provider("anthropic", anthropic.parse_calls, anthropic.result_messages, anthropic.reply_text)
)
register_provider(Provider("gemini", gemini.parse_calls, gemini.result_messages, gemini.reply_text))


def render(definitions: Sequence[ToolDefinition], format: str) -> list[dict[str, Any]]:
    """Render ``definitions`` in ``format``.

    Every dict and list of the result is read-only (:mod:`toolweave.formats._frozen`):
    listings are cached and shared, so a host edits a ``copy.deepcopy`` of one.

    Raises:
        UsageError: The format is unknown; the message lists the known ones.
        UnsupportedSchemaError: A tool's schema cannot be expressed in ``format``
            (the error names the tool).
    """
    formatter = FORMATS.get(format) or FORMATS.get(format.replace("_", "-"))
    if formatter is None:
        raise UsageError(f"unknown definition format {format!r}; known: {', '.join(FORMATS)}")
    if formatter in _READ_ONLY:
        return [formatter(d) for d in definitions]
    return [freeze(formatter(d)) for d in definitions]


def encode(definitions: Sequence[Any]) -> bytes:
    """``definitions`` as the bytes of a request body's ``tools``: compact JSON
    (``separators=(",", ":")``), UTF-8. Text that UTF-8 cannot carry (a lone
    surrogate) is written as a ``\\u`` escape instead, so the bytes are always valid.

    ``ToolSet.definitions_json(format)`` caches them per format.
    """
    try:
        return json.dumps(definitions, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(definitions, separators=(",", ":")).encode()
