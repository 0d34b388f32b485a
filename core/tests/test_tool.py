"""The typed tool interface: Tool[Args, Output] classes and the @tool decorator."""

from __future__ import annotations

import inspect
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError
from toolweave import Capabilities, Context, Kind, Progress, Tool, ToolOutput, tool
from toolweave.catalog._erasure import erase

pytestmark = pytest.mark.anyio


class EchoArgs(BaseModel):
    """Arguments of echo."""

    text: str = Field(description="What to repeat.")
    """What to repeat."""


class EchoOutput(ToolOutput):
    """The echoed text."""

    text: str
    """The text."""


class Echo(Tool[EchoArgs, EchoOutput]):
    """A typed async tool."""

    id = "echo"
    kind = Kind.READ
    description = "Repeat the text."

    async def run(self, ctx: Context, args: EchoArgs) -> EchoOutput:
        """Echo the text back."""
        return EchoOutput(text=args.text)


class Countdown(Tool[EchoArgs, str]):
    """A streaming tool."""

    id = "countdown"
    namespace = "demo"

    async def stream(self, ctx: Context, args: EchoArgs) -> Any:
        """Yield progress, then the output."""
        yield Progress("tick")
        yield args.text


# -- Tool classes ---------------------------------------------------------------------


def test_generic_parameters_give_args_and_output() -> None:
    """Tool[Args, Output] records both types on the class."""
    assert Echo.args_model is EchoArgs
    assert Echo.output_type is EchoOutput
    assert Countdown.output_type is str


def test_subclasses_inherit_types_and_keep_their_own() -> None:
    """A subclass of a typed tool inherits its types; an output type it sets is kept."""

    class Loud(Echo):
        id = "loud"

    class Plain(Echo):
        id = "plain"
        output_type = str

    assert Loud.args_model is EchoArgs
    assert Loud.output_type is EchoOutput
    assert Plain.output_type is str


def test_metadata_defaults_and_fqid() -> None:
    """namespace defaults to main; fqid is namespace:id; kind defaults to other."""
    assert Echo().fqid == "main:echo"
    assert Countdown().fqid == "demo:countdown"
    assert Countdown.kind is Kind.OTHER
    assert Echo.version == "1"


def test_run_or_stream_is_detected() -> None:
    """is_streaming tells run-tools from stream-tools."""
    assert Echo.is_streaming() is False
    assert Countdown.is_streaming() is True


def test_every_designed_kind_exists() -> None:
    """Kind has every category of the design."""
    assert {k.name for k in Kind} == {
        "READ",
        "EDIT",
        "WRITE",
        "DELETE",
        "MOVE",
        "LIST_DIR",
        "SEARCH",
        "LSP",
        "EXECUTE",
        "WEB_SEARCH",
        "WEB_FETCH",
        "BACKGROUND_TASK_ACTION",
        "WAIT_TASKS_ACTION",
        "KILL_TASK_ACTION",
        "TASK",
        "IMAGE_GEN",
        "VIDEO_GEN",
        "IMAGE_TO_VIDEO",
        "ASK_USER",
        "PLAN",
        "MEMORY_SEARCH",
        "SKILL",
        "MONITOR",
        "OTHER",
    }


def test_read_only_is_inferred_from_kind_unless_declared() -> None:
    """Read kinds are read-only, write kinds are not; an explicit flag wins."""

    class Writer(Tool[EchoArgs, str]):
        id = "writer"
        kind = Kind.WRITE

        async def run(self, ctx: Context, args: EchoArgs) -> str:
            return ""

    class SafeWriter(Writer):
        id = "safe_writer"
        capabilities = Capabilities(read_only=True)

    class UnsafeReader(Echo):
        id = "unsafe_reader"
        capabilities = Capabilities(read_only=False, concurrency_safe=True)

    assert erase(Echo).read_only is True
    assert erase(Echo).concurrency_safe is True
    assert erase(Writer).read_only is False
    assert erase(Writer).concurrency_safe is False
    assert erase(SafeWriter).read_only is True
    assert erase(UnsafeReader).read_only is False
    assert erase(UnsafeReader).concurrency_safe is True


def test_erase_rejects_incomplete_tools() -> None:
    """A tool without id, without Args, or without run/stream fails at registration."""

    class NoId(Tool[EchoArgs, str]):
        async def run(self, ctx: Context, args: EchoArgs) -> str:
            return ""

    class NoArgs(Tool):  # type: ignore[type-arg]
        id = "no_args"

        async def run(self, ctx: Context, args: Any) -> str:
            return ""

    class NoBody(Tool[EchoArgs, str]):
        id = "no_body"

    with pytest.raises(TypeError, match="has no id"):
        erase(NoId)
    with pytest.raises(TypeError, match="Args model"):
        erase(NoArgs)
    with pytest.raises(TypeError, match="neither run"):
        erase(NoBody)


async def test_sync_run_hops_to_a_thread_unless_not_blocking(make_session: Any) -> None:
    """A plain-def run goes to a worker thread; blocking=False runs it on the loop."""
    seen: dict[str, int] = {}

    class Blocking(Tool[EchoArgs, str]):
        id = "blocking"

        def run(self, ctx: Context, args: EchoArgs) -> str:
            seen["blocking"] = threading.get_ident()
            return args.text

    class Inline(Tool[EchoArgs, str]):
        id = "inline"
        capabilities = Capabilities(blocking=False)

        def run(self, ctx: Context, args: EchoArgs) -> str:
            seen["inline"] = threading.get_ident()
            return args.text

    session = make_session(Blocking, Inline)
    assert erase(Inline).is_coroutine is False
    assert (await session.call("blocking", {"text": "a"})).text == "a"
    assert (await session.call("inline", {"text": "b"})).text == "b"
    loop_thread = threading.get_ident()
    assert seen["blocking"] != loop_thread
    assert seen["inline"] == loop_thread


# -- @tool ----------------------------------------------------------------------------


@tool(kind=Kind.SEARCH, blocking=False)
def find(pattern: str, limit: int = 10, mode: Literal["fast", "full"] = "fast") -> list[str]:
    """Find things matching a pattern.

    Searches everything it can see.

    Args:
        pattern (str): The pattern to look for;
            a regular expression.
        limit: Most results to return.
        mode: How hard to look.

    Returns:
        The matches.

    Raises:
        ValueError: Never.
    """
    return [pattern] * min(limit, 2)


def test_decorator_derives_args_from_signature() -> None:
    """Parameters become fields: required without default, typed, with defaults."""
    schema = erase(find).input_schema
    assert schema["required"] == ["pattern"]
    assert schema["properties"]["pattern"]["type"] == "string"
    assert schema["properties"]["limit"] == {
        "default": 10,
        "description": "Most results to return.",
        "title": "Limit",
        "type": "integer",
    }
    assert schema["properties"]["mode"]["enum"] == ["fast", "full"]
    assert schema["additionalProperties"] is False
    assert find.id == "find"
    assert find.kind is Kind.SEARCH
    assert find.output_type == list[str]


def test_decorator_reads_google_docstring() -> None:
    """The summary is the description; Args entries (multi-line, typed) describe fields."""
    props = erase(find).input_schema["properties"]
    assert props["pattern"]["description"] == "The pattern to look for; a regular expression."
    assert props["mode"]["description"] == "How hard to look."
    assert find.description == "Find things matching a pattern.\n\nSearches everything it can see."
    assert "Returns" not in find.description
    assert "Never" not in find.description


@tool
def find_sphinx(pattern: str, limit: int = 10) -> list[str]:
    """Find things matching a pattern.

    Searches everything it can see.

    :param pattern: The pattern to look for;
        a regular expression.
    :type pattern: str
    :param int limit: Most results to return.
    :returns: The matches.
    :rtype: list[str]
    :raises ValueError: Never.
    """
    return [pattern][:limit]


@tool
def find_numpy(pattern: str, limit: int = 10) -> list[str]:
    """Find things matching a pattern.

    Searches everything it can see.

    Parameters
    ----------
    pattern : str
        The pattern to look for;
        a regular expression.
    limit : int, optional
        Most results to return.

    Returns
    -------
    list of str
        The matches.

    Raises
    ------
    ValueError
        Never.
    """
    return [pattern][:limit]


@pytest.mark.parametrize("decorated", [find, find_sphinx, find_numpy], ids=lambda t: t.id)
def test_decorator_reads_each_docstring_style(decorated: Any) -> None:
    """Google, Sphinx and NumPy docstrings all describe the parameters, and none lets
    its Returns or Raises section into the description."""
    props = erase(decorated).input_schema["properties"]
    assert props["pattern"]["description"] == "The pattern to look for; a regular expression."
    assert props["limit"]["description"] == "Most results to return."
    assert decorated.description == (
        "Find things matching a pattern.\n\nSearches everything it can see."
    )


def test_a_docstring_without_sections_is_the_description() -> None:
    """A docstring without sections is the description as written, colons and all, and
    describes no parameter."""

    @tool
    def plain(path: str) -> str:
        """Read a file.

        Note that paths are relative: to the workspace.
          Indented lines stay as written.
        """
        return path

    assert plain.description == (
        "Read a file.\n\nNote that paths are relative: to the workspace.\n"
        "  Indented lines stay as written."
    )
    assert "description" not in erase(plain).input_schema["properties"]["path"]


def test_a_docstring_the_parser_cannot_read_is_the_description(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When docstring_parser refuses a docstring, the tool is still made: the whole
    docstring is its description."""
    import docstring_parser

    def refuse(text: str, style: Any) -> Any:
        raise docstring_parser.ParseError("unreadable")

    monkeypatch.setattr(docstring_parser, "parse", refuse)

    @tool
    def odd(x: int) -> int:
        """Odd.

        Args:
            x: A number.
        """
        return x

    assert odd.description == "Odd.\n\nArgs:\n    x: A number."
    assert "description" not in erase(odd).input_schema["properties"]["x"]


def test_decorator_options_override() -> None:
    """id, namespace, description and capabilities given to @tool win."""

    @tool(id="renamed", namespace="ns", description="Custom.", read_only=True, timeout=3)
    async def original(x: int) -> int:
        """Ignored summary."""
        return x

    assert original.id == "renamed"
    assert original.namespace == "ns"
    assert original.description == "Custom."
    assert original.capabilities.read_only is True
    assert original.capabilities.timeout == 3
    assert original.args_model.__name__ == "RenamedArgs"


def test_context_parameter_is_not_in_the_schema() -> None:
    """A parameter named ctx, or annotated Context, receives the context instead."""

    @tool
    async def by_name(ctx, x: int) -> int:  # type: ignore[no-untyped-def]
        """By name."""
        return x

    @tool
    async def by_type(context: Context, y: int) -> int:
        """By annotation."""
        return y

    assert by_name.takes_context is True
    assert by_type.takes_context is True
    assert list(erase(by_name).input_schema["properties"]) == ["x"]
    assert list(erase(by_type).input_schema["properties"]) == ["y"]


def test_field_defaults_and_annotated_are_kept() -> None:
    """A pydantic Field default and Annotated constraints reach the schema."""

    @tool
    async def bounded(
        n: Annotated[int, Field(ge=1, le=5)], label: str = Field("x", description="A label.")
    ) -> str:
        """Bounded."""
        return label * n

    props = erase(bounded).input_schema["properties"]
    assert props["n"]["minimum"] == 1
    assert props["n"]["maximum"] == 5
    assert props["label"] == {
        "default": "x",
        "description": "A label.",
        "title": "Label",
        "type": "string",
    }


def test_star_args_are_rejected() -> None:
    """*args and **kwargs cannot become a schema, so @tool refuses them."""
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):

        @tool
        def bad(*items: int) -> int:
            """Bad."""
            return 0


async def test_decorated_sync_and_async_functions_run(make_session: Any) -> None:
    """Sync and async functions both run; ctx is passed; blocking sync hops threads."""
    seen: dict[str, Any] = {}

    @tool
    async def a(ctx: Context, x: int) -> int:
        """Async with context."""
        seen["ctx"] = ctx
        return x + 1

    @tool
    def b(x: int) -> int:
        """Blocking sync."""
        seen["b_thread"] = threading.get_ident()
        return x * 2

    session = make_session(a, b, find)
    ra = await session.call("a", {"x": 1}, "id-1")
    assert ra.output == 2
    assert seen["ctx"].call_id == "id-1"
    assert seen["ctx"].session is session
    assert (await session.call("b", {"x": 4})).output == 8
    assert seen["b_thread"] != threading.get_ident()
    rf = await session.call("find", {"pattern": "p"})
    assert rf.output == ["p", "p"]
    assert rf.text == '["p","p"]'
    assert a.is_async is True
    assert b.is_async is False


async def test_decorated_functions_stay_callable(make_session: Any) -> None:
    """Calling an @tool function calls the function itself, sync or async, with or
    without a context, and the same object is still the tool a session calls."""

    @tool(blocking=False)
    def double(x: int) -> int:
        """Double."""
        return x * 2

    @tool
    async def increment(x: int) -> int:
        """Increment."""
        return x + 1

    @tool
    def where(ctx: Context, name: str) -> str:
        """Where, with the context."""
        return f"{ctx.call_id}:{name}"

    @tool
    async def where_async(ctx: Context, name: str) -> str:
        """Where, asynchronously."""
        return f"{ctx.call_id}:{name}"

    assert double(4) == 8
    assert await increment(x=1) == 2
    assert find("p", limit=1) == ["p"]
    session = make_session(double, increment, where, where_async)
    ctx = Context(session, None, "direct")
    assert where(ctx, "a") == "direct:a"
    assert await where_async(ctx, name="b") == "direct:b"
    assert (await session.call("double", {"x": 3})).output == 6
    assert (await session.call("where_async", {"name": "c"}, "id-7")).output == "id-7:c"
    with pytest.raises(TypeError):
        double()  # type: ignore[call-arg]


def test_decorated_functions_read_as_the_function() -> None:
    """Name, docstring and signature are the function's; @tool over a tool returns it
    unchanged, and options for one that is already a tool are refused."""
    assert find.__name__ == "find"
    assert (find.__doc__ or "").startswith("Find things")
    assert list(inspect.signature(find).parameters) == ["pattern", "limit", "mode"]
    assert tool(find) is find
    with pytest.raises(TypeError, match="already a tool"):
        tool(id="other")(find)


def test_decorated_model_is_built_lazily() -> None:
    """@tool and its registration create no Args model, and neither does a call: the
    arguments are validated into keyword arguments. Asking for the model creates it."""

    @tool
    async def lazy(x: int) -> int:
        """Lazy."""
        return x

    erased = erase(lazy)
    assert "args_model" not in type(lazy).__dict__
    assert erased.parse({"x": 1}) == {"x": 1}
    assert "args_model" not in type(lazy).__dict__
    assert lazy.args_model.__pydantic_complete__ is True
    assert erased.args_model is lazy.args_model
    assert erased.parse(lazy.args_model(x=2)) == {"x": 2}


def _many_tools(count: int, *, requires: str | None = None) -> list[Any]:
    """Distinct decorated tools, as a large pack would register them."""
    tools: list[Any] = []
    for i in range(count):

        async def fn(a: str, b: int = 0) -> str:
            """Join."""
            return f"{a}:{b}"

        fn.__name__ = f"t{i}"
        tools.append(tool(requires=requires if i == 0 else None)(fn))
    return tools


async def test_decorated_args_models_are_created_only_when_asked_for(
    make_session: Any,
) -> None:
    """Building a set of many @tool tools creates no Args model, nor does calling or
    listing them; asking for the model creates it."""
    tools = _many_tools(200)
    session = make_session(*tools)
    assert not any("args_model" in type(t).__dict__ for t in tools)
    result = await session.call("t150", '{"a": "x", "b": 2}')
    assert result.output == "x:2"
    assert not any("args_model" in type(t).__dict__ for t in tools)
    defs = session.definitions("openai")
    assert len(defs) == 200
    assert set(defs[7]["function"]["parameters"]["properties"]) == {"a", "b"}
    assert not any("args_model" in type(t).__dict__ for t in tools)
    neutral = session.definitions("neutral")[7]["input_schema"]
    assert neutral == tools[7].args_model.model_json_schema()
    assert "args_model" in type(tools[7]).__dict__


def test_a_requirement_reads_fields_of_lazy_tools(make_session: Any) -> None:
    """A requirement over argument names still sees the fields of tools whose Args model
    was not created yet."""
    met = make_session(*_many_tools(3, requires="schema:t2.a"))
    assert [d["function"]["name"] for d in met.definitions("openai")] == ["t0", "t1", "t2"]
    unmet = make_session(*_many_tools(3, requires="schema:t2.zzz"))
    assert [d["function"]["name"] for d in unmet.definitions("openai")] == ["t1", "t2"]


def test_bare_ids_resolve_through_the_index() -> None:
    """A bare id resolves to that id in every namespace, in registration order, and
    forgets the namespaces whose registrations were removed."""
    from toolweave.catalog import Catalog

    registry = Catalog()
    for namespace, origin in (("a", "pa"), ("b", "pb"), ("c", "pc")):
        registry.register(erase(tool(namespace=namespace, id="same")(_join), origin))
    registry.register(erase(tool(namespace="a", id="other")(_join), "pa"))
    assert registry.resolve("same") == ["a:same", "b:same", "c:same"]
    assert registry.resolve("b:same") == ["b:same"]
    assert registry.remove_origin("pb") == ["b:same"]
    assert registry.resolve("same") == ["a:same", "c:same"]
    registry.remove_origin("pa")
    assert registry.resolve("same") == ["c:same"]
    assert registry.resolve("other") == []


async def _join(a: str) -> str:
    """Join."""
    return a


def test_tool_outputs_build_their_validator_on_first_use() -> None:
    """A ToolOutput subclass costs no validator when its module is imported; the first
    instance builds it, and it validates as any model."""

    class Counted(ToolOutput):
        n: int

    assert Counted.__pydantic_complete__ is False
    assert Counted(n=2).to_model() == '{"n":2}'
    assert Counted.__pydantic_complete__ is True
    with pytest.raises(ValidationError):
        Counted(n="two")  # type: ignore[arg-type]
