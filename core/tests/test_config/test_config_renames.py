"""Parameter and tool renames as the model sees them, in both directions."""

from __future__ import annotations

import json

import pytest

CONFIG = {
    "tools": [
        {"id": "read_file", "name": "Read", "rename": {"path": "file_path"}},
        {"id": "edit_file", "name": "Edit"},
        {
            "id": "bash",
            "name": "Shell",
            "rename": {"command": "cmd", "timeout_ms": "timeout"},
            "params": {"max_timeout_ms": 5000},
        },
    ]
}


def test_schema_shows_client_parameter_names(builder):
    """Renamed parameters appear under their client names in properties and required."""
    toolset = builder.build(CONFIG)
    read = toolset["Read"].input_schema
    assert list(read["properties"]) == ["file_path", "offset", "limit"]
    assert read["required"] == ["file_path"]
    assert "title" not in read["properties"]["file_path"]
    assert read["properties"]["file_path"]["description"].startswith("File path")
    shell = toolset["Shell"].input_schema
    assert set(shell["properties"]) == {"cmd", "timeout", "run_in_background"}
    assert shell["required"] == ["cmd"]
    openai = {d["function"]["name"]: d for d in toolset.definitions("openai")}
    assert "file_path" in openai["Read"]["function"]["parameters"]["properties"]
    assert "path" not in openai["Read"]["function"]["parameters"]["properties"]


def test_renamed_tool_is_named_in_other_descriptions(builder):
    """Templates in other tools' descriptions render the renamed client names."""
    toolset = builder.build(CONFIG)
    assert toolset["Read"].description == "Read a text file. Change it with Edit."
    assert toolset["Edit"].description == "Replace text in a file; read it first with Read."
    assert toolset.render_template("Use {tool:read}, then {name:bash}.") == "Use Read, then Shell."


@pytest.mark.anyio
async def test_model_call_with_client_names_reaches_the_tool_with_canonical_names(builder):
    """A model call using client names is translated back and validated canonically."""
    session = builder.build(CONFIG).session()
    result = await session.call("Shell", json.dumps({"cmd": "make", "timeout": 60_000}), "c1")
    assert result.error is None, result.text
    assert result.output == {"command": "make", "timeout_ms": 5000, "background": False}
    result = await session.call("Read", {"file_path": "a.txt", "offset": 3})
    assert result.error is None, result.text
    assert result.output == {"path": "a.txt", "offset": 3, "limit": None, "max": 2000}


@pytest.mark.anyio
async def test_validation_errors_use_client_names(builder):
    """Errors name the client's parameters, never the canonical ones."""
    session = builder.build(CONFIG).session()
    result = await session.call("Shell", {"timeout": "soon"})
    assert result.error is not None
    assert result.error.kind == "invalid_params"
    assert "`cmd` is required" in result.text
    assert "`timeout`:" in result.text
    assert "command" not in result.text
    assert "timeout_ms" not in result.text


@pytest.mark.anyio
async def test_unrenamed_tools_are_called_as_before(builder):
    """Tools without renames keep their canonical names end to end."""
    session = builder.build(CONFIG).session()
    result = await session.call("Edit", {"path": "a", "old_string": "x", "new_string": "y"})
    assert result.error is None
    assert result.output == "edited"


@pytest.mark.anyio
@pytest.mark.parametrize("as_json", [False, True])
async def test_canonical_name_of_a_renamed_parameter_is_not_accepted(builder, as_json):
    """`path` renamed to `file_path` is unknown to the model: alone or next to
    `file_path`, it is invalid_params naming both, and the tool does not run."""
    session = builder.build(CONFIG).session()
    cases = [
        ({"path": "a.txt"}, "`file_path` is required but missing"),
        ({"path": "a.txt", "file_path": "b.txt"}, None),
    ]
    for given, also in cases:
        arguments = json.dumps(given) if as_json else given
        result = await session.call("Read", arguments, "c1")
        assert result.error is not None, result.text
        assert result.error.kind == "invalid_params"
        assert result.output is None
        assert result.text.startswith("Invalid arguments for Read: ")
        assert "`path` is not a parameter of this tool (it is called `file_path` here)" in (
            result.text
        )
        if also is not None:
            assert also in result.text


@pytest.mark.anyio
async def test_json_null_and_non_objects_read_as_for_a_tool_without_renames(builder):
    """Renamed entries refuse `null`, lists and numbers exactly as plain entries do."""
    session = builder.build(CONFIG).session()
    for raw in ("null", "[1]", "3"):
        renamed = await session.call("Read", raw)
        plain = await session.call("Edit", raw)
        assert renamed.error is not None
        assert renamed.error.kind == "invalid_params"
        assert renamed.text == plain.text.replace("Edit", "Read")
