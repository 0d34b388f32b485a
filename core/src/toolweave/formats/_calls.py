"""The reverse direction: a provider's tool-call message in, tool-result messages out."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolweave.errors import UsageError
from toolweave.formats._schema import is_nullable, resolve_ref

if TYPE_CHECKING:
    from toolweave.results import CallResult
    from toolweave.runtime._session import Session

__all__ = [
    "PROVIDERS",
    "Provider",
    "ToolCall",
    "parse_tool_calls",
    "reply_text",
    "run_tool_calls",
    "tool_result_messages",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for, independent of the provider.

    Attributes:
        name: The client-visible tool name.
        arguments: The arguments as the provider sent them: JSON text (OpenAI) or an
            object (Anthropic, Gemini). ``Session.call`` accepts both.
        call_id: The provider's id of the call; the result must carry it back.
    """

    name: str
    arguments: Any
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Provider:
    """How one provider spells tool calls and tool results.

    Attributes:
        name: The provider's name (``openai``, ``openai-responses``, ``anthropic``, ``gemini``).
        parse: Extracts the calls from a model reply (SDK object or plain data).
        results: Renders results as the messages (or input items) to append to the
            conversation.
        text: Gathers the text of a model reply (``""`` for a provider without it).
    """

    name: str
    parse: Callable[[Any], list[ToolCall]]
    results: Callable[[list[CallResult]], list[dict[str, Any]]]
    text: Callable[[Any], str] | None = None


PROVIDERS: dict[str, Provider] = {}
"""Every known provider by name; filled by :mod:`toolweave.formats`."""


def provider(name: str) -> Provider:
    """The provider called ``name``; a definition format's name works too (``openai-strict``).

    Raises:
        UsageError: No such provider; the message lists the known ones.
    """
    key = name.strip().lower().replace("_", "-").removesuffix("-strict")
    found = PROVIDERS.get(key)
    if found is None:
        raise UsageError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}")
    return found


def get(obj: Any, key: str) -> Any:
    """``obj[key]`` for mappings, ``obj.key`` for SDK objects, ``None`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def items_of(value: Any) -> list[Any]:
    """A list from a list-like value, ``[]`` from ``None``, ``[value]`` from one item."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def first(value: Any) -> Any:
    """The first item of a list-like value (a reply's ``choices`` or ``candidates``),
    the value itself when it is a single item, ``None`` when there is none."""
    items = items_of(value)
    return items[0] if items else None


def id_of(value: Any) -> str | None:
    """A call id as the result must carry it back: the id when it is a string, an
    integer's decimal text, ``None`` for anything else (the provider takes only strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # more digits than Python converts
            return None
    return None


def parse_tool_calls(message: Any, provider_name: str = "openai") -> list[ToolCall]:
    """The tool calls in a model reply, in the order the model made them.

    Args:
        message: The reply as the provider's SDK returns it or as plain data: an
            OpenAI ``ChatCompletion`` or assistant message, a Responses ``Response`` or
            its output items, an Anthropic ``Message`` or its content blocks, a Gemini
            response or ``Content``.
        provider_name: ``openai`` (Chat Completions), ``openai-responses``,
            ``anthropic`` or ``gemini``.

    Example:
        >>> msg = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        ...        "function": {"name": "echo", "arguments": '{"text": "hi"}'}}]}
        >>> parse_tool_calls(msg, "openai")
        [ToolCall(name='echo', arguments='{"text": "hi"}', call_id='c1')]
    """
    return provider(provider_name).parse(message)


def reply_text(message: Any, provider_name: str = "openai") -> str:
    """The text of a model reply (its text parts joined; ``""`` when it has none), from
    the same SDK objects or plain data as :func:`parse_tool_calls`.

    Example:
        >>> reply_text({"role": "assistant", "content": "Done."}, "openai")
        'Done.'
    """
    text = provider(provider_name).text
    return text(message) if text is not None else ""


def tool_result_messages(
    results: Sequence[CallResult], provider_name: str = "openai"
) -> list[dict[str, Any]]:
    """The results as the messages (or input items) to append to the conversation.

    OpenAI Chat Completions gets one ``tool`` message per result, the Responses API one
    ``function_call_output`` item per result, Anthropic one ``user`` message holding a
    ``tool_result`` block per result, Gemini one ``user`` content holding a
    ``functionResponse`` part per result.
    """
    return provider(provider_name).results(list(results))


MAX_CONCURRENT_CALLS = 16
"""How many calls of one model reply :func:`run_tool_calls` runs at a time by default
(also the default of ``Session.run_tool_calls``)."""


async def run_tool_calls(
    session: Session,
    message: Any,
    provider_name: str = "openai",
    *,
    limit: int | None = MAX_CONCURRENT_CALLS,
) -> list[dict[str, Any]]:
    """Run every tool call of a model reply and return the result messages to append.

    Calls run through :meth:`Session.call_many <toolweave.Session.call_many>`
    (concurrently when every tool allows it, at most ``limit`` at a time: a reply is the
    model's to write, and 100,000 searches at once would start as many processes); a
    failed call becomes an error result for the model, never an exception. ``null``
    given for an optional argument means "not given", so replies to strict-mode
    definitions (where every argument must be sent) work as is.

    Args:
        session: The session the calls run in.
        message: The model's reply (a dict, or the provider SDK's object).
        provider_name: Its format: ``openai``, ``openai-responses``, ``anthropic``,
            ``gemini``.
        limit: At most this many calls at a time (``None``: all of them).

    Example:
        ``messages += await run_tool_calls(session, reply.choices[0].message, "openai")``
    """
    prov = provider(provider_name)
    calls = [_without_optional_nulls(session, c) for c in prov.parse(message)]
    if len(calls) == 1:
        (one,) = calls
        results = [await session.call(one.name, one.arguments, one.call_id)]
    else:
        results = await session.call_many(calls, limit=limit)
    return prov.results(results)


# -- null for "not given" ---------------------------------------------------------------


def _without_optional_nulls(session: Session, call: ToolCall) -> ToolCall:
    """``call`` without the ``null`` arguments that mean "not given"; ``call`` as it is
    when its arguments cannot be read (the session reports why)."""
    try:
        return _drop_nulls(session, call)
    except Exception:  # too deep, odd mappings, ...: Session.call says what is wrong
        return call


def _drop_nulls(session: Session, call: ToolCall) -> ToolCall:
    raw = call.arguments
    if isinstance(raw, (str, bytes, bytearray)):
        if (isinstance(raw, str) and "null" not in raw) or (
            not isinstance(raw, str) and b"null" not in raw
        ):
            return call
        try:
            data = json.loads(raw)
        except ValueError:
            return call  # the session reports invalid JSON
    elif isinstance(raw, Mapping):
        data = raw
    else:
        return call
    if not isinstance(data, dict):
        return call
    entry = session.resolve(call.name)
    if entry is None:
        return call
    schema = entry.input_schema
    return ToolCall(call.name, drop_optional_nulls(data, schema, schema), call.call_id)


def _resolved(schema: Any, root: Mapping[str, Any], data: Any = None) -> Mapping[str, Any]:
    """``schema`` with references followed and, for a union, the member ``data`` matches."""
    for _ in range(32):
        if not (isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str)):
            break
        try:
            target = resolve_ref(root, schema["$ref"])
        except KeyError:
            return {}
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    if not isinstance(schema, Mapping):
        return {}
    union = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(union, list):
        members = [_resolved(v, root) for v in union]
        members = [m for m in members if m.get("type") != "null"]
        if len(members) == 1:
            return members[0]
        if isinstance(data, Mapping):
            for member in members:
                if _matches(member, data):
                    return member
    return schema


def _matches(member: Mapping[str, Any], data: Mapping[str, Any]) -> bool:
    """Whether ``data`` fits ``member``'s properties and its constant (tag) fields."""
    props = member.get("properties")
    if not isinstance(props, Mapping) or not set(data) <= set(props):
        return False
    for key, sub in props.items():
        if isinstance(sub, Mapping) and key in data:
            if "const" in sub and data[key] != sub["const"]:
                return False
            if isinstance(sub.get("enum"), list) and data[key] not in sub["enum"]:
                return False
    return True


def drop_optional_nulls(
    data: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any]
) -> dict[str, Any]:
    """``data`` without the ``null`` values given for optional, non-nullable properties.

    Strict-mode definitions make every property required and let optional ones be
    ``null``; this turns such a ``null`` back into "not given", so the tool's default
    applies. Nested objects are handled the same way.
    """
    node = _resolved(schema, root, data)
    props = node.get("properties")
    if not isinstance(props, Mapping):
        return data
    required = set(node.get("required") or ())
    out: dict[str, Any] = {}
    for key, value in data.items():
        sub = props.get(key)
        if sub is None:
            out[key] = value
            continue
        target = _resolved(sub, root, value)
        if value is None:
            if key in required or is_nullable(sub) or is_nullable(target):
                out[key] = value
            continue
        if isinstance(value, dict):
            value = drop_optional_nulls(value, target, root)
        elif isinstance(value, list) and isinstance(target.get("items"), Mapping):
            items = target["items"]
            value = [
                drop_optional_nulls(v, items, root) if isinstance(v, dict) else v for v in value
            ]
        out[key] = value
    return out
