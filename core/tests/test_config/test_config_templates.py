"""Description templates rendered from the configured set."""

from __future__ import annotations

import pytest
from toolweave import ConfigError, TemplateRenderer

RENDERER = TemplateRenderer.from_tools(
    [
        ("fs:read_file", "read", "Read"),
        ("search:grep", "search", "Grep"),
        ("search:glob", "search", "Glob"),
        ("plan:exit_plan", "plan", "ExitPlan"),
    ]
)


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("no placeholders", "no placeholders"),
        ("Use {tool:read}.", "Use Read."),
        ("{tool:search} first", "Grep first"),
        ("Call {name:exit_plan} or {name:plan:exit_plan}.", "Call ExitPlan or ExitPlan."),
        ('JSON {"a": 1} and {path} stay', 'JSON {"a": 1} and {path} stay'),
        ("Literal {{tool:read}} stays", "Literal {tool:read} stays"),
    ],
)
def test_placeholders_render_client_names(text, rendered):
    """Kinds and ids render as client names; other braces are untouched; {{ }} escapes."""
    assert RENDERER.render(text) == (rendered, [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{tool:edit}", "no configured tool of kind 'edit'"),
        ("{tool:editing}", "unknown kind 'editing'"),
        ("{name:bash}", "no configured tool with id 'bash'"),
        ("{tools:read}", "unknown placeholder {tools:...}"),
        ("{tool:}", "unknown kind ''"),
    ],
)
def test_bad_placeholders_are_problems_and_stay_as_written(text, message):
    """A placeholder that cannot be rendered is reported and left in the text."""
    rendered, problems = RENDERER.render(f"a {text} b")
    assert rendered == f"a {text} b"
    assert [p.placeholder for p in problems] == [text]
    assert message in problems[0].message


def test_toolset_render_template_raises_template_issues(builder):
    """ToolSet.render_template renders against the set and raises ConfigError otherwise."""
    toolset = builder.build({"tools": [{"id": "exit_plan", "name": "Done"}, "enter_plan"]})
    assert toolset.render_template("Finish with {name:exit_plan}.") == "Finish with Done."
    with pytest.raises(ConfigError) as info:
        toolset.render_template("Then {tool:edit} and {x:y}.")
    assert [(i.tag, i.actual) for i in info.value.issues] == [
        ("template", "{tool:edit}"),
        ("template", "{x:y}"),
    ]


def test_render_template_reflects_the_final_set_in_read_only_mode(builder):
    """Prompts rendered from a read-only set only name tools the set really has."""
    toolset = builder.build({"mode": "read_only", "tools": ["read_file", "edit_file"]})
    assert toolset.render_template("{tool:read}") == "read_file"
    with pytest.raises(ConfigError):
        toolset.render_template("{tool:edit}")


def test_param_placeholders_name_the_tools_own_parameters_as_renamed():
    """{param:<name>} in a tool's own description renders its parameter's client name
    (renamed or not); an unknown parameter is a template problem at build, and the
    placeholder means nothing outside a tool's own description."""
    from toolweave import ToolSetBuilder, tool

    async def read(path: str, limit: int = 10) -> str:
        """Read a file: `{param:path}` relative to the workspace, `{param:limit}` lines
        at most; {param:offset|no offset}. Not for folders."""
        return path

    builder = ToolSetBuilder()
    builder.add(tool(read))
    renamed = builder.build({"tools": [{"id": "read", "rename": {"path": "file_path"}}]})
    assert renamed.entries[0].description.startswith(
        "Read a file: `file_path` relative to the workspace, `limit` lines\nat most; no offset."
    )
    assert "`path`" in builder.build().entries[0].description

    async def wrong(path: str) -> str:
        """Give {param:file}. Not for folders."""
        return path

    broken = ToolSetBuilder()
    broken.add(tool(wrong))
    with pytest.raises(ConfigError) as info:
        broken.build()
    assert [(i.tag, i.actual) for i in info.value.issues] == [("template", "{param:file}")]
    assert "no parameter 'file'" in info.value.issues[0].message
    with pytest.raises(ConfigError, match="only for a tool's own description"):
        renamed.render_template("Pass {param:path}.")


def test_another_version_renders_its_param_placeholders_with_the_entry_renames():
    """A version served in place of the configured one (gray release, rollback) names
    its parameters as the entry renames them."""
    from toolweave import ToolSetBuilder, tool

    @tool(id="read", version="1")
    async def read_v1(path: str, offset: int = 0) -> str:
        """Read from `{param:offset}` on. Not for folders."""
        return path

    @tool(id="read", version="2")
    async def read_v2(path: str, offset: int = 0) -> str:
        """Read from `{param:offset}` on, faster. Not for folders."""
        return path

    builder = ToolSetBuilder()
    builder.add(read_v1)
    builder.add(read_v2)
    toolset = builder.build(
        {"tools": [{"id": "read", "version": "2", "rename": {"offset": "skip"}}]}
    )
    older = toolset.version_entry(toolset.entries[0], "1")
    assert older is not None
    assert older.description == "Read from `skip` on. Not for folders."
