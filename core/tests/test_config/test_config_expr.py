"""Dependency expressions: the grammar, evaluation over a configured set, malformed input."""

from __future__ import annotations

import pytest
from toolweave import ExpressionError, SetView, ToolFacts, compile_expression

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
