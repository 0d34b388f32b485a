"""Unit tests of ``ask_user`` with and without a host handler."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import ErrorKind, PackManager, Resources, Session
from toolweave_plan import Answer, AskUserHandler, Question, ScriptedAskUser, pack

pytestmark = pytest.mark.anyio


def make_session(workspace: Path, handler: AskUserHandler | None) -> Session:
    """A session with ``ask_user``; ``handler`` (if any) is the host's."""
    packs = PackManager(strict=True)
    packs.add("plan", pack)
    host = Resources()
    if handler is not None:
        host.insert(handler, AskUserHandler)
    toolset = packs.builder().build({"tools": ["ask_user"]})
    return toolset.session(workspace=workspace, resources=host, debug=True)


async def test_answers_come_from_the_handler(workspace: Path) -> None:
    """Picked options, free answers and a declined question all reach the model."""
    user = ScriptedAskUser(["Postgres", "use port 5433", None])
    session = make_session(workspace, user)
    picked = await session.call(
        "ask_user", {"question": "Which database?", "choices": ["SQLite", "Postgres"]}, "q1"
    )
    assert picked.error is None, picked.text
    assert picked.output["answer"] == "Postgres"
    assert picked.output["choice"] == 1
    assert picked.text == "The user answered: Postgres"
    free = await session.call("ask_user", {"question": "Anything else?"})
    assert free.output["answer"] == "use port 5433"
    assert free.output["choice"] is None
    declined = await session.call("ask_user", {"question": "Deploy now?", "choices": ["yes", "no"]})
    assert declined.output["declined"] is True
    assert "did not answer" in declined.text
    first = user.asked[0]
    assert first == Question(
        text="Which database?",
        choices=("SQLite", "Postgres"),
        allow_other=True,
        session_id=session.session_id,
        call_id="q1",
    )


async def test_without_a_handler_it_is_unavailable(workspace: Path) -> None:
    """No handler: ``unavailable``, telling the model to go on with an assumption."""
    session = make_session(workspace, None)
    result = await session.call("ask_user", {"question": "Which database?"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "assumption" in result.text


async def test_a_failing_handler_is_an_execution_error(workspace: Path) -> None:
    """A handler that raises fails the call; it does not crash the host."""
    session = make_session(workspace, ScriptedAskUser([]))
    result = await session.call("ask_user", {"question": "Hello?"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR


async def test_choice_index_from_the_handler(workspace: Path) -> None:
    """A handler answering by index gets the option's text; a bad index is ignored."""
    session = make_session(workspace, ScriptedAskUser([0, Answer(text="custom", choice=7)]))
    first = await session.call("ask_user", {"question": "Pick", "choices": ["a", "b"]})
    assert (first.output["answer"], first.output["choice"]) == ("a", 0)
    second = await session.call("ask_user", {"question": "Pick", "choices": ["a", "b"]})
    assert (second.output["answer"], second.output["choice"]) == ("custom", None)


async def test_bad_choices_are_invalid(workspace: Path) -> None:
    """Duplicate or blank choices are invalid_params, caught before the user is asked."""
    user = ScriptedAskUser(["x"])
    session = make_session(workspace, user)
    for choices in (["a", "a"], ["a", " "], ["a", "a "], ["a", ""]):
        result = await session.call("ask_user", {"question": "Pick", "choices": choices})
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert user.asked == []


def test_the_schema_states_distinct_answers_that_are_not_blank(workspace: Path) -> None:
    """The listed schema says what the validator checks: no blank answer, no two alike."""
    session = make_session(workspace, ScriptedAskUser([]))
    [params] = [
        d["function"]["parameters"]
        for d in session.definitions()
        if d["function"]["name"] == "ask_user"
    ]
    array = params["properties"]["choices"]["anyOf"][0]
    assert array["uniqueItems"] is True
    assert array["items"]["pattern"] == r"\S"
    assert array["items"]["minLength"] == 1
