"""The model runner a host provides: messages and tool definitions in, a reply out.

The pack ships no model client. A host puts an object that satisfies
:class:`ModelRunner` into the session's resources; the ``task`` tool talks to it in the
runner's own provider format (``openai``, ``openai-responses``, ``anthropic``,
``gemini``, or a strict variant such as ``openai-strict``): the tool definitions are
the session's listing in that format (:meth:`Session.definitions
<toolweave.Session.definitions>`), the messages are that provider's messages, and the
results of tool calls are appended with :func:`toolweave.formats.tool_result_messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolweave import UsageError
from toolweave.formats import PROVIDERS, ToolCall, parse_tool_calls, reply_text

__all__ = ["Message", "ModelRunner", "Reply", "definition_name", "provider_name", "user_message"]

Message = dict[str, Any]
"""One message (or input item) of a conversation, in the runner's provider format."""


@runtime_checkable
class ModelRunner(Protocol):
    """What the ``task`` tool needs from the host: one model turn at a time.

    Put one into the session's resources under this protocol as key::

        session.set_resource(MyRunner(client), ModelRunner)

    Attributes:
        provider: The format of the messages, the tool definitions and the replies:
            a provider of :mod:`toolweave.formats` (``openai``, ``openai-responses``,
            ``anthropic``, ``gemini``), or a definition format of one
            (``openai-strict``, ``openai-responses-strict``).
    """

    provider: str

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        """The model's next turn.

        Args:
            messages: The conversation so far, in the provider's format: the sub-task
                as the first user message, then each reply and its tool results. The
                runner adds its own system prompt, if any; it must not change the list.
            tools: The definitions of the tools the sub-agent may call, in the
                provider's format.

        Returns:
            The reply: final text (no tool calls) or tool calls. Cancellation
            (the caller's deadline, the parent call cancelled) arrives as the event
            loop's cancellation at the runner's current ``await``: let it propagate.
        """
        ...


@dataclass(frozen=True, slots=True)
class Reply:
    """One model turn: final text, or tool calls to run.

    Attributes:
        message: The turn as it goes back into the conversation (the provider's
            assistant message, or a list of Responses output items).
        text: The text of the turn (the sub-agent's answer when it makes no calls).
        tool_calls: The calls the model asked for, in order; empty for a final answer.
    """

    message: Any
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=())

    @property
    def final(self) -> bool:
        """``True`` when the turn makes no tool call: its text is the answer."""
        return not self.tool_calls

    @classmethod
    def from_message(cls, message: Any, provider: str) -> Reply:
        """The reply a provider returned (an SDK object or plain data), its calls parsed
        with :func:`toolweave.formats.parse_tool_calls` and its text with
        :func:`toolweave.formats.reply_text`."""
        name = provider_name(provider)
        calls = tuple(parse_tool_calls(message, name))
        return cls(message, reply_text(message, name), calls)

    @classmethod
    def answer(cls, text: str, provider: str) -> Reply:
        """A final answer ``text``, written as the provider's assistant message."""
        name = provider_name(provider)
        message: Any
        if name == "openai-responses":
            message = [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }
            ]
        elif name == "anthropic":
            message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        elif name == "gemini":
            message = {"role": "model", "parts": [{"text": text}]}
        else:
            message = {"role": "assistant", "content": text}
        return cls(message, text, ())


def provider_name(provider: str) -> str:
    """The provider whose messages ``provider`` names (``openai-strict`` is ``openai``).

    Raises:
        UsageError: No such provider; the message lists the known ones.
    """
    key = provider.strip().lower().replace("_", "-").removesuffix("-strict")
    if key not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    return key


def user_message(text: str, provider: str) -> Message:
    """The user message holding ``text`` in the provider's format (the sub-task)."""
    name = provider_name(provider)
    if name == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    return {"role": "user", "content": text}


def definition_name(definition: Mapping[str, Any]) -> str:
    """The tool name in a tool definition of any provider format."""
    function = definition.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name"))
    return str(definition.get("name"))
