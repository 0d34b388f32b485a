"""External tools: JSON-only tools added to a session at run time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import (
    Context,
    ErrorKind,
    Progress,
    Tool,
    ToolError,
    ToolSetBuilder,
    UsageError,
)
from toolweave.catalog import external_tool, schema_validator

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
    },
    "required": ["city"],
    "additionalProperties": False,
}


class Nothing(BaseModel):
    """No arguments."""


class Forecast(Tool[Nothing, str]):
    """A built-in tool whose name an external tool must not take."""

    id = "forecast"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """The built-in answer."""
        return "built-in"


def _weather(calls: list[dict[str, Any]], result: Any = None) -> Any:
    async def call(ctx: Any, arguments: dict[str, Any]) -> Any:
        calls.append(arguments)
        return result if result is not None else f"sunny in {arguments['city']}"

    return external_tool(
        id="forecast",
        namespace="mcp_weather",
        description="Weather forecast.",
        input_schema=SCHEMA,
        call=call,
        source="mcp:weather",
        read_only=True,
    )


async def test_external_tool_is_called_with_validated_arguments(make_session: Any) -> None:
    """Valid JSON arguments reach the external call as a dict; the text comes back."""
    session = make_session()
    calls: list[dict[str, Any]] = []
    entry = session.register_external(_weather(calls), name="weather")
    assert entry.name == "weather"
    result = await session.call("weather", '{"city": "Oslo", "days": 2}', "e1")
    assert result.ok
    assert result.text == "sunny in Oslo"
    assert result.effective_tool == "mcp_weather:forecast"
    assert calls == [{"city": "Oslo", "days": 2}]


async def test_schema_is_checked_before_the_call(make_session: Any) -> None:
    """Arguments that break the schema are invalid_params naming each field; no call."""
    session = make_session()
    calls: list[dict[str, Any]] = []
    session.register_external(_weather(calls), name="weather")
    result = await session.call("weather", {"days": 0, "extra": True})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "'city' is a required property" in result.text
    assert "`days`" in result.text
    assert "'extra' was unexpected" in result.text
    assert calls == []


@pytest.mark.parametrize(
    "raw",
    ["not json", "[1, 2]", b"\xff\xfe", "[" * 5000 + "]" * 5000, 42],
    ids=["text", "array", "bad-bytes", "deep", "int"],
)
async def test_bad_payloads_are_invalid_params(make_session: Any, raw: Any) -> None:
    """Malformed, non-object or absurdly nested payloads fail as invalid_params."""
    session = make_session()
    calls: list[dict[str, Any]] = []
    session.register_external(_weather(calls), name="weather")
    result = await session.call("weather", raw)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert calls == []


async def test_never_shadows_a_built_in(make_session: Any) -> None:
    """An external tool cannot take a built-in's name, nor another external's."""
    session = make_session(Forecast)
    with pytest.raises(UsageError, match="taken by a built-in"):
        session.register_external(_weather([]))
    session.register_external(_weather([]), name="weather")
    with pytest.raises(UsageError, match="already registered"):
        session.register_external(_weather([]), name="weather")
    assert (await session.call("forecast", {})).text == "built-in"


async def test_unlisted_external_tools_stay_callable(make_session: Any) -> None:
    """set_listed hides a tool from the listing (not from calls); only a real change bumps
    the version and renders the listing anew."""
    session = make_session(Forecast)
    calls: list[dict[str, Any]] = []
    session.register_external(_weather(calls), name="weather")
    session.register_external(_weather([]), name="alpha")
    listed = session.definitions("neutral")
    version = session.external_version
    assert session.set_listed("weather", True) is False
    again = session.definitions("neutral")
    assert again == listed
    assert all(a is b for a, b in zip(again, listed, strict=True))
    assert session.external_version == version

    assert session.set_listed("weather", False) is True
    assert session.external_version == version + 1
    assert [d["name"] for d in session.definitions("neutral")] == ["forecast", "alpha"]
    assert [d["function"]["name"] for d in session.definitions("openai")] == ["forecast", "alpha"]
    assert session.unlisted == frozenset({"weather"})
    assert "weather" in session.external
    assert session.set_listed("weather", False) is False
    assert session.external_version == version + 1
    result = await session.call("weather", {"city": "Oslo"})
    assert result.text == "sunny in Oslo"
    assert calls == [{"city": "Oslo"}]
    unknown = await session.call("nope", {})
    assert unknown.error is not None
    assert "alpha" in unknown.text
    assert "weather" not in unknown.text

    assert session.set_listed("weather", True) is True
    assert [d["name"] for d in session.definitions("neutral")] == ["forecast", "weather", "alpha"]
    assert session.unlisted == frozenset()
    assert session.set_listed("missing", False) is False
    session.set_listed("alpha", False)
    assert session.unregister_external("alpha")
    session.register_external(_weather([]), name="alpha")
    assert "alpha" in [d["name"] for d in session.definitions("neutral")]


async def test_one_prefix_is_applied_to_external_names(tmp_path: Any) -> None:
    """The set's external_prefix is put once before an external tool's name; a prefix
    given at registration replaces it, and ``prefix=""`` takes the name as given."""
    toolset = ToolSetBuilder().build({"external_prefix": "ext__"})
    session = toolset.session(workspace=tmp_path)
    assert session.register_external(_weather([])).name == "ext__forecast"
    assert session.register_external(_weather([]), name="weather").name == "ext__weather"
    assert session.register_external(_weather([]), name="plain", prefix="").name == "plain"
    assert session.register_external(_weather([]), name="w", prefix="p_").name == "p_w"
    unset = ToolSetBuilder().build().session(workspace=tmp_path)
    assert unset.toolset.config.external_prefix is None
    assert unset.register_external(_weather([]), name="weather").name == "weather"


async def test_listing_and_unregistering(make_session: Any) -> None:
    """External tools list after built-ins, in arrival order; unregistering removes them."""
    session = make_session(Forecast)
    version = session.external_version
    session.register_external(_weather([]), name="zeta")
    session.register_external(_weather([]), name="alpha")
    names = [d["name"] for d in session.definitions("neutral")]
    assert names == ["forecast", "zeta", "alpha"]
    assert session.definitions("neutral", include_external=False) == session.toolset.definitions(
        "neutral"
    )
    assert session.external_version == version + 2
    assert session.unregister_external("alpha") is True
    assert session.unregister_external("alpha") is False
    assert [d["name"] for d in session.definitions("neutral")] == ["forecast", "zeta"]
    gone = await session.call("alpha", {"city": "x"})
    assert gone.error is not None
    assert gone.error.kind is ErrorKind.NOT_FOUND


async def test_output_forms(make_session: Any) -> None:
    """An external call may return text, JSON-able data, or an (output, text) pair."""
    session = make_session()
    session.register_external(_weather([], {"temp": 21}), name="data")
    session.register_external(_weather([], ({"temp": 21}, "21 degrees")), name="pair")
    data = await session.call("data", {"city": "x"})
    assert (data.output, data.text) == ({"temp": 21}, '{"temp":21}')
    pair = await session.call("pair", {"city": "x"})
    assert (pair.output, pair.text) == ({"temp": 21}, "21 degrees")


async def test_external_stream_and_timeout(make_session: Any) -> None:
    """A streaming external tool streams; a slow one stops at the external deadline."""

    async def stream(ctx: Any, arguments: dict[str, Any]) -> AsyncIterator[Any]:
        yield Progress("fetching")
        yield "done"

    async def slow(ctx: Any, arguments: dict[str, Any]) -> str:
        await anyio.sleep(10)
        return "late"

    session = make_session(external_timeout=0.1)
    session.register_external(
        external_tool(
            id="s", namespace="x", description="d", input_schema={"type": "object"}, stream=stream
        )
    )
    session.register_external(
        external_tool(
            id="slow", namespace="x", description="d", input_schema={"type": "object"}, call=slow
        )
    )
    async with session.stream("s", {}) as items:
        got = [item async for item in items]
    assert isinstance(got[0], Progress)
    assert got[-1].text == "done"
    with anyio.fail_after(3):
        late = await session.call("slow", {})
    assert late.error is not None
    assert late.error.kind is ErrorKind.TIMEOUT


def test_external_tool_needs_a_body() -> None:
    """external_tool wants call=, stream= or both, not neither."""
    with pytest.raises(TypeError, match="call=, stream= or both"):
        external_tool(id="a", namespace="b", description="", input_schema={})


async def test_a_tool_with_both_bodies_streams_only_for_listeners(make_session: Any) -> None:
    """With call= and stream=, a blocking call without a progress callback runs call=;
    one with a callback, and a streaming call, run stream=."""
    used: list[str] = []

    async def call(_ctx: Any, args: dict[str, Any]) -> str:
        used.append("call")
        return "plain"

    async def stream(_ctx: Any, args: dict[str, Any]) -> AsyncIterator[Any]:
        used.append("stream")
        yield Progress(message="half")
        yield "streamed"

    both = external_tool(
        id="both", namespace="x", description="", input_schema={}, call=call, stream=stream
    )
    session = make_session()
    session.register_external(both, name="both")
    assert (await session.call("both", {})).text == "plain"
    heard: list[str] = []
    listened = await session.call("both", {}, on_progress=lambda p: heard.append(p.message))
    assert (listened.text, heard) == ("streamed", ["half"])
    async with session.stream("both", {}) as items:
        assert [i async for i in items][-1].text == "streamed"
    assert used == ["call", "stream", "stream"]


def test_schema_validator_lists_every_problem() -> None:
    """The validator reports all problems at once, sorted by location."""
    validate = schema_validator(SCHEMA)
    assert validate({"city": "x"}) == {"city": "x"}
    with pytest.raises(ToolError, match=r"`\(arguments\)`.*`days`") as info:
        validate({"days": "many"})
    assert info.value.kind is ErrorKind.INVALID_PARAMS


@pytest.mark.parametrize(
    ("schema", "data", "valid"),
    [
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": True}, False),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1.0}, True),
        ({"type": "object", "properties": {"d": {"format": "date"}}}, {"d": "soon"}, True),
        (
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "properties": {"n": {"type": "integer"}},
            },
            {"n": 1.0},
            False,
        ),
        (
            {"$defs": {"S": {"type": "string"}}, "properties": {"s": {"$ref": "#/$defs/S"}}},
            {"s": 3},
            False,
        ),
        ({"properties": {"p": {"prefixItems": [{"type": "string"}]}}}, {"p": [1]}, False),
        (
            {"properties": {"x": {"const": 1}}, "additionalProperties": False},
            {"x": 1, "y": 2},
            False,
        ),
    ],
)
def test_schema_validator_agrees_with_jsonschema(
    schema: dict[str, Any], data: dict[str, Any], valid: bool
) -> None:
    """Whatever path checks the arguments (the compiled fast check or jsonschema), the
    verdict is jsonschema's, for every draft and keyword."""
    pytest.importorskip("fastjsonschema", reason="fastjsonschema (the fast path) is missing")
    validate = schema_validator(schema)
    if valid:
        assert validate(dict(data)) == data
    else:
        with pytest.raises(ToolError) as info:
            validate(dict(data))
        assert info.value.kind is ErrorKind.INVALID_PARAMS


def test_schema_validator_never_fills_in_defaults() -> None:
    """Valid arguments are passed on as given: defaults of the schema are not added."""
    validate = schema_validator({"properties": {"n": {"type": "integer", "default": 3}}})
    assert validate({}) == {}
