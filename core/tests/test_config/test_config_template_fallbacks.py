"""Optional placeholders: ``{tool:<kind>|fallback}`` names a tool that may be absent."""

from __future__ import annotations

import pytest
from toolweave import Kind, TemplateRenderer, ToolSetBuilder, tool

RENDERER = TemplateRenderer.from_tools([("fs:read_file", "read", "Read")])


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("Use {tool:read|the file reader}.", "Use Read."),
        ("Use {tool:edit|an editor}.", "Use an editor."),
        ("Use {name:read_file|the reader}.", "Use Read."),
        ("Use {name:plan:exit_plan|a plan tool} now.", "Use a plan tool now."),
        ("[{tool:list_dir|}]", "[]"),
        ("Literal {{tool:edit|an editor}}", "Literal {tool:edit|an editor}"),
        ("Keep `a|b` and {a,b|c}", "Keep `a|b` and {a,b|c}"),
    ],
)
def test_fallback_stands_in_for_an_absent_tool(text: str, rendered: str) -> None:
    """A configured tool renders as its name; an absent one as the fallback, no problem."""
    assert RENDERER.render(text) == (rendered, [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{tool:editing|an editor}", "unknown kind 'editing'"),
        ("{tools:read|a reader}", "unknown placeholder {tools:...}"),
    ],
)
def test_a_fallback_does_not_hide_a_malformed_placeholder(text: str, message: str) -> None:
    """A typo in the kind or the word is still a problem: the fallback is for absence."""
    rendered, problems = RENDERER.render(text)
    assert rendered == text
    assert [(p.placeholder, message in p.message) for p in problems] == [(text, True)]


def test_the_same_missing_placeholder_is_one_problem() -> None:
    """A placeholder written twice that names no tool is reported once, at its first place."""
    text = "Use {tool:edit}, then {name:bash}, then {tool:edit} again."
    rendered, problems = RENDERER.render(text)
    assert rendered == text
    assert [p.placeholder for p in problems] == ["{tool:edit}", "{name:bash}"]


@tool(kind=Kind.LIST_DIR, blocking=False)
def lister(path: str) -> str:
    """List a folder. To read a file, use {tool:read|a file reader} instead."""
    return path


def test_a_tool_with_an_optional_placeholder_builds_alone(builder: ToolSetBuilder) -> None:
    """The optional form lets a tool be configured without the tool it mentions, and
    names that tool (renamed) when it is configured."""
    builder.add(lister)
    alone = builder.build({"tools": ["lister"]})
    assert alone["lister"].description.endswith("use a file reader instead.")
    both = builder.build({"tools": ["lister", {"id": "read_file", "name": "Read"}, "edit_file"]})
    assert both["lister"].description.endswith("use Read instead.")
    issues = builder.validate({"tools": ["read_file"]})  # it names {tool:edit}
    assert [(i.tag, i.actual) for i in issues] == [("template", "{tool:edit}")]
