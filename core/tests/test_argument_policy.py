"""The argument policy: unknown fields rejected at every depth, strict or lax scalars
per tool, and model text that is always valid UTF-8."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolOutput, tool
from toolweave.catalog._erasure import erase

pytestmark = pytest.mark.anyio


class Todo(BaseModel):
    """A todo item written with pydantic's default ``extra="ignore"``."""

    content: str
    done: bool = False


class Loose(BaseModel):
    """A nested model whose author allows extra fields on purpose."""

    model_config = ConfigDict(extra="allow")
    name: str = ""


class TodoArgs(BaseModel):
    todos: list[Todo]
    loose: Loose | None = None


class WriteTodos(Tool[TodoArgs, str]):
    id = "write_todos"
    kind = Kind.EDIT

    async def run(self, ctx: Context, args: TodoArgs) -> str:
        return ",".join(t.content for t in args.todos)


@tool(kind=Kind.EDIT, blocking=False)
def add_todos(todos: list[Todo]) -> str:
    """Add todos.

    Args:
        todos: The items.
    """
    return ",".join(t.content for t in todos)


NESTED_EXTRA = {"todos": [{"content": "x", "approved": True}]}


@pytest.mark.parametrize("tool_cls", [WriteTodos, add_todos], ids=["class", "function"])
@pytest.mark.parametrize("as_text", [False, True], ids=["dict", "json"])
async def test_unknown_nested_fields_are_rejected(
    make_session: Any, tool_cls: Any, as_text: bool
) -> None:
    """An unknown field inside a nested model is invalid_params naming its path, for
    class tools and @tool functions, from JSON text and from a dict."""
    name = tool_cls.id
    raw = json.dumps(NESTED_EXTRA) if as_text else NESTED_EXTRA
    result = await make_session(tool_cls).call(name, raw)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`todos.0.approved` is not a parameter of this tool" in result.text


async def test_a_nested_model_that_allows_extras_keeps_its_choice(make_session: Any) -> None:
    """A nested model configured with extra="allow" still accepts extra fields."""
    result = await make_session(WriteTodos).call(
        "write_todos", {"todos": [{"content": "a"}], "loose": {"name": "n", "more": 1}}
    )
    assert result.error is None, result.text
    assert result.text == "a"


@pytest.mark.parametrize("tool_cls", [WriteTodos, add_todos], ids=["class", "function"])
def test_the_schema_closes_nested_objects(tool_cls: Any) -> None:
    """The JSON Schema tells the model that nested objects take no other fields."""
    schema = erase(tool_cls).input_schema
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Todo"]["additionalProperties"] is False
    if "Loose" in schema["$defs"]:
        assert schema["$defs"]["Loose"]["additionalProperties"] is True


def test_the_pack_authors_model_is_left_alone() -> None:
    """The policy applies to arguments only: the nested model itself still ignores extras
    and parsed arguments are instances of the author's classes."""
    erased = erase(WriteTodos)
    args = erased.parse({"todos": [{"content": "a"}]})
    assert type(args) is TodoArgs
    assert type(args.todos[0]) is Todo
    assert Todo.model_validate({"content": "x", "approved": True}).content == "x"


# -- strict or lax ------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


class Fields(BaseModel):
    count: int = 0
    ratio: float = 0.0
    flag: bool = False
    color: Color = Color.RED
    day: datetime.date = datetime.date(2024, 1, 1)
    todo: Todo | None = None


def _fields_tool(kind: Kind, strict: bool | None) -> type[Tool[Fields, str]]:
    class Echo(Tool[Fields, str]):
        id = "echo"
        capabilities = Capabilities(strict_arguments=strict, blocking=False)

        def run(self, ctx: Context, args: Fields) -> str:
            return args.model_dump_json()

    Echo.kind = kind
    return Echo


COERCIONS = [{"count": "5"}, {"count": True}, {"ratio": "1.5"}, {"flag": 1}, {"flag": "true"}]


@pytest.mark.parametrize("arguments", COERCIONS, ids=json.dumps)
@pytest.mark.parametrize("as_text", [False, True], ids=["dict", "json"])
async def test_tools_that_change_things_take_no_coercion(
    make_session: Any, arguments: dict[str, Any], as_text: bool
) -> None:
    """A tool that is not read-only rejects "5" for an int, true for an int, 1 for a bool."""
    session = make_session(_fields_tool(Kind.EDIT, None))
    raw = json.dumps(arguments) if as_text else arguments
    result = await session.call("echo", raw)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS


@pytest.mark.parametrize(
    ("kind", "strict"),
    [(Kind.READ, None), (Kind.EDIT, False)],
    ids=["read-only", "declared-lax"],
)
@pytest.mark.parametrize("arguments", COERCIONS, ids=json.dumps)
async def test_read_only_or_declared_lax_tools_coerce(
    make_session: Any, kind: Kind, strict: bool | None, arguments: dict[str, Any]
) -> None:
    """A read-only tool, or one declaring strict_arguments=False, coerces as pydantic does."""
    result = await make_session(_fields_tool(kind, strict)).call("echo", arguments)
    assert result.error is None, result.text


async def test_a_read_only_tool_may_declare_strict(make_session: Any) -> None:
    """strict_arguments=True makes a read-only @tool function strict too."""

    @tool(kind=Kind.READ, strict_arguments=True, blocking=False)
    def peek(count: int) -> str:
        """Peek.

        Args:
            count: How many.
        """
        return str(count)

    session = make_session(peek)
    assert (await session.call("peek", {"count": "5"})).error is not None
    assert (await session.call("peek", {"count": 5})).text == "5"


ORDINARY = {
    "count": 5,
    "ratio": 2,
    "flag": True,
    "color": "red",
    "day": "2024-02-03",
    "todo": {"content": "x"},
}


@pytest.mark.parametrize("as_text", [False, True], ids=["dict", "json"])
async def test_strict_accepts_ordinary_json(make_session: Any, as_text: bool) -> None:
    """Strict validation still takes what JSON carries: an int for a float, an enum by
    value, a date as an ISO string, a nested model as an object."""
    session = make_session(_fields_tool(Kind.EDIT, None))
    raw = json.dumps(ORDINARY) if as_text else ORDINARY
    result = await session.call("echo", raw)
    assert result.error is None, result.text
    assert json.loads(result.text) == {
        "count": 5,
        "ratio": 2.0,
        "flag": True,
        "color": "red",
        "day": "2024-02-03",
        "todo": {"content": "x", "done": False},
    }


# -- valid UTF-8 --------------------------------------------------------------------------

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
HOSTILE_TEXT = st.lists(SURROGATES | st.characters(), max_size=12).map("".join)
"""Text with lone and paired surrogates (``st.text`` never generates them)."""


class Echoed(ToolOutput):
    value: str


@tool(blocking=False)
def echo_text(value: Any = None) -> str:
    """Echo.

    Args:
        value: Anything.
    """
    return "x"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=HOSTILE_TEXT, value=HOSTILE_TEXT)
async def test_errors_about_hostile_arguments_are_valid_utf8(key: str, value: str) -> None:
    """Invalid arguments echoed into the error text never make it invalid UTF-8."""
    from toolweave import ToolSetBuilder

    builder = ToolSetBuilder()
    builder.add(WriteTodos)
    session = builder.build().session()
    for raw in (
        {key: value, "todos": [{"content": 1, value: key}]},
        {"todos": value},
        json.dumps({key: value}),
    ):
        result = await session.call("write_todos", raw)
        result.text.encode("utf-8")


def _returning(name: str, declared: Any, value: Any) -> type[Tool[Fields, Any]]:
    """A tool named ``name`` that returns ``value`` and declares ``declared`` as Output."""

    class Returns(Tool[Fields, Any]):
        id = name

        async def run(self, ctx: Context, args: Fields) -> Any:
            return value

    Returns.output_type = declared
    return Returns


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HOSTILE_TEXT)
async def test_hostile_tool_outputs_make_valid_utf8(text: str) -> None:
    """Whatever text a tool returns (a str, a model, a ToolOutput, a dict), the model
    text is valid UTF-8."""
    from toolweave import ToolSetBuilder

    outputs: dict[str, Any] = {
        "as_str": (str, text),
        "as_model": (Todo, Todo(content=text)),
        "as_output": (Echoed, Echoed(value=text)),
        "as_dict": (Any, {text: [text]}),
        "as_typed": (dict[str, list[str]], {text: [text]}),
    }
    builder = ToolSetBuilder()
    for name, (declared, value) in outputs.items():
        builder.add(_returning(name, declared, value))
    session = builder.build().session()
    for name in outputs:
        result = await session.call(name, {})
        assert result.error is None, result.text
        result.text.encode("utf-8")


def test_paired_surrogates_are_joined_and_lone_ones_replaced() -> None:
    """A surrogate pair becomes its character; a lone surrogate becomes U+FFFD."""
    erased = erase(echo_text)
    assert erased.finish("a\ud83d\ude00b\ud800") == ("a\U0001f600b\ufffd",) * 2
