"""Dependency expressions: the grammar, evaluation over a configured set, malformed input."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from toolweave import ExpressionError, SetView, ToolFacts, ToolSetBuilder, compile_expression, tool

VIEW = SetView(
    (
        ToolFacts("fs:read_file", "read", {"max_lines": 2000}, frozenset({"path", "offset"})),
        ToolFacts(
            "shell:bash",
            "execute",
            {"enabled_background": True, "max_timeout_ms": 120_000, "limits": {"cpu": 2}},
            frozenset({"command", "run_in_background"}),
        ),
        ToolFacts("plan:exit_plan", "plan"),
    )
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tool:bash", True),
        ("tool:shell:bash", True),
        ("tool:main:bash", False),
        ("tool:enter_plan", False),
        ("kind:read", True),
        ("kind:edit", False),
        ("namespace:fs", True),
        ("ns:web", False),
        ("param:bash.enabled_background", True),
        ("param:bash.enabled_background == true", True),
        ("param:bash.enabled_background==false", False),
        ("param:bash.enabled_background != false", True),
        ("param:bash.max_timeout_ms >= 60000", True),
        ("param:bash.max_timeout_ms < 60000", False),
        ("param:bash.max_timeout_ms == 120000.0", True),
        ("param:bash.limits.cpu == 2", True),
        ("param:bash.limits.memory == 2", False),
        ("param:bash.limits.memory != 2", False),
        ("param:*.max_lines > 100", True),
        ("param:read_file.max_lines == '2000'", False),
        ("param:read_file.max_lines > 'a'", False),
        ("param:bash.enabled_background == 1", False),
        ("param:exit_plan.anything", False),
        ("schema:bash.run_in_background", True),
        ("schema:*.run_in_background", True),
        ("schema:read_file.command", False),
        ("not kind:edit", True),
        ("kind:read and tool:bash", True),
        ("kind:edit or tool:exit_plan", True),
        ("not kind:read or kind:plan", True),
        ("not (kind:read or kind:plan)", False),
        ("kind:edit or kind:read and kind:lsp", False),
        ("(kind:edit or kind:read) and not kind:lsp", True),
        ("bash", True),
        ("enter_plan", False),
        ("read_file && !enter_plan", True),
        ("kind:edit || !(bash&&exit_plan)", False),
        ("!kind:edit", True),
        ("param:bash.max_timeout_ms != 1 && schema:bash.command", True),
    ],
)
def test_expression_evaluates_over_the_configured_set(text, expected):
    """Each predicate and combinator gives the documented answer for a known set."""
    assert compile_expression(text).evaluate(VIEW) is expected


def test_string_literals_compare_with_both_quote_styles():
    """Quoted strings in either quote style compare equal to string params."""
    view = SetView((ToolFacts("web:fetch", "web_fetch", {"mode": "safe it's"}),))
    assert compile_expression("""param:fetch.mode == "safe it's\"""").evaluate(view)
    assert compile_expression(r"param:fetch.mode == 'safe it\'s'").evaluate(view)


def test_empty_set_satisfies_only_negations():
    """Over an empty set, predicates are false and their negations true."""
    empty = SetView()
    assert not compile_expression("kind:read").evaluate(empty)
    assert compile_expression("not tool:bash").evaluate(empty)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty expression"),
        ("kind:read and", "unexpected end"),
        ("(kind:read", "missing ')'"),
        ("kind:read)", "unexpected ')'"),
        ("kind:reading", "unknown kind 'reading'"),
        ("colour:red", "unknown predicate 'colour:'"),
        ("true", "not a predicate"),
        ("bash.x", "not a predicate"),
        ("read_file &", "unexpected character '&'"),
        ("tool:", "needs a value"),
        ("tool:*", "tool: takes an id"),
        ("param:bash", "TOOL.FIELD"),
        ("schema:bash.a.b", "one top-level field"),
        ("kind:read == true", "only param: predicates can be compared"),
        ("param:bash.x == maybe", "expected true, false, null"),
        ("param:bash.x ==", "unexpected end"),
        ("__import__('os').system('true')", "unexpected character '.'"),
        ("kind:read; tool:bash", "unexpected character ';'"),
        ("and kind:read", "expected a predicate"),
    ],
)
def test_malformed_expression_raises_a_typed_error(text, reason):
    """Malformed text raises ExpressionError with the reason and a position, never runs code."""
    with pytest.raises(ExpressionError) as info:
        compile_expression(text)
    assert reason in str(info.value)
    assert 0 <= info.value.position <= len(text)


def test_non_string_expression_is_rejected():
    """Passing something other than text is a typed error, not a crash."""
    with pytest.raises(ExpressionError):
        compile_expression(42)  # type: ignore[arg-type]


def test_compiled_expressions_are_shared():
    """The same text compiles once; the result is reused."""
    assert compile_expression("kind:read") is compile_expression("kind:read")


def _function_tools(count: int, requires: dict[int, str]) -> list[Any]:
    """Distinct @tool functions; tool ``i`` declares ``requires[i]``; ``t1`` takes
    params, and ``t2``'s argument has an alias (only its model names it)."""

    class Limits(BaseModel):
        depth: int = 3

    tools: list[Any] = []
    for i in range(count):
        if i == 2:

            async def fn(a: Annotated[str, Field(alias="A")]) -> str:
                """Join."""
                return a

        else:

            async def fn(a: str, b: int = 0) -> str:  # type: ignore[misc]
                """Join."""
                return f"{a}:{b}"

        fn.__name__ = f"t{i}"
        tools.append(tool(requires=requires.get(i), params=Limits if i == 1 else None)(fn))
    return tools


def test_requirements_are_evaluated_without_models():
    """Requirements over ids, kinds and namespaces create no Args model and dump no
    params; ``schema:`` reads argument names of the tools it names only (from the
    signature, or from the model where an alias decides), ``param:`` dumps the params
    of the tools it names only."""
    dumps: list[str] = []
    original = BaseModel.model_dump

    def counting(self: BaseModel, **kwargs: Any) -> dict[str, Any]:
        dumps.append(type(self).__name__)
        return original(self, **kwargs)

    tools = _function_tools(
        100, {0: "tool:t9 and kind:other and ns:main", 5: "schema:t7.b", 6: "schema:t2.A"}
    )
    builder = ToolSetBuilder()
    builder.add_all(tools)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseModel, "model_dump", counting)
        toolset = builder.build()
        assert not [d for d in dumps if d == "Limits"]
    assert len(toolset) == 100
    assert [type(t).__name__ for t in tools if "args_model" in type(t).__dict__] == ["T2Tool"]

    tools = _function_tools(50, {0: "param:t1.depth == 3", 3: "param:t4.depth"})
    builder = ToolSetBuilder()
    builder.add_all(tools)
    dumps.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseModel, "model_dump", counting)
        toolset = builder.build()
    assert toolset.names[:3] == ["t0", "t1", "t2"]
    assert "t3" not in toolset
    assert dumps.count("Limits") == 1
    assert not any("args_model" in type(t).__dict__ for t in tools)


def test_lazy_facts_equal_given_ones():
    """Facts of a registered tool read the same as facts written out."""
    builder = ToolSetBuilder()
    builder.add_all(_function_tools(3, {}))
    toolset = builder.build()
    facts = toolset.view.tools
    assert facts[0] == ToolFacts("main:t0", "other", {}, frozenset({"a", "b"}), "t0")
    assert facts[1].params == {"depth": 3}
    assert facts[2].fields == frozenset({"A"})
