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
