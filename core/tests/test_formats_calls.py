"""The way back: provider tool-call messages into calls, results into provider messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, TypeAdapter
from toolweave import (
    CallResult,
    ErrorKind,
    Kind,
    Session,
    ToolError,
    ToolSetBuilder,
    UsageError,
    tool,
)
from toolweave.formats import (
    ToolCall,
    parse_tool_calls,
    reply_text,
    run_tool_calls,
    tool_result_messages,
)

pytest.importorskip("openai", reason="the openai SDK is not installed")
pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
pytest.importorskip("google.genai", reason="google-genai is not installed")

from anthropic.types import Message, MessageParam
from google.genai import types as genai
from openai.types.chat import ChatCompletion, ChatCompletionToolMessageParam
from openai.types.responses import Response, ResponseInputItemParam


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Options(BaseModel):
    upper: bool = False


@tool(kind=Kind.OTHER, blocking=False)
def echo(text: str, times: int = 1, options: Options | None = None, sep: str = " ") -> str:
    """Repeat the text. Not for anything else.

    Args:
        text: What to repeat.
        times: How often.
        options: Formatting options.
        sep: Between repetitions.
    """
    out = sep.join([text] * times)
    return out.upper() if options is not None and options.upper else out


class Nested(BaseModel):
    upper: bool = False
    suffix: str = Field("", description="Appended")


@tool(blocking=False)
def shout(text: str, how: Nested) -> str:
    """Shout.

    Args:
        text: What.
        how: How.
    """
    return (text.upper() if how.upper else text) + how.suffix


@tool(blocking=False)
def fail() -> str:
    """Always fail with not_found."""
    raise ToolError(ErrorKind.NOT_FOUND, "nothing here")


@pytest.fixture
def session(tmp_path: Path) -> Session:
    builder = ToolSetBuilder()
    builder.add_all([echo, shout, fail])
    return builder.build().session(workspace=tmp_path)


def chat_completion(*calls: tuple[str, str, str]) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "cc1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                            for cid, n, a in calls
                        ],
                    },
                }
            ],
        }
    )


def responses_reply(*calls: tuple[str, str, str]) -> Response:
    return Response.model_validate(
        {
            "id": "r1",
            "created_at": 0,
            "model": "gpt",
            "object": "response",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "message",
                    "id": "m1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "calling", "annotations": []}],
                },
                *(
                    {"type": "function_call", "call_id": cid, "name": n, "arguments": a}
                    for cid, n, a in calls
                ),
            ],
        }
    )


def anthropic_reply(*calls: tuple[str, str, dict[str, Any]]) -> Message:
    return Message.model_validate(
        {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "calling"},
                *({"type": "tool_use", "id": cid, "name": n, "input": a} for cid, n, a in calls),
            ],
        }
    )


def gemini_reply(*calls: tuple[str, str, dict[str, Any]]) -> genai.GenerateContentResponse:
    return genai.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "calling"},
                            *(
                                {"functionCall": {"id": cid, "name": n, "args": a}}
                                for cid, n, a in calls
                            ),
                        ],
                    }
                }
            ]
        }
    )


def test_parse_openai_chat_sdk_object_and_plain_dict() -> None:
    """Chat Completions calls come out in order from the SDK object and from its plain dump."""
    reply = chat_completion(("c1", "echo", '{"text": "a"}'), ("c2", "fail", ""))
    expected = [ToolCall("echo", '{"text": "a"}', "c1"), ToolCall("fail", "{}", "c2")]
    assert parse_tool_calls(reply, "openai") == expected
    message = reply.choices[0].message
    assert parse_tool_calls(message, "openai") == expected
    assert parse_tool_calls(message.model_dump(), "openai-strict") == expected


def test_parse_openai_message_without_calls_is_empty() -> None:
    """An assistant message with only text has no calls."""
    assert parse_tool_calls({"role": "assistant", "content": "done"}, "openai") == []


def test_parse_responses_skips_other_items() -> None:
    """Responses API function_call items are found among message items."""
    reply = responses_reply(("c1", "echo", '{"text": "a"}'))
    assert parse_tool_calls(reply, "openai-responses") == [ToolCall("echo", '{"text": "a"}', "c1")]
    dumped = [item.model_dump() for item in reply.output]
    assert parse_tool_calls(dumped, "openai_responses") == [ToolCall("echo", '{"text": "a"}', "c1")]


def test_parse_anthropic_tool_use_blocks() -> None:
    """Anthropic tool_use blocks become calls with their input object and id."""
    reply = anthropic_reply(("t1", "echo", {"text": "a"}), ("t2", "fail", {}))
    assert parse_tool_calls(reply, "anthropic") == [
        ToolCall("echo", {"text": "a"}, "t1"),
        ToolCall("fail", {}, "t2"),
    ]
    assert parse_tool_calls(reply.model_dump()["content"], "anthropic")[0].call_id == "t1"


def test_parse_gemini_function_calls() -> None:
    """Gemini functionCall parts become calls from the response or its content."""
    reply = gemini_reply(("g1", "echo", {"text": "a"}))
    assert parse_tool_calls(reply, "gemini") == [ToolCall("echo", {"text": "a"}, "g1")]
    content = reply.candidates[0].content  # type: ignore[index]
    assert parse_tool_calls(content, "gemini") == [ToolCall("echo", {"text": "a"}, "g1")]


def test_reply_text_of_each_provider() -> None:
    """The text of a reply comes out of the SDK object and its plain dump alike; a reply
    with no text part gives ""; Gemini thoughts are left out."""
    assert reply_text(chat_completion(("c1", "echo", "{}")), "openai") == ""
    plain = {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}
    assert reply_text(plain, "openai") == "ab"
    assert reply_text({"role": "assistant", "content": "done"}, "openai-strict") == "done"
    responses = responses_reply(("c1", "echo", "{}"))
    assert reply_text(responses, "openai-responses") == "calling"
    assert reply_text([i.model_dump() for i in responses.output], "openai-responses") == "calling"
    claude = anthropic_reply(("t1", "echo", {}))
    assert reply_text(claude, "anthropic") == "calling"
    assert reply_text(claude.model_dump()["content"], "anthropic") == "calling"
    gemini = gemini_reply(("g1", "echo", {}))
    assert reply_text(gemini, "gemini") == "calling"
    thinking = {"parts": [{"text": "hmm", "thought": True}, {"text": "Sunny."}]}
    assert reply_text(thinking, "gemini") == "Sunny."
    with pytest.raises(UsageError, match="unknown provider"):
        reply_text({}, "cohere")


def test_unknown_provider_is_a_usage_error() -> None:
    """An unknown provider name is a UsageError that lists the known ones."""
    with pytest.raises(UsageError, match="anthropic"):
        parse_tool_calls({}, "cohere")


def _results() -> list[CallResult]:
    ok = CallResult("hi", "hi", None, "c1", "main:echo", "echo")
    err = ToolError(ErrorKind.NOT_FOUND, "nothing here")
    return [ok, CallResult(None, err.message, err, "c2", "main:fail", "fail")]


def test_openai_chat_results_are_tool_messages() -> None:
    """Each result is a tool message the SDK's TypedDict accepts, carrying the call id."""
    msgs = tool_result_messages(_results(), "openai")
    adapter = TypeAdapter(ChatCompletionToolMessageParam)
    for m in msgs:
        adapter.validate_python(m)
    assert [(m["tool_call_id"], m["content"]) for m in msgs] == [
        ("c1", "hi"),
        ("c2", "not_found: nothing here"),
    ]


def test_responses_results_are_function_call_output_items() -> None:
    """Each result is a function_call_output input item the SDK accepts."""
    items = tool_result_messages(_results(), "openai-responses")
    adapter = TypeAdapter(ResponseInputItemParam)
    for item in items:
        adapter.validate_python(item)
    assert [i["call_id"] for i in items] == ["c1", "c2"]
    assert {i["type"] for i in items} == {"function_call_output"}


def test_anthropic_results_are_one_user_message_with_error_flags() -> None:
    """All results go in one user message; failures carry is_error."""
    (msg,) = tool_result_messages(_results(), "anthropic")
    TypeAdapter(MessageParam).validate_python(msg)
    assert msg["role"] == "user"
    blocks = msg["content"]
    assert [b["tool_use_id"] for b in blocks] == ["c1", "c2"]
    assert "is_error" not in blocks[0]
    assert blocks[1]["is_error"] is True
    assert tool_result_messages([], "anthropic") == []


def test_gemini_results_are_function_responses() -> None:
    """Results become functionResponse parts of one user Content, errors under 'error'."""
    (content,) = tool_result_messages(_results(), "gemini")
    parsed = genai.Content.model_validate(content)
    assert parsed.parts is not None
    first, second = (p.function_response for p in parsed.parts)
    assert first is not None
    assert second is not None
    assert (first.name, first.id, first.response) == ("echo", "c1", {"output": "hi"})
    assert second.response == {"error": "not_found: nothing here"}


@pytest.mark.anyio
async def test_three_line_openai_loop(session: Session) -> None:
    """A scripted OpenAI reply runs through the session and yields tool messages in call order."""
    messages: list[Any] = []
    reply = chat_completion(
        ("c1", "echo", '{"text": "hi", "times": 2}'),
        ("c2", "fail", "{}"),
        ("c3", "nope", "{}"),
        ("c4", "echo", '{"text": 3}'),
    )
    messages.append(reply.choices[0].message.model_dump(exclude_none=True))
    messages += await session.run_tool_calls(reply, provider="openai")
    tool_msgs = messages[1:]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3", "c4"]
    assert tool_msgs[0]["content"] == "hi hi"
    assert tool_msgs[1]["content"] == "not_found: nothing here"
    assert "There is no tool named 'nope'" in tool_msgs[2]["content"]
    assert "`text`" in tool_msgs[3]["content"]


@pytest.mark.anyio
async def test_anthropic_loop_marks_errors(session: Session) -> None:
    """An Anthropic reply runs through the session; the failed call comes back with is_error."""
    reply = anthropic_reply(("t1", "echo", {"text": "x"}), ("t2", "fail", {}))
    (msg,) = await run_tool_calls(session, reply, "anthropic")
    assert [b.get("is_error", False) for b in msg["content"]] == [False, True]
    assert msg["content"][0]["content"] == "x"


@pytest.mark.anyio
async def test_strict_nulls_mean_not_given(session: Session) -> None:
    """Nulls a strict-mode model sends for optional arguments fall back to the defaults."""
    strict = json.dumps({"text": "a", "times": None, "options": None, "sep": None})
    nested = json.dumps({"text": "a", "how": {"upper": True, "suffix": None}})
    reply = chat_completion(("c1", "echo", strict), ("c2", "shout", nested))
    first, second = await run_tool_calls(session, reply, "openai-strict")
    assert first["content"] == "a"
    assert second["content"] == "A"


@pytest.mark.anyio
async def test_required_null_is_still_rejected(session: Session) -> None:
    """A null for a required argument is not dropped: the model learns the field is required."""
    reply = anthropic_reply(("t1", "echo", {"text": None}))
    (msg,) = await run_tool_calls(session, reply, "anthropic")
    assert msg["content"][0]["is_error"] is True
    assert "`text`" in msg["content"][0]["content"]


@pytest.mark.anyio
async def test_invalid_json_arguments_are_an_error_result(session: Session) -> None:
    """Arguments that are not JSON become an invalid_params result, not an exception."""
    reply = chat_completion(("c1", "echo", '{"text": null,'))
    (msg,) = await run_tool_calls(session, reply, "openai")
    assert msg["content"].startswith("invalid_params: Invalid arguments for echo")
    assert "JSON" in msg["content"]


def test_sync_session_runs_tool_calls(session: Session) -> None:
    """The blocking facade answers a reply with the same messages as the async session."""
    reply = anthropic_reply(("t1", "echo", {"text": "x", "times": 3, "sep": "-"}))
    with session.sync() as sync:
        (msg,) = sync.run_tool_calls(reply, provider="anthropic")
    assert msg["content"][0]["content"] == "x-x-x"
