"""Type erasure: argument parsing, validation messages, output dumping, lazy schemas."""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from toolweave import Context, ErrorKind, Tool, ToolError, ToolOutput, tool
from toolweave.catalog._arguments import ArgumentsJsonSchema
from toolweave.catalog._erasure import erase, format_validation_error

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    """A point."""

    x: int
    """Horizontal."""
    y: int = 0
    """Vertical."""


class Move(Tool[Point, str]):
    """Takes a plain model: unknown fields must still be rejected."""

    id = "move"

    async def run(self, ctx: Context, args: Point) -> str:
        """Describe the point."""
        return f"{args.x},{args.y}"


class Loose(BaseModel):
    """A model that explicitly allows extra fields."""

    model_config = ConfigDict(extra="allow")
    x: int


class TakesLoose(Tool[Loose, str]):
    """Keeps extra fields because its model says so."""

    id = "loose"

    async def run(self, ctx: Context, args: Loose) -> str:
        """List the extras."""
        return ",".join(sorted(args.model_extra or {}))


# -- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '{"x": 1, "y": 2}',
        b'{"x": 1, "y": 2}',
        bytearray(b'{"x": 1, "y": 2}'),
        {"x": 1, "y": 2},
        types.MappingProxyType({"x": 1, "y": 2}),
        Point(x=1, y=2),
    ],
    ids=["str", "bytes", "bytearray", "dict", "mapping", "model"],
)
def test_parse_accepts_json_text_bytes_and_mappings(raw: Any) -> None:
    """JSON text, bytes, dicts, other mappings and Args instances all parse to Args."""
    args = erase(Move).parse(raw)
    assert isinstance(args, Point)
    assert (args.x, args.y) == (1, 2)


def test_none_means_no_arguments() -> None:
    """None is an empty object: fine when every field has a default, else 'missing'."""

    @tool
    async def defaults(a: int = 1) -> int:
        """All defaults."""
        return a

    assert erase(defaults).parse(None) == {"a": 1}
    with pytest.raises(ValidationError) as info:
        erase(Move).parse(None)
    assert info.value.errors()[0]["type"] == "missing"


@pytest.mark.parametrize("raw", [[1, 2], 3, 1.5, True, object()])
def test_non_object_arguments_are_invalid_params(raw: Any) -> None:
    """Anything that is not a JSON object or mapping is refused with invalid_params."""
    with pytest.raises(ToolError) as info:
        erase(Move).parse(raw)
    assert info.value.kind is ErrorKind.INVALID_PARAMS
    assert "JSON object" in info.value.message


def test_unknown_fields_are_rejected_for_plain_models() -> None:
    """A plain BaseModel Args rejects unknown fields; the schema says so too."""
    erased = erase(Move)
    with pytest.raises(ValidationError) as info:
        erased.parse({"x": 1, "z": 3})
    assert info.value.errors()[0]["type"] == "extra_forbidden"
    assert erased.input_schema["additionalProperties"] is False
    assert erased.input_schema["description"] == "A point."
    assert erased.input_schema["title"] == "Point"


def test_models_that_choose_extra_keep_their_choice() -> None:
    """A model configured with extra='allow' keeps extra fields."""
    args = erase(TakesLoose).parse({"x": 1, "b": 2, "a": 3})
    assert args.model_extra == {"b": 2, "a": 3}
    assert erase(TakesLoose).input_schema["additionalProperties"] is True


async def test_invalid_params_message_names_each_field(make_session: Any) -> None:
    """One message lists every bad field with what was expected, in the model's words."""

    class Args(BaseModel):
        count: int
        name: str
        ratio: float = Field(ge=0, le=1)

    class Strict(Tool[Args, str]):
        id = "strict"

        async def run(self, ctx: Context, args: Args) -> str:
            return "ok"

    session = make_session(Strict)
    result = await session.call("strict", {"count": "many", "ratio": 3, "colour": "red"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    text = result.text
    assert text.startswith("Invalid arguments for strict: ")
    assert '`count`: Input should be a valid integer (got "many")' in text
    assert "`name` is required but missing" in text
    assert "`ratio`: Input should be less than or equal to 1 (got 3)" in text
    assert "`colour` is not a parameter of this tool" in text
    assert result.output is None


def test_validation_message_uses_client_names() -> None:
    """With renamed parameters, errors name the parameter as the model knows it."""
    with pytest.raises(ValidationError) as info:
        erase(Move).parse({"x": "no"})
    text = format_validation_error(info.value, "Move", {"x": "horizontal"})
    assert "`horizontal`" in text
    assert "`x`" not in text


async def test_malformed_json_is_invalid_params(make_session: Any) -> None:
    """Broken JSON text is invalid_params, not a crash."""
    session = make_session(Move)
    result = await session.call("move", '{"x": 1,')
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "Invalid JSON" in result.text


# -- output ---------------------------------------------------------------------------


class Shown(ToolOutput):
    """An output that writes its own model text."""

    value: int
    """The value."""
    note: str | None = None
    """Optional note."""

    def to_model(self) -> str:
        """Custom text."""
        return f"value is {self.value}"


class Silent(BaseModel):
    """An output without to_model."""

    value: int
    """The value."""
    note: str | None = None
    """Optional note."""


class DefaultText(ToolOutput):
    """A ToolOutput relying on the default to_model."""

    value: int
    """The value."""
    note: str | None = None
    """Optional note."""


@dataclass
class Pair:
    """A plain dataclass output."""

    left: int
    right: str


def _finish(output_type: Any, value: Any) -> tuple[Any, str]:
    class Out(Tool[Point, Any]):
        id = "out"

        async def run(self, ctx: Context, args: Point) -> Any:
            return value

    Out.output_type = output_type
    return erase(Out).finish(value)


def test_str_output_is_its_own_text() -> None:
    """A str output is both the structured output and the text."""
    assert _finish(str, "héllo") == ("héllo", "héllo")


def test_model_with_to_model_uses_it() -> None:
    """A model with to_model: structured output is its JSON dump, text is to_model()."""
    assert _finish(Shown, Shown(value=3)) == ({"value": 3, "note": None}, "value is 3")


def test_model_without_to_model_is_compact_json() -> None:
    """A plain model's text is its compact JSON."""
    assert _finish(Silent, Silent(value=3)) == (
        {"value": 3, "note": None},
        '{"value":3,"note":null}',
    )


def test_tool_output_default_text_drops_nones() -> None:
    """ToolOutput's default to_model is compact JSON without None fields."""
    assert _finish(DefaultText, DefaultText(value=3))[1] == '{"value":3}'


@pytest.mark.parametrize(
    ("output_type", "value", "expected"),
    [
        (int, 7, (7, "7")),
        (list[int], [1, 2], ([1, 2], "[1,2]")),
        (dict[str, Any], {"ü": None}, ({"ü": None}, '{"ü":null}')),
        (Pair, Pair(1, "a"), ({"left": 1, "right": "a"}, '{"left":1,"right":"a"}')),
        (Any, {1, 2}, ([1, 2], "[1,2]")),
        (None, None, (None, "null")),
    ],
    ids=["int", "list", "dict", "dataclass", "set-as-any", "none"],
)
def test_other_outputs_are_json(output_type: Any, value: Any, expected: Any) -> None:
    """Other outputs are dumped to JSON-able data and compact JSON text (UTF-8 kept)."""
    assert _finish(output_type, value) == expected


async def test_unserialisable_output_is_execution_error(make_session: Any) -> None:
    """An output that cannot be dumped fails the call as execution_error."""

    @tool
    async def weird() -> Any:
        """Returns an object JSON cannot hold."""
        return object()

    result = await make_session(weird).call("weird", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR


# -- captured once ----------------------------------------------------------------------


def test_schema_is_built_lazily_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema is built on first access only, then the same object is returned."""

    class Lazy(BaseModel):
        a: int

    class LazyTool(Tool[Lazy, str]):
        id = "lazy"

        async def run(self, ctx: Context, args: Lazy) -> str:
            return ""

    calls: list[int] = []
    original = ArgumentsJsonSchema.generate

    def counting(self: ArgumentsJsonSchema, *a: Any, **kw: Any) -> Any:
        calls.append(1)
        return original(self, *a, **kw)

    monkeypatch.setattr(ArgumentsJsonSchema, "generate", counting)
    erased = erase(LazyTool)
    assert calls == []
    first = erased.input_schema
    second = erased.input_schema
    assert first is second
    assert calls == [1]


def test_validator_is_captured_once() -> None:
    """After the first parse, parsing calls pydantic's validator directly."""
    erased = erase(Move)
    erased.parse('{"x": 1}')
    validate_json = erased._validate_json
    for _ in range(3):
        erased.parse('{"x": 2}')
    assert erased._validate_json is validate_json
    assert getattr(validate_json, "__name__", "") == "validate_json"


# -- nothing a caller sends raises --------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.one_of(
        JSON,
        JSON.map(json.dumps),
        JSON.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=30),
        st.text(max_size=30),
        st.dictionaries(st.sampled_from(["x", "y", "z"]), JSON, max_size=3),
    )
)
def test_arbitrary_input_never_raises_out_of_call(make_session: Any, payload: Any) -> None:
    """Whatever arrives as arguments, call returns a result: success or invalid_params."""
    import anyio

    session = make_session(Move)

    async def go() -> None:
        result = await session.call("move", payload)
        if result.error is not None:
            assert result.error.kind is ErrorKind.INVALID_PARAMS
            assert result.text.startswith(("Invalid arguments", "arguments must"))
        else:
            assert result.text.count(",") == 1

    anyio.run(go)
