"""The listing of many tools that declare the same parameters: each tool's definition is
its own and exactly what pydantic says, the parts shared between tools are assembled once
and are read-only, and what a listing hands out cannot be edited."""

from __future__ import annotations

import copy
import enum
import json
import pickle
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from toolweave import Context, Tool, ToolSet, ToolSetBuilder, tool
from toolweave.catalog._arguments import ArgumentsJsonSchema, model_arguments
from toolweave.catalog._toolset import ToolDefinition
from toolweave.formats import FORMATS, FrozenDict, render
from toolweave.formats._frozen import Prefrozen, freeze
from toolweave.formats.mcp import hints as mcp_hints


class Priority(enum.StrEnum):
    LOW = "low"
    HIGH = "high"


class Location(BaseModel):
    """Where in the code."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="File path.")
    line: int = Field(ge=1)
    column: int | None = Field(default=None, ge=1)


class Assignee(BaseModel):
    """A person."""

    name: str = Field(max_length=64)
    priority: Priority = Priority.LOW


NAMES: dict[str, Any] = {
    "Annotated": Annotated,
    "Field": Field,
    "Priority": Priority,
    "Location": Location,
    "Assignee": Assignee,
}

# The benchmark's realistic tool: constraints written per function (a Field(...) object
# of its own in every tool), an enum, a list with max_length, a nested model, an optional
# list of models holding an enum, an optional constrained int, a bool default.
REALISTIC = (
    "title: Annotated[str, Field(min_length=1, max_length=200)], "
    "body: Annotated[str, Field(max_length=10_000)], priority: Priority, "
    "labels: Annotated[list[str], Field(max_length=10)], location: Location, "
    "assignees: Annotated[list[Assignee] | None, Field(max_length=5)] = None, "
    "due_in_days: Annotated[int | None, Field(ge=0, le=365)] = None, draft: bool = False"
)
ARGS_DOC = """
    Args:
        title: One-line summary.
        body: What happens.
        priority: How urgent it is.
        labels: Labels to attach.
        location: Where in the code.
        assignees: People on the issue.
        due_in_days: Days until it is due.
        draft: Keep it as a draft.
"""


def _tool(name: str, signature: str = REALISTIC, doc: str = ARGS_DOC) -> Any:
    """An @tool function made from source, so that its annotations are evaluated anew."""
    namespace = dict(NAMES)
    summary = f"File an issue ({name})."
    exec(
        f'async def {name}({signature}) -> str:\n    """{summary}\n{doc}"""\n    return ""',
        namespace,
    )
    return tool(namespace[name])


def _build(*classes: Any) -> ToolSet:
    builder = ToolSetBuilder()
    for cls in classes:
        builder.add(cls)
    return builder.build()


def _pydantic(cls: Any) -> str:
    """What pydantic says: the JSON Schema of the tool's Args model (argument policy)."""
    schema = ArgumentsJsonSchema().generate(model_arguments(cls.args_model, strict=False)[0])
    return json.dumps(schema)


def test_every_tool_lists_the_schema_pydantic_gives_it() -> None:
    """Tools listed with the first that declares their parameters, and tools of a set
    built after that listing (their schema is copied when they are registered), list
    pydantic's own schema, byte for byte, each under its own title."""
    first = [_tool(f"first_{i}") for i in range(3)]
    toolset = _build(*first)
    listed = toolset.definitions("neutral")
    later = [_tool(f"later_{i}") for i in range(3)]
    again = _build(*later).definitions("neutral")
    for cls, definition in zip(first + later, listed + again, strict=True):
        parameters = definition["input_schema"]
        assert json.dumps(parameters) == _pydantic(cls)
        assert definition["name"] == cls.id
        assert definition["description"] == f"File an issue ({cls.id})."
    titles = {d["input_schema"]["title"] for d in listed + again}
    assert len(titles) == 6


def test_tools_of_the_same_types_keep_their_own_descriptions_and_defaults() -> None:
    """Two tools of the same parameter types whose docstrings or defaults differ: each
    lists its own words and defaults; tools that declare the same parameters share them."""
    signature = "a: Annotated[int, Field(ge=0)], b: Location | None = None, c: float = 0.0"
    other_doc = "\n    Args:\n        a: Another count.\n        b: Another place.\n"
    tools = {
        "plain": _tool("plain", signature, ""),
        "worded": _tool("worded", signature, "\n    Args:\n        a: A count.\n"),
        "reworded": _tool("reworded", signature, other_doc),
        "negative": _tool("negative", signature.replace("0.0", "-0.0"), ""),
        "integral": _tool("integral", signature.replace("float = 0.0", "int = 0"), ""),
        "twin": _tool("twin", signature, ""),
    }
    toolset = _build(*tools.values())
    schemas = {e.name: e.definition.input_schema for e in toolset}
    for name, cls in tools.items():
        assert json.dumps(schemas[name]) == _pydantic(cls), name
    assert "description" not in schemas["plain"]["properties"]["a"]
    assert schemas["worded"]["properties"]["a"]["description"] == "A count."
    assert schemas["reworded"]["properties"]["a"]["description"] == "Another count."
    assert schemas["reworded"]["properties"]["b"]["description"] == "Another place."
    assert json.dumps(schemas["negative"]["properties"]["c"]["default"]) == "-0.0"
    assert json.dumps(schemas["integral"]["properties"]["c"]["default"]) == "0"
    assert schemas["twin"]["properties"] is schemas["plain"]["properties"]
    assert schemas["twin"]["title"] != schemas["plain"]["title"]


def _generated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets ``"generate"`` for each JSON Schema generated from now on."""
    calls: list[str] = []
    original = ArgumentsJsonSchema.generate

    def generate(self: ArgumentsJsonSchema, schema: Any, mode: Any = "validation") -> Any:
        calls.append("generate")
        return original(self, schema, mode)

    monkeypatch.setattr(ArgumentsJsonSchema, "generate", generate)
    return calls


def test_a_set_of_known_parameters_generates_and_assembles_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once tools of some parameters were listed, a new set of such tools lists without
    generating a schema or assembling the shared parts again."""
    from toolweave.catalog import _arguments

    _build(_tool("seen")).definitions("openai")
    calls = _generated(monkeypatch)
    original = _arguments._assemble

    def assemble(shape: Any) -> Any:
        calls.append("assemble")
        return original(shape)

    monkeypatch.setattr(_arguments, "_assemble", assemble)
    toolset = _build(*[_tool(f"known_{i}") for i in range(20)])
    listing = toolset.definitions("openai")
    assert calls == []
    assert len({id(d["function"]["parameters"]["properties"]) for d in listing}) == 1


@pytest.mark.parametrize("format", sorted(FORMATS))
def test_nothing_a_listing_hands_out_can_be_edited(format: str) -> None:
    """Every dict and list of a listing refuses changes, at every depth, whether the
    tool's schema was assembled by the listing or copied when the tool was registered."""
    _build(_tool("warm")).definitions("openai")  # the next set's schemas are copies
    toolset = _build(_tool("edited"), _tool("edited_too", "x: int = 1"))
    listing = toolset.definitions(format)
    before = json.dumps(listing)
    containers = [c for definition in listing for c in _containers(definition)]
    assert len(containers) > 10
    for container in containers:
        assert isinstance(container, (FrozenDict, list))
        assert freeze(container) is container
        change = container.__setitem__ if isinstance(container, dict) else container.insert
        with pytest.raises(TypeError, match="read-only"):
            change(0, 1)
    for entry in toolset:
        with pytest.raises(TypeError, match="read-only"):
            entry.definition.input_schema["title"] = "changed"  # type: ignore[index]
    assert json.dumps(toolset.definitions(format)) == before


def _containers(value: Any) -> Any:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


def test_renamed_parameters_are_listed_read_only() -> None:
    """A tool whose parameter the configuration renames lists the client's name, in a
    schema as read-only as any other."""
    _build(_tool("renamed_warm", "path: str, line: int = 1")).definitions("openai")
    builder = ToolSetBuilder()
    builder.add(_tool("renamed", "path: str, line: int = 1"))
    toolset = builder.build({"tools": [{"id": "renamed", "rename": {"path": "file_path"}}]})
    (definition,) = toolset.definitions("openai")
    parameters = definition["function"]["parameters"]
    assert list(parameters["properties"]) == ["file_path", "line"]
    assert parameters["required"] == ["file_path"]
    with pytest.raises(TypeError, match="read-only"):
        parameters["properties"]["file_path"]["type"] = "integer"


class Args(BaseModel):
    """Arguments of a declared tool."""

    query: str = Field(description="What to look for.")
    limit: int = 10


class Search(Tool[Args, str]):
    id = "search"
    description = "Search."

    async def run(self, ctx: Context, args: Args) -> str:
        return args.query


def test_a_declared_args_model_is_generated_once_for_every_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sets built again and again from the same tool class list the schema generated
    once; a tool's input_schema is still a plain copy its caller owns."""
    first = _build(Search).definitions("neutral")[0]["input_schema"]
    calls = _generated(monkeypatch)
    toolset = _build(Search)
    again = toolset.definitions("neutral")[0]["input_schema"]
    assert again is first
    assert calls == []
    owned = toolset["search"].tool.input_schema
    owned["properties"]["query"]["description"] = "changed"
    assert owned != again
    assert json.dumps(again) == json.dumps(
        ArgumentsJsonSchema().generate(model_arguments(Args, strict=False)[0])
    )


def _plain(format: str, definition: ToolDefinition) -> Any:
    """What ``format`` says of ``definition`` in plain containers (the formats as they
    were written before they returned read-only containers)."""
    schema = definition.input_schema
    fn = {"name": definition.name, "description": definition.description}
    return {
        "openai": {"type": "function", "function": {**fn, "parameters": schema}},
        "openai-responses": {"type": "function", **fn, "parameters": schema, "strict": False},
        "anthropic": {**fn, "input_schema": schema},
        "mcp": {
            **fn,
            "inputSchema": schema,
            "annotations": mcp_hints(definition.read_only, definition.scope),
        },
    }[format]


@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic", "mcp"])
def test_formats_of_a_hand_made_definition_are_frozen_copies(format: str) -> None:
    """A definition made by hand with a plain schema: the format says the same JSON, in
    read-only containers, and leaves the caller's schema as it was (a frozen copy)."""
    schema: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
    definition = ToolDefinition("q", "Ask.", schema, "main:q", "other", True)
    (rendered,) = render([definition], format)
    assert json.dumps(rendered) == json.dumps(_plain(format, definition))
    assert all(isinstance(c, (FrozenDict, list)) for c in _containers(rendered))
    schema["properties"]["q"]["type"] = "integer"
    assert "integer" not in json.dumps(rendered)


def test_prefrozen_dicts_behave_as_frozen_dicts() -> None:
    """The containers listings are made of refuse changes and copy, deep-copy and pickle
    as plain dicts, like any FrozenDict."""
    made = Prefrozen({"a": 1}, b=FrozenDict({"c": [2]}))
    assert made == {"a": 1, "b": {"c": [2]}}
    assert isinstance(made, FrozenDict)
    changes: list[Callable[[], object]] = [
        lambda: made.__setitem__("a", 2),
        lambda: made.update(a=2),
        lambda: made.pop("a"),
        lambda: made.setdefault("d", 1),
        lambda: made.__delitem__("a"),
        made.clear,
    ]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    for plain in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(plain) is dict
        assert plain == made
    assert type(copy.deepcopy(made)["b"]["c"]) is list


# -- a tool whose arguments cannot be described -----------------------------------------


class Opaque:
    """A class pydantic has no schema for."""


def _opaque_tools() -> list[Any]:
    @tool(blocking=False)
    def opaque(x: Opaque) -> str:
        """Take an opaque thing. Not for anything else.

        Args:
            x: The thing.
        """
        return "x"

    class OpaqueArgs(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)

        x: Opaque

    class OpaqueModel(Tool[OpaqueArgs, str]):
        """Its Args model validates, but has no JSON Schema."""

        id = "opaque_model"

        async def run(self, ctx: Context, args: OpaqueArgs) -> str:
            return "x"

    @tool(blocking=False)
    def fine(text: str = "") -> str:
        """Say fine. Not for anything else.

        Args:
            text: Ignored.
        """
        return "fine"

    return [opaque, OpaqueModel, fine]


@pytest.mark.anyio
@pytest.mark.parametrize("first", ["listing", "call"])
async def test_a_tool_whose_schema_cannot_be_made_is_left_out_and_reported(
    first: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool with an argument type pydantic cannot describe passed the build (schemas
    are made on first use), then every listing of the whole set raised pydantic's error.
    It is left out of every listing (the others are listed), added to the set's report,
    named in a warning with its origin and reason, and its calls answer unavailable,
    whether it was first listed or first called. The build still makes no schema."""
    import logging

    from toolweave import ErrorKind
    from toolweave.errors import UnsupportedSchemaError

    builder = ToolSetBuilder()
    builder.add_all(_opaque_tools())
    toolset = builder.build()
    assert all(toolset[n].tool.listed_schema_if_made is None for n in ("opaque", "opaque_model"))
    session = toolset.session()
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        if first == "call":  # no validator either (opaque_model has one: it validates)
            called = await session.call("opaque", {"x": 1})
            assert called.error is not None
            assert called.error.kind is ErrorKind.UNAVAILABLE, called.text
        for format in ("neutral", "openai", "anthropic", "mcp", "gemini"):
            listed = toolset.definitions(format)
            assert len(listed) == 1, format
            assert len(session.definitions(format)) == 1
    assert [d["name"] for d in toolset.definitions("neutral")] == ["fine"]
    assert toolset.names == ["opaque", "opaque_model", "fine"]
    assert [(s.name, s.reason) for s in toolset.report.skipped] == [
        ("opaque", "schema"),
        ("opaque_model", "schema"),
    ]
    assert "registered by host" in toolset.report.skipped[0].message
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2
    assert "main:opaque, from host" in warned[0]
    assert "Opaque" in warned[0]
    for name in ("opaque", "opaque_model"):
        called = await session.call(name, {"x": 1})
        assert called.error is not None
        assert called.error.kind is ErrorKind.UNAVAILABLE
        assert "cannot be used" in called.text
        with pytest.raises(UnsupportedSchemaError):
            _ = toolset[name].input_schema
    assert (await session.call("fine", {})).text == "fine"
