"""Definitions in every provider format, checked against the providers' own SDK types."""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from toolweave import Tool, ToolSet, ToolSetBuilder, UsageError, tool
from toolweave.formats import (
    FORMATS,
    UnsupportedSchemaError,
    drop_optional_nulls,
    gemini_schema,
    render,
    to_strict_schema,
)

openai_types = pytest.importorskip("openai.types", reason="the openai SDK is not installed")
anthropic_types = pytest.importorskip(
    "anthropic.types", reason="the anthropic SDK is not installed"
)
genai_types = pytest.importorskip("google.genai.types", reason="google-genai is not installed")
mcp_types = pytest.importorskip("mcp.types", reason="the mcp SDK is not installed")

from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionFunctionToolParam  # noqa: E402
from openai.types.responses import FunctionTool, FunctionToolParam  # noqa: E402


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    x: int
    """Horizontal."""
    y: int = 0
    label: str | None = None


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Node(BaseModel):
    value: int
    children: list[Node] = []


class RichArgs(BaseModel):
    """Every construct a pack's arguments commonly use."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="File path, relative to the workspace")
    offset: int = Field(0, ge=0, description="First line to read")
    limit: int | None = Field(None, gt=0, le=1000)
    mode: Literal["text", "bytes"] = "text"
    color: Color = Color.RED
    level: Level = Level.LOW
    origin: Point = Field(description="Where to start")
    points: list[Point] = []
    maybe_point: Point | None = None
    tags: list[str] = Field(default_factory=list, max_length=5)
    name: Annotated[str, Field(min_length=1, max_length=40, pattern=r"^\w+$")] = "x"
    when: datetime | None = None
    pet: Cat | Dog = Field(default_factory=Cat, discriminator="kind")
    ratio: float = 0.5
    flag: bool = False
    fixed: Literal[7] = 7


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TreeArgs(BaseModel):
    root: Node


class MapArgs(BaseModel):
    env: dict[str, str] = {}


class AnyArgs(BaseModel):
    value: Any = None


class TupleArgs(BaseModel):
    pair: tuple[int, str]


def _tool(tool_id: str, args: type[BaseModel], description: str) -> type[Tool[Any, str]]:
    class _T(Tool[args, str]):  # type: ignore[valid-type]
        id = tool_id

        async def run(self, ctx: Any, a: Any) -> str:
            return "ok"

    _T.description = description
    return _T


def _set(*tools: type[Tool[Any, str]]) -> ToolSet:
    builder = ToolSetBuilder()
    builder.add_all(tools)
    return builder.build()


@pytest.fixture(scope="module")
def toolset() -> ToolSet:
    return _set(
        _tool("rich", RichArgs, "Read things. Do not use it to write."),
        _tool("noargs", NoArgs, "Take no arguments."),
    )


STRICT_ALLOWED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
}


def assert_strict(schema: Any, path: str = "") -> None:
    """Check OpenAI's strict-mode rules on every node of ``schema``."""
    assert isinstance(schema, dict), path
    unknown = set(schema) - STRICT_ALLOWED
    assert not unknown, f"{path}: keywords strict mode rejects: {unknown}"
    if "$ref" in schema:
        assert set(schema) == {"$ref"}, f"{path}: $ref with siblings"
    typ = schema.get("type")
    types = typ if isinstance(typ, list) else [typ]
    if "object" in types:
        assert schema.get("additionalProperties") is False, path
        assert schema.get("required") == list(schema["properties"]), path
        for k, v in schema["properties"].items():
            assert_strict(v, f"{path}.{k}")
    if "array" in types:
        assert_strict(schema["items"], f"{path}[]")
    for i, v in enumerate(schema.get("anyOf", [])):
        assert_strict(v, f"{path}|{i}")
    for k, v in schema.get("$defs", {}).items():
        assert_strict(v, f"$defs.{k}")
    assert (
        typ is not None
        or "anyOf" in schema
        or "$ref" in schema
        or "enum" in schema
        or "const" in schema
    ), path


def test_every_format_is_listed() -> None:
    """The registry holds exactly the documented formats."""
    assert set(FORMATS) == {
        "neutral",
        "openai",
        "openai-strict",
        "openai-responses",
        "openai-responses-strict",
        "anthropic",
        "gemini",
        "mcp",
    }


def test_openai_chat_validates_against_sdk_types(toolset: ToolSet) -> None:
    """Chat Completions tools (plain and strict) are valid ChatCompletionFunctionTool data."""
    for fmt in ("openai", "openai-strict"):
        for d in toolset.definitions(fmt):
            model = ChatCompletionFunctionTool.model_validate(d)
            TypeAdapter(ChatCompletionFunctionToolParam).validate_python(d)
            assert model.function.name in {"rich", "noargs"}
            assert model.function.strict is (True if fmt == "openai-strict" else None)
            assert model.function.parameters == d["function"]["parameters"]


def test_openai_responses_validates_against_sdk_types(toolset: ToolSet) -> None:
    """Responses API tools are valid FunctionTool data and carry the required strict flag."""
    for fmt, strict in (("openai-responses", False), ("openai-responses-strict", True)):
        for d in toolset.definitions(fmt):
            model = FunctionTool.model_validate(d)
            TypeAdapter(FunctionToolParam).validate_python(d)
            assert model.strict is strict
            assert model.type == "function"


def test_strict_schemas_follow_strict_rules(toolset: ToolSet) -> None:
    """Every strict schema is closed, lists every property as required and keeps only accepted keywords."""
    for d in toolset.definitions("openai-strict"):
        schema = d["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert_strict(schema)


def test_strict_optional_fields_become_nullable_with_a_hint(toolset: ToolSet) -> None:
    """Optional properties accept null, say what null means, and required ones stay non-null."""
    props = toolset.definitions("openai-strict")[0]["function"]["parameters"]["properties"]
    assert props["path"]["type"] == "string"
    assert props["offset"]["type"] == ["integer", "null"]
    assert props["offset"]["description"] == "First line to read (default: 0; null keeps it)"
    assert props["mode"]["enum"] == ["text", "bytes", None]
    assert {"type": "null"} in props["maybe_point"]["anyOf"]
    assert "maxLength" not in json.dumps(props["name"])
    assert props["name"]["pattern"] == r"^\w+$"
    assert props["origin"]["properties"]["x"]["description"] == "Horizontal."
    assert '"default":' not in json.dumps(props)


def test_strict_instance_round_trips_into_args() -> None:
    """A reply shaped by the strict schema (nulls for optional fields) validates as the tool's Args."""
    schema = RichArgs.model_json_schema()
    strict = to_strict_schema(schema, tool="rich")
    reply: dict[str, Any] = dict.fromkeys(strict["properties"])
    reply["path"] = "a.txt"
    reply["origin"] = {"x": 1, "y": None, "label": None}
    reply["points"] = [{"x": 2, "y": None, "label": "p"}]
    reply["pet"] = {"kind": "dog", "good": None}
    jsonschema.validate(reply, strict)
    args = RichArgs.model_validate(drop_optional_nulls(reply, schema, schema))
    assert args.offset == 0
    assert args.mode == "text"
    assert args.origin.y == 0
    assert args.points[0].label == "p"
    assert args.points[0].y == 0
    assert isinstance(args.pet, Dog)
    assert args.pet.good is True
    assert args.limit is None
    assert args.maybe_point is None


def test_strict_keeps_recursion_in_defs() -> None:
    """A recursive model stays a $ref into $defs instead of being inlined forever."""
    strict = to_strict_schema(TreeArgs.model_json_schema(), tool="tree")
    assert strict["properties"]["root"] == {"$ref": "#/$defs/Node"}
    node = strict["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert_strict(strict)
    jsonschema.validate(
        {"root": {"value": 1, "children": [{"value": 2, "children": None}]}}, strict
    )


@pytest.mark.parametrize(
    ("args", "path", "words"),
    [
        (MapArgs, "properties.env", "open mapping"),
        (AnyArgs, "properties.value", "any type"),
        (TupleArgs, "properties.pair", "tuples"),
    ],
)
def test_strict_refuses_what_it_cannot_express(
    args: type[BaseModel], path: str, words: str
) -> None:
    """A schema that cannot be made strict raises a UsageError naming the tool and the place."""
    ts = _set(_tool("bad", args, "Bad. Not for use."))
    with pytest.raises(UnsupportedSchemaError) as info:
        ts.definitions("openai-strict")
    err = info.value
    assert isinstance(err, UsageError)
    assert (err.tool, err.path, err.format) == ("bad", path, "openai-strict")
    assert words in err.reason
    assert "'bad'" in str(err)
    assert ts.definitions("openai")[0]["function"]["name"] == "bad"  # plain mode still works


def test_anthropic_validates_against_sdk_types(toolset: ToolSet) -> None:
    """Anthropic tools are valid ToolParam data with the schema under input_schema."""
    adapter = TypeAdapter(anthropic_types.ToolParam)
    for d, entry in zip(toolset.definitions("anthropic"), toolset, strict=True):
        adapter.validate_python(d)
        assert list(d["input_schema"]["properties"]) == list(entry.input_schema["properties"])


def test_mcp_validates_against_sdk_types(toolset: ToolSet) -> None:
    """MCP definitions are valid mcp.types.Tool data with a read-only hint."""
    for d in toolset.definitions("mcp"):
        tool = mcp_types.Tool.model_validate(d)
        assert tool.input_schema == d["inputSchema"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is False


def test_gemini_validates_against_sdk_types(toolset: ToolSet) -> None:
    """Gemini declarations validate as FunctionDeclaration (which forbids unknown fields) and dump back unchanged."""
    for d in toolset.definitions("gemini"):
        decl = genai_types.FunctionDeclaration.model_validate(d)
        assert decl.model_dump(mode="json", by_alias=True, exclude_none=True) == d


def test_gemini_maps_types_and_unions(toolset: ToolSet) -> None:
    """Gemini gets upper-case types, nullable instead of null unions, string enums and inlined refs."""
    rich, noargs = toolset.definitions("gemini")
    assert "parameters" not in noargs
    params = rich["parameters"]
    props = params["properties"]
    assert params["type"] == "OBJECT"
    assert params["required"] == ["path", "origin"]
    assert params["propertyOrdering"] == list(RichArgs.model_fields)
    assert props["limit"] == {"type": "INTEGER", "nullable": True, "maximum": 1000}
    assert props["level"]["enum"] == ["1", "2"]
    assert props["level"]["format"] == "enum"
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["color"]["type"] == "STRING"
    assert props["fixed"]["enum"] == ["7"]
    assert props["origin"]["properties"]["x"]["type"] == "INTEGER"
    assert props["maybe_point"]["nullable"] is True
    assert [v["properties"]["kind"]["enum"] for v in props["pet"]["anyOf"]] == [["cat"], ["dog"]]
    assert "$defs" not in json.dumps(params)
    assert "$ref" not in json.dumps(params)


def test_gemini_refuses_recursion() -> None:
    """A recursive schema cannot be inlined for Gemini and says so, naming the tool."""
    with pytest.raises(UnsupportedSchemaError, match=r"tool 'tree' cannot be rendered as gemini"):
        gemini_schema(TreeArgs.model_json_schema(), tool="tree")


def test_gemini_handles_type_lists_and_free_values() -> None:
    """Type lists become anyOf or nullable; open mappings keep their value schema."""
    out = gemini_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": ["string", "integer"]},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "any": {},
            },
        }
    )
    props = out["properties"]
    assert props["a"] == {"type": "STRING", "nullable": True}
    assert props["b"] == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}
    assert props["env"] == {"type": "OBJECT", "additionalProperties": {"type": "STRING"}}
    assert props["any"] == {}
    genai_types.Schema.model_validate(out)


PROVIDER_FORMATS = sorted(f for f in FORMATS if f != "neutral")


@pytest.mark.parametrize("fmt", PROVIDER_FORMATS)
def test_provider_formats_leave_out_titles(toolset: ToolSet, fmt: str) -> None:
    """No provider format carries pydantic's title keywords (the model would pay for
    them on every turn); the neutral definition keeps the schema as declared."""
    assert '"title": "' not in json.dumps(toolset.definitions(fmt))
    neutral = toolset.definitions("neutral")[0]["input_schema"]
    assert neutral["title"] == "RichArgs"
    assert neutral["properties"]["offset"]["title"] == "Offset"


class Cover(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="The cover's title.")


class BookArgs(BaseModel):
    """A book."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="The book's title.")
    cover: Cover = Field(Cover(title="kept"), description="Its cover.")


@pytest.mark.parametrize("fmt", PROVIDER_FORMATS)
def test_properties_and_values_named_title_stay(fmt: str) -> None:
    """Only the title keyword goes: a property named title, and a default value holding
    a title key, are kept."""
    ts = _set(_tool("book", BookArgs, "Shelve a book. Not for magazines."))
    text = json.dumps(ts.definitions(fmt))
    assert '"title": {' in text  # the property
    assert text.count('"title": "') == text.count('"title": "kept"')
    if fmt != "openai-strict" and fmt != "openai-responses-strict":  # strict drops defaults
        assert '{"title": "kept"}' in text


def test_untitled_parts_are_shared_and_stripped_once() -> None:
    """Two schemas sharing their properties get untitled copies sharing theirs; the same
    schema twice gives the same copy; a part without a title is handed back as it is."""
    from toolweave.formats._frozen import freeze
    from toolweave.formats._schema import untitled

    untouched = freeze({"type": "string", "enum": ["title"]})
    properties = freeze({"title": {"title": "Title", "type": "string"}, "tag": untouched})
    one = freeze({"title": "One", "type": "object", "properties": properties})
    two = freeze({"title": "Two", "type": "object", "properties": properties})
    first, second = untitled(one), untitled(two)
    assert first == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "tag": {"type": "string", "enum": ["title"]}},
    }
    assert first["properties"] is second["properties"]
    assert first["properties"]["tag"] is untouched
    assert untitled(one) is first
    assert one["title"] == "One"  # the source is left as it was
    with pytest.raises(TypeError):
        first["properties"]["title"]["title"] = "x"  # type: ignore[index]


def test_tools_of_one_parameter_list_share_one_untitled_schema() -> None:
    """``@tool`` functions declaring the same parameters each keep their own title in
    the neutral schema, and are listed with one shared untitled schema."""

    async def first(city: str, days: int = 3) -> str:
        """Forecast. Not for history."""
        return city

    async def second(city: str, days: int = 3) -> str:
        """Alerts. Not for forecasts."""
        return city

    builder = ToolSetBuilder()
    builder.add(tool(first))
    builder.add(tool(second))
    ts = builder.build()
    one, two = (d["input_schema"] for d in ts.definitions("neutral"))
    assert (one["title"], two["title"]) == ("FirstArgs", "SecondArgs")
    a, b = (d["function"]["parameters"] for d in ts.definitions("openai"))
    assert a is b
    assert "title" not in a
    assert "title" not in a["properties"]["city"]
    assert a["required"] == ["city"]


def test_unknown_format_lists_the_known_ones(toolset: ToolSet) -> None:
    """An unknown format is a UsageError that lists every known format."""
    with pytest.raises(UsageError, match="openai-responses-strict"):
        toolset.definitions("cohere")


def test_underscores_name_the_same_format(toolset: ToolSet) -> None:
    """``openai_strict`` renders exactly what ``openai-strict`` renders."""
    assert toolset.definitions("openai_strict") == toolset.definitions("openai-strict")


def test_render_does_not_mutate_the_tool_schema(toolset: ToolSet) -> None:
    """Converting for strict mode and Gemini leaves the neutral schema untouched."""
    before = json.dumps(toolset.definitions("neutral"), sort_keys=True)
    render([e.definition for e in toolset], "openai-strict")
    render([e.definition for e in toolset], "gemini")
    assert json.dumps(toolset.definitions("neutral"), sort_keys=True) == before


def test_frozen_containers_are_frozen_throughout_and_shared() -> None:
    """A frozen container is frozen at every depth from its construction, so freezing
    it again returns it as it is (listings share the schema parts of their tools)."""
    import copy

    from toolweave.formats import FrozenDict, FrozenList
    from toolweave.formats._frozen import freeze

    made = FrozenDict({"a": [1, {"b": [2]}]}, c={"d": 3})
    assert type(made["a"]) is FrozenList
    assert type(made["a"][1]["b"]) is FrozenList
    assert isinstance(made["c"], FrozenDict)
    with pytest.raises(TypeError):
        made["c"]["d"] = 4
    assert freeze(made) is made
    assert freeze(made["c"]) is made["c"]
    assert freeze({"x": made})["x"] is made
    with pytest.raises(TypeError):
        made["a"][1]["b"].append(3)
    plain = copy.deepcopy(made)
    plain["a"][1]["b"].append(3)
    assert made == {"a": [1, {"b": [2]}], "c": {"d": 3}}


def test_serialised_definitions_are_encoded_once_per_format() -> None:
    """``definitions_json`` is the listing as compact UTF-8 JSON, the same bytes object
    on every request; text UTF-8 cannot carry is escaped, never invalid."""
    from toolweave import tool
    from toolweave.formats import encode

    @tool(blocking=False)
    def greet(name: str) -> str:
        """Say grüß dich to someone."""
        return name

    builder = ToolSetBuilder()
    builder.add(greet)
    toolset = builder.build()
    first = toolset.definitions_json("openai")
    assert first is toolset.definitions_json("openai")
    assert json.loads(first) == toolset.definitions("openai")
    assert "grüß".encode() in first
    assert b", " not in first
    assert json.loads(toolset.definitions_json("anthropic")) == toolset.definitions("anthropic")
    odd = encode([{"description": "lone \ud800 surrogate"}])
    assert json.loads(odd) == [{"description": "lone \ud800 surrogate"}]
    odd.decode("utf-8")  # valid UTF-8
    with pytest.raises(UsageError):
        toolset.definitions_json("nope")
