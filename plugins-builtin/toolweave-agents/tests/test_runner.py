"""Replies of every provider format, read back as final text or tool calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from toolweave import ErrorKind, Session
from toolweave_agents import Message, Reply

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
def test_an_answer_reads_back_as_final_text(provider: str) -> None:
    """``Reply.answer`` writes the provider's assistant message, and ``from_message``
    reads the same text back, with no tool calls."""
    written = Reply.answer("all done", provider)
    read = Reply.from_message(written.message, provider)
    assert read.final
    assert read.text == "all done"


def test_a_reply_with_text_and_calls_is_not_final() -> None:
    """An Anthropic reply holding text and a tool_use block keeps both."""
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
        ],
    }
    reply = Reply.from_message(message, "anthropic-strict")
    assert not reply.final
    assert reply.text == "Reading it."
    assert [(c.name, c.call_id) for c in reply.tool_calls] == [("read_file", "t1")]


class Misconfigured:
    """A runner whose provider toolweave does not know."""

    provider = "carrier-pigeon"

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        raise AssertionError("never asked")


class NotAReply:
    """A runner that answers something other than a Reply."""

    provider = "openai"

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        return {"role": "assistant", "content": "hi"}


async def test_a_misconfigured_runner_is_a_typed_error(make_session: SessionFactory) -> None:
    """An unknown provider is ``unavailable`` naming the known ones; a runner returning
    something else than a Reply is ``execution_error`` saying what it returned."""
    result = await make_session(Misconfigured()).call("task", {"prompt": "x"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "carrier-pigeon" in result.text
    assert "anthropic" in result.text
    result = await make_session(NotAReply()).call("task", {"prompt": "x"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "returned dict, not a Reply" in result.text
