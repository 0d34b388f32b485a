"""The validator composed for @tool functions answers exactly as the Args model would."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError
from toolweave import tool
from toolweave.catalog._arguments import (
    MISSING,
    ArgumentsJsonSchema,
    compose,
    json_schema,
    kwargs_validator,
    listed_json_schema,
    model_arguments,
)
from toolweave.catalog._erasure import erase
from typing_extensions import TypedDict


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int


class Opts(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    x: int
    y: int


ANNOTATIONS: list[Any] = [
    str,
    int,
    float,
    bool,
    bytes,
    Any,
    None,
    list[str],
    list[str] | None,
    dict[str, int],
    tuple[int, str],
    set[int],
    int | str,
    Literal["a", "b"],
    Color,
    datetime.datetime,
    datetime.date,
    Path,
    uuid.UUID,
    Decimal,
    Annotated[int, Field(ge=0, le=10)],
    Annotated[str, Field(min_length=2, description="two or more")],
    Point,
    Point | None,
    list[Point],
    dict[str, list[Point]],
    list[Opts],
    list[Pair] | None,
]

VALUES: list[Any] = [
    None,
    0,
    1,
    -1,
    11,
    1.5,
    "1.5",
    True,
    "",
    "x",
    "ab",
    "red",
    "a",
    "2024-01-02",
    "2024-01-02T03:04:05",
    "00000000-0000-0000-0000-000000000000",
    [],
    ["x"],
    [1, "y"],
    [{"x": 1, "y": 2}],
    {},
    {"x": 1, "y": 2},
    {"x": 1, "y": 2, "z": 3},
    {"k": [{"x": 1, "y": "2"}]},
    [{"x": 1, "y": 2, "z": 3}],
]


def _function(annotation: Any, default: Any = MISSING) -> Any:
    """An @tool function ``f(p: annotation [= default], q: int = 0)``."""
    if default is MISSING:

        async def f(p, q: int = 0):  # type: ignore[no-untyped-def]
            """F.

            Args:
                p: The parameter under test.
            """
            return p

    else:

        async def f(p=default, q: int = 0):  # type: ignore[no-untyped-def]
            """F.

            Args:
                p: The parameter under test.
            """
            return p

    f.__annotations__ = {"p": annotation, "q": int, "return": Any}
    return tool(f)


def _outcome(validate: Any, raw: Any) -> Any:
    try:
        out = validate(raw)
    except ValidationError as exc:
        return "error", exc.title, [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]
    return "ok", out if isinstance(out, dict) else out.__dict__


def _composed(cls: Any) -> Any:
    spec = cls.args_spec
    assert spec[3] is not None, "every parameter should be plain"
    schema = compose(spec[0], spec[3])
    assert schema is not None, "the composed schema should apply"
    return schema


def _both(cls: Any, *, strict: bool = False) -> tuple[Any, Any]:
    """The composed validator and the Args model's, both under the argument policy."""
    spec = cls.args_spec
    schema = compose(spec[0], spec[3], strict=strict)
    assert schema is not None
    composed = kwargs_validator(spec[0], schema)
    assert composed is not None
    return composed, model_arguments(cls.args_model, strict=strict)[1]


def _model_json_schema(cls: Any) -> dict[str, Any]:
    """The JSON Schema of the Args model under the argument policy."""
    return ArgumentsJsonSchema().generate(model_arguments(cls.args_model, strict=False)[0])


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
@pytest.mark.parametrize("annotation", ANNOTATIONS, ids=repr)
def test_composed_validator_matches_the_model(annotation: Any, strict: bool) -> None:
    """For every value, as JSON text and as Python data, with the parameter present,
    missing or beside an unknown one, lax and strict: the same arguments or the same
    errors."""
    cls = _function(annotation)
    (from_json, from_python), model = _both(cls, strict=strict)
    cases: list[dict[str, Any]] = [{}, {"q": 1}, {"p": "ab", "zz": 1}]
    cases += [{"p": value} for value in VALUES]
    for args in cases:
        text = json.dumps(args)
        assert _outcome(from_json, text) == _outcome(model.validate_json, text), text
        assert _outcome(from_python, args) == _outcome(model.validate_python, args), args


@pytest.mark.parametrize(
    ("annotation", "default"),
    [(int, 3), (list[str], []), (Point | None, None), (str, None), (dict[str, int], {"a": 1})],
    ids=repr,
)
def test_composed_defaults_match_the_model(annotation: Any, default: Any) -> None:
    """Defaults apply as in the model (not validated; a mutable one copied per call)."""
    cls = _function(annotation, default)
    (_, from_python), model = _both(cls)
    first = from_python({})
    assert first == model.validate_python({}).__dict__
    if isinstance(first["p"], (list, dict)):
        first["p"].clear()
        assert from_python({})["p"] == default


@pytest.mark.parametrize("annotation", ANNOTATIONS, ids=repr)
@pytest.mark.parametrize("default", [MISSING, None, 7, "x", 0.5], ids=repr)
def test_composed_json_schema_matches_the_model(annotation: Any, default: Any) -> None:
    """The JSON Schema of the arguments is the model's, to the byte, whether assembled
    from per-type fragments or generated from the composed schema."""
    cls = _function(annotation, default)
    expected = json.dumps(_model_json_schema(cls))
    assert json.dumps(json_schema(cls.args_spec[0], cls.args_spec[3])) == expected
    assert json.dumps(ArgumentsJsonSchema().generate(_composed(cls))) == expected


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize(
    "annotation",
    [
        int,
        float,
        list[str] | None,
        dict[str, int],
        Point,
        Annotated[int, Field(ge=0)],
        Literal["a", "b"],
    ],
    ids=repr,
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=st.dictionaries(st.sampled_from(["p", "q", "x"]), JSON, max_size=3))
def test_composed_validator_matches_the_model_on_any_json(
    annotation: Any, arguments: dict[str, Any]
) -> None:
    """Arbitrary JSON objects get the same answer from both validators."""
    (from_json, from_python), model = _both(_function(annotation))
    text = json.dumps(arguments)
    assert _outcome(from_json, text) == _outcome(model.validate_json, text)
    assert _outcome(from_python, arguments) == _outcome(model.validate_python, arguments)


def test_functions_get_their_keyword_arguments() -> None:
    """A call hands the function its validated values: nested models as instances."""

    @tool
    async def place(at: Point, tags: list[str] | None = None) -> str:
        """Place."""
        return f"{type(at).__name__}({at.x},{at.y}) {tags}"

    args = erase(place).parse('{"at": {"x": 1, "y": 2}}')
    assert args == {"at": Point(x=1, y=2), "tags": None}
    assert isinstance(args["at"], Point)
    assert "args_model" not in type(place).__dict__


@pytest.mark.parametrize(
    "signature",
    [
        "a: Point, b: Point",  # one definition used twice
        "a: Annotated[int, Field(alias='b')]",  # an alias changes how the field is found
        "a: int = Field(1, ge=0)",  # a Field(...) default
        "a: 'Undefined'",  # a name that does not resolve
        "_a: int",  # a name a model refuses
        "a: Opts",  # a TypedDict takes the Args model's config
        "a: Pair",  # so does a dataclass
    ],
)
def test_the_model_decides_where_composing_would_not_be_faithful(signature: str) -> None:
    """These parameters are validated by the Args model (or fail as the model does)."""
    namespace: dict[str, Any] = {
        "Point": Point,
        "Opts": Opts,
        "Pair": Pair,
        "Annotated": Annotated,
        "Field": Field,
    }
    exec(f"async def f({signature}) -> int:\n    return 0", namespace)
    cls = tool(namespace["f"])
    spec = cls.args_spec
    assert spec[3] is None or compose(spec[0], spec[3]) is None


def test_the_model_path_still_returns_keyword_arguments() -> None:
    """A tool whose arguments need the model still gets a dict of keyword arguments."""

    @tool
    async def twice(a: Point, b: Point) -> str:
        """Two points."""
        return f"{a.x}{b.y}"

    erased = erase(twice)
    args = erased.parse('{"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 4}}')
    assert args == {"a": Point(x=1, y=2), "b": Point(x=3, y=4)}
    with pytest.raises(ValidationError) as info:
        erased.parse('{"a": {"x": 1, "y": 2}}')
    assert [e["loc"] for e in info.value.errors()] == [("b",)]


def test_each_tool_owns_its_schema() -> None:
    """Editing one tool's JSON Schema leaves the next tool of the same types alone."""
    first, second = _function(list[str] | None, None), _function(list[str] | None, None)
    one = json_schema(first.args_spec[0], first.args_spec[3])
    assert one is not None
    one["properties"]["p"]["anyOf"][0]["items"]["type"] = "integer"
    other = json_schema(second.args_spec[0], second.args_spec[3])
    assert other == _model_json_schema(second)


class Level(enum.StrEnum):
    LOW = "low"
    HIGH = "high"


class Address(BaseModel):
    """A postal address."""

    street: str
    postcode: str = Field(pattern=r"^[0-9]{5}$")


class Contact(BaseModel):
    """Someone to notify."""

    name: str = Field(min_length=1)
    address: Address | None = None
    level: Level = Level.LOW


SHARED_TYPES: dict[str, Any] = {
    "Annotated": Annotated,
    "Field": Field,
    "Level": Level,
    "Color": Color,
    "Address": Address,
    "Contact": Contact,
    "Point": Point,
}

REALISTIC = [
    "title: Annotated[str, Field(min_length=1, max_length=200)], level: Level, "
    "owner: Contact, window: Point | None = None, labels: list[str] | None = None, "
    "watchers: list[Contact] | None = None, "
    "hours: Annotated[float, Field(gt=0, le=1000)] = 1.0, notify: bool = False",
    "a: Contact, b: Address",  # one definition reached from two parameters
    "a: Color, b: Level | None = None, c: dict[str, list[Address]] | None = None",
    "a: Annotated[int, Field(ge=0)] = 0, b: Annotated[int, Field(ge=0.0)] = 0",
]


def _tool_of(signature: str, name: str = "f") -> Any:
    namespace = dict(SHARED_TYPES)
    exec(f"async def {name}({signature}) -> int:\n    return 0", namespace)
    return tool(namespace[name])


@pytest.mark.parametrize("signature", REALISTIC)
def test_schemas_with_definitions_match_the_model(signature: str) -> None:
    """Nested models, enums, lists of models, constraints: the assembled schema (and
    the read-only one listings use) is the model's to the byte."""
    cls = _tool_of(signature)
    expected = json.dumps(_model_json_schema(cls))
    assert json.dumps(json_schema(cls.args_spec[0], cls.args_spec[3])) == expected
    listed = listed_json_schema(cls.args_spec[0], cls.args_spec[3])
    assert listed is not None
    assert json.dumps(listed) == expected
    assert json.dumps(erase(cls).listed_schema) == expected


def test_definitions_named_alike_or_like_the_model_are_left_to_pydantic() -> None:
    """Two different types with one name, or a type named like the Args model: the
    schema is generated whole (pydantic names them), still the model's."""
    other = type("Address", (BaseModel,), {"__annotations__": {"zip": int}, "__module__": "x"})
    namespace = dict(SHARED_TYPES, Other=other, FArgs=type("FArgs", (BaseModel,), {}))
    for signature in ("a: Address, b: Other", "a: FArgs"):
        exec(f"async def f({signature}) -> int:\n    return 0", namespace)
        cls = tool(namespace["f"])
        assert listed_json_schema(cls.args_spec[0], cls.args_spec[3]) is None
        expected = json.dumps(_model_json_schema(cls))
        assert json.dumps(json_schema(cls.args_spec[0], cls.args_spec[3])) == expected


def test_types_are_generated_once_for_many_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing many tools of the same types (constraints written per tool included)
    generates each type's JSON Schema once; the tools share the read-only parts."""
    generated: list[Any] = []
    original = ArgumentsJsonSchema.generate

    def counting(self: ArgumentsJsonSchema, schema: Any, mode: Any = "validation") -> Any:
        generated.append(schema)
        return original(self, schema, mode)

    assert erase(_tool_of(REALISTIC[0], "t0")).listed_schema  # makes the types' fragments
    monkeypatch.setattr(ArgumentsJsonSchema, "generate", counting)
    schemas = [erase(cls).listed_schema for cls in _many(REALISTIC[0], 50)]
    assert generated == []
    assert schemas[0]["properties"] is schemas[1]["properties"]
    assert schemas[0]["title"] != schemas[1]["title"]
    with pytest.raises(TypeError):
        schemas[0]["properties"]["owner"]["description"] = "changed"  # type: ignore[index]


def _many(signature: str, count: int) -> list[Any]:
    return [_tool_of(signature, f"m{i}") for i in range(count)]


def test_constraints_written_per_tool_share_a_schema_by_value() -> None:
    """``Annotated[int, Field(ge=0)]`` written in two functions is one cached type;
    ``ge=0.0`` is another (its schema says 0.0)."""
    from toolweave.catalog._arguments import _field_schema

    first = _field_schema(Annotated[int, Field(ge=0)])
    assert first is not None
    assert _field_schema(Annotated[int, Field(ge=0)]) is first
    assert _field_schema(Annotated[int, Field(ge=0.0)]) is not first
    assert _field_schema(list[Annotated[int, Field(ge=0)]]) is _field_schema(
        list[Annotated[int, Field(ge=0)]]
    )
