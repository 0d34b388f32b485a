"""Hostile model replies on the way back: ``run_tool_calls`` and the provider parsers
never raise on a malformed reply and always answer with messages the provider accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import Kind, Session, ToolSetBuilder, tool
from toolweave.formats import parse_tool_calls, reply_text, run_tool_calls

pytest.importorskip("openai", reason="the openai SDK is not installed")
pytest.importorskip("google.genai", reason="google-genai is not installed")

from google.genai import types as genai
from openai.types.chat import ChatCompletion


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool(kind=Kind.READ, blocking=False)
def look(text: str = "") -> str:
    """Look at the text.

    Args:
        text: What to look at.
    """
    return "saw " + text


@pytest.fixture
def session(tmp_path: Path) -> Session:
    builder = ToolSetBuilder()
    builder.add(look)
    return builder.build().session(workspace=tmp_path)


ODD_LISTS: list[Any] = [{"a": 1}, 5, 1.5, True, "x", b"x"]
"""Values a reply may carry where a list (``choices``, ``candidates``) belongs."""


@pytest.mark.parametrize("choices", ODD_LISTS)
def test_openai_choices_that_are_not_a_list(choices: Any) -> None:
    """A Chat Completions reply whose ``choices`` is not a list has no calls and no
    text; nothing raises, from a dict or from an SDK object built without checks."""
    for reply in ({"choices": choices}, ChatCompletion.model_construct(choices=choices)):
        assert parse_tool_calls(reply, "openai") == []
        assert reply_text(reply, "openai") == ""


@pytest.mark.parametrize("candidates", ODD_LISTS)
def test_gemini_candidates_that_are_not_a_list(candidates: Any) -> None:
    """The same for a Gemini reply whose ``candidates`` is not a list."""
    reply = {"candidates": candidates}
    built = genai.GenerateContentResponse.model_construct(candidates=candidates)
    for one in (reply, built):
        assert parse_tool_calls(one, "gemini") == []
        assert reply_text(one, "gemini") == ""


@pytest.mark.anyio
async def test_one_choice_or_candidate_given_as_a_mapping(session: Session) -> None:
    """A single choice (candidate) given as a mapping instead of a one-item list is read
    as that one item, as a single ``tool_calls`` entry or part already is."""
    call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    chat = {"choices": {"message": {"role": "assistant", "tool_calls": [call]}}}
    assert await run_tool_calls(session, chat, "openai") == [
        {"role": "tool", "tool_call_id": "c1", "content": "saw "}
    ]
    part = {"functionCall": {"id": "g1", "name": "look", "args": {}}}
    gemini = {"candidates": {"content": {"role": "model", "parts": [part]}}}
    (message,) = await run_tool_calls(session, gemini, "gemini")
    assert message["parts"][0]["functionResponse"]["id"] == "g1"


def _reply_with_id(provider: str, call_id: Any) -> dict[str, Any]:
    """A reply of ``provider`` with one call of ``look`` whose id is ``call_id``."""
    if provider == "openai":
        call = {"id": call_id, "type": "function", "function": {"name": "look", "arguments": "{}"}}
        return {"role": "assistant", "tool_calls": [call]}
    if provider == "openai-responses":
        item = {"type": "function_call", "call_id": call_id, "name": "look", "arguments": "{}"}
        return {"output": [item]}
    if provider == "anthropic":
        block = {"type": "tool_use", "id": call_id, "name": "look", "input": {}}
        return {"role": "assistant", "content": [block]}
    part = {"functionCall": {"id": call_id, "name": "look", "args": {}}}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}}]}


def _answer_id(provider: str, messages: list[dict[str, Any]]) -> Any:
    """The call id the one answer in ``messages`` carries, after checking the messages
    against the provider SDK's own types."""
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionToolMessageParam
    from openai.types.responses import ResponseInputItemParam
    from pydantic import TypeAdapter

    (message,) = messages
    if provider == "openai":
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(message, strict=True)
        return message["tool_call_id"]
    if provider == "openai-responses":
        TypeAdapter(ResponseInputItemParam).validate_python(message, strict=True)
        return message["call_id"]
    if provider == "anthropic":
        TypeAdapter(MessageParam).validate_python(message, strict=True)
        return message["content"][0]["tool_use_id"]
    genai.Content.model_validate(message, strict=True)
    return message["parts"][0]["functionResponse"].get("id")


PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini"]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("call_id", "expected"),
    [
        (7, "7"),
        pytest.param(10**5000, None, id="huge-int"),
        (True, None),
        (1.5, None),
        ({"id": "c1"}, None),
        (["c1"], None),
    ],
)
async def test_call_ids_that_are_not_strings(
    session: Session, provider: str, call_id: Any, expected: str | None
) -> None:
    """A call id that is not a string never reaches the answer, which the provider
    would refuse: an integer comes back as its decimal text, anything else as no id
    (``""``, or no ``id`` for Gemini); the call still runs."""
    messages = await run_tool_calls(session, _reply_with_id(provider, call_id), provider)
    got = _answer_id(provider, messages)
    assert got == (expected if expected is not None or provider == "gemini" else "")
    (call,) = parse_tool_calls(_reply_with_id(provider, call_id), provider)
    assert call.call_id == expected


@pytest.mark.anyio
async def test_a_reply_of_many_calls_runs_a_bounded_number_at_a_time(tmp_path: Path) -> None:
    """A reply is the model's to write: 200 calls of a read-only tool run at most 16 at
    a time by default (each could start a process), all answered in order with their
    ids; ``limit=None`` runs them all at once; a limit below 1 is a UsageError."""
    import anyio
    from toolweave import UsageError

    running = 0
    most = 0

    @tool(kind=Kind.READ, blocking=False)
    async def probe(n: int) -> str:
        """Wait a moment and answer n. Do not use it for anything real."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await anyio.sleep(0.01)
        running -= 1
        return str(n)

    builder = ToolSetBuilder()
    builder.add(probe)
    session = builder.build().session(workspace=tmp_path)
    reply = {
        "role": "assistant",
        "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "probe", "arguments": f'{{"n": {n}}}'}}
            for n in range(200)
        ],
    }  # fmt: skip
    answers = await session.run_tool_calls(reply, "openai")
    assert [(a["tool_call_id"], a["content"]) for a in answers] == [
        (f"c{n}", str(n)) for n in range(200)
    ]
    assert 1 < most <= 16
    most = 0
    await run_tool_calls(session, reply, "openai", limit=None)
    assert most == 200
    with pytest.raises(UsageError, match="at least 1"):
        await session.call_many([("probe", {"n": 1}), ("probe", {"n": 2})], limit=0)
    await session.aclose()


def test_the_sessions_take_the_same_default_limit() -> None:
    """``Session.run_tool_calls`` and the sync facade's default to
    ``toolweave.formats.MAX_CONCURRENT_CALLS`` (they cannot import it: it sits above)."""
    import inspect

    from toolweave import SyncSession
    from toolweave.formats import MAX_CONCURRENT_CALLS

    for method in (Session.run_tool_calls, SyncSession.run_tool_calls):
        assert inspect.signature(method).parameters["limit"].default == MAX_CONCURRENT_CALLS
