"""Loading configurations from data and files, checking them, and collecting every problem."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from toolweave import (
    ConfigError,
    PackManager,
    ToolConfig,
    ToolSetBuilder,
    ToolSetConfig,
    hookimpl,
)
from toolweave.plugins import check_config as check

TOML = """
mode = "read_only"
reminders = false
external_prefix = "mcp__"
timeout = 30

tools = ["exit_plan"]

[[tools]]
id = "fs:read_file"
name = "Read"
rename = { path = "file_path" }
params = { max_lines = 500 }

[[tools]]
id = "bash"
version = "1"
kind = "execute"
description = "Run {tool:read}."
"""

TOML_TOOLS_TABLES = """
mode = "read_only"
reminders = false
external_prefix = "mcp__"
timeout = 30

[[tools]]
id = "exit_plan"

[[tools]]
id = "fs:read_file"
name = "Read"
rename = { path = "file_path" }
params = { max_lines = 500 }

[[tools]]
id = "bash"
version = "1"
kind = "execute"
description = "Run {tool:read}."
"""

DATA = {
    "mode": "read_only",
    "reminders": False,
    "external_prefix": "mcp__",
    "timeout": 30,
    "tools": [
        "exit_plan",
        {
            "id": "fs:read_file",
            "name": "Read",
            "rename": {"path": "file_path"},
            "params": {"max_lines": 500},
        },
        {
            "id": "bash",
            "version": "1",
            "kind": "execute",
            "description": "Run {tool:read}.",
        },
    ],
}


def test_dict_json_and_toml_give_the_same_config(tmp_path):
    """One configuration written as a dict, a JSON file and a TOML file loads identically."""
    json_path = tmp_path / "tools.json"
    json_path.write_text(json.dumps(DATA))
    toml_path = tmp_path / "tools.toml"
    toml_path.write_text(TOML_TOOLS_TABLES)
    from_dict = ToolSetConfig.from_dict(DATA)
    assert ToolSetConfig.load(json_path) == from_dict
    assert ToolSetConfig.load(toml_path) == from_dict
    assert from_dict.tools is not None
    assert from_dict.tools[0] == ToolConfig(id="exit_plan")
    assert from_dict.tools[1].rename == {"path": "file_path"}
    assert from_dict.tools[2].kind == "execute"


def test_toml_mixing_an_array_and_tables_is_a_typed_error(tmp_path):
    """A TOML file that defines tools twice fails as invalid_config, not with a crash."""
    path = tmp_path / "tools.toml"
    path.write_text(TOML)
    with pytest.raises(ConfigError) as info:
        ToolSetConfig.load(path)
    assert info.value.issues[0].tag == "invalid_config"
    assert "not valid TOML" in info.value.issues[0].message


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.json", "{not json", "not valid JSON"),
        ("a.json", "[1, 2]", "must be a table/object"),
        ("a.toml", "tools = 3", "tools must be a list"),
        ("a.yaml", "tools: []", "must end in .json or .toml"),
        ("a.json", b"\xff\xfe{}", "cannot read"),
    ],
)
def test_malformed_files_raise_config_errors(tmp_path, name, content, message):
    """Every kind of broken file is a ConfigError with an invalid_config issue."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        ToolSetConfig.load(path)
    assert [i.tag for i in info.value.issues] == ["invalid_config"]
    assert message in str(info.value)


def test_missing_file_is_a_config_error(tmp_path):
    """A path that does not exist is reported, not raised as OSError."""
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        ToolSetConfig.load(tmp_path / "absent.toml")


def test_unknown_keys_are_rejected_with_their_paths():
    """Typos in keys are caught at every level, each with its path."""
    with pytest.raises(ConfigError) as info:
        ToolSetConfig.from_dict({"mod": "read_only", "tools": [{"id": "a", "param": {}}]})
    assert sorted(i.path for i in info.value.issues) == ["mod", "tools[0].param"]
    assert {i.tag for i in info.value.issues} == {"invalid_config"}
    assert {i.tool_id for i in info.value.issues} == {"", "a"}


def test_bad_mode_is_rejected():
    """Only the documented modes are accepted."""
    with pytest.raises(ConfigError, match="mode"):
        ToolSetConfig.from_dict({"mode": "write_only"})


def test_five_different_problems_yield_exactly_those_five(builder):
    """Unknown id, missing version, bad param, duplicate name and bad rename: five issues,
    one line each, in configuration order."""
    config = {
        "tools": [
            "read_file",
            "edit_file",
            "grpe",
            {"id": "grep", "version": "7"},
            {"id": "bash", "params": {"max_timeout_ms": 10**9}},
            {"id": "write_file", "name": "edit_file"},
            {"id": "exit_plan", "rename": {"reason": "why"}},
        ]
    }
    with pytest.raises(ConfigError) as info:
        builder.build(config)
    issues = info.value.issues
    assert [(i.tag, i.path) for i in issues] == [
        ("unknown_tool", "tools[2].id"),
        ("unknown_version", "tools[3].version"),
        ("invalid_params", "tools[4].params.max_timeout_ms"),
        ("duplicate_name", "tools[5].name"),
        ("invalid_rename", "tools[6].rename.reason"),
    ]
    text = str(info.value)
    assert text.startswith("5 configuration problems:\n")
    assert len(text.splitlines()) == 6
    assert all(str(issue) in text for issue in issues)


class SamplesPack:
    """A pack object registering the sample tools, as an installed pack would."""

    def __init__(self, tools):
        self.tools = tools

    @hookimpl
    def register_tools(self, builder):
        builder.add_all(self.tools)


def test_check_reports_problems_of_a_file_against_packs(tmp_path, samples):
    """check() loads a file, builds against the packs and returns every problem."""
    packs = PackManager()
    packs.add("samples", SamplesPack(samples.ALL))
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tools]]\nid = "edit_file"\n\n[[tools]]\nid = "nope"\n')
    issues = check(bad, packs)
    assert sorted(i.tag for i in issues) == ["dependency", "unknown_tool"]
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"tools": ["read_file", "edit_file"]}))
    assert check(good, packs) == []
    assert check(ToolSetConfig.from_dict({"tools": ["exit_plan"]}), packs) == []


def test_check_reports_unreadable_files_as_issues(tmp_path):
    """check() never raises for a broken file; it returns the problem."""
    path = tmp_path / "broken.toml"
    path.write_text("tools = [")
    [issue] = check(path, ToolSetBuilder())
    assert issue.tag == "invalid_config"


def test_builder_from_packs_builds_with_a_config(samples):
    """A pack manager's builder accepts a configuration like any other."""
    packs = PackManager()
    packs.add("samples", SamplesPack(samples.ALL))
    toolset = packs.builder().build({"tools": ["exit_plan", "enter_plan"]})
    assert toolset.names == ["exit_plan", "enter_plan"]
    assert toolset.session_setup == packs.setup_session


# -- reminders --------------------------------------------------------------------------------


def reminder(rid: str, requires: str | None) -> SimpleNamespace:
    return SimpleNamespace(id=rid, requires=requires)


def test_reminders_are_kept_only_when_their_requirement_holds(builder):
    """A reminder whose expression fails over the final set is left out."""
    builder.reminders += [
        reminder("always", None),
        reminder("after_edit", "kind:edit"),
        reminder("background", "param:bash.enabled_background == true"),
    ]
    toolset = builder.build({"tools": ["read_file", "edit_file", "bash"]})
    assert [r.id for r in toolset.reminders] == ["always", "after_edit"]
    read_only = builder.build({"mode": "read_only", "tools": ["read_file", "edit_file"]})
    assert [r.id for r in read_only.reminders] == ["always"]


def test_reminders_off_keeps_none(builder):
    """reminders = false leaves every reminder out."""
    builder.reminders.append(reminder("always", None))
    toolset = builder.build({"reminders": False, "tools": ["exit_plan"]})
    assert toolset.reminders == ()
    assert toolset.options["reminders"] is False


def test_malformed_reminder_requirement_is_a_dependency_issue(builder):
    """A reminder with a broken expression is reported by its id."""
    builder.reminders.append(reminder("todo_nag", "tool:todo_write or"))
    with pytest.raises(ConfigError) as info:
        builder.build({"tools": ["exit_plan"]})
    [issue] = info.value.issues
    assert (issue.tag, issue.tool_id) == ("dependency", "todo_nag")


# -- data no configuration file can hold --------------------------------------------------


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ({1: 2}, "got 1"),
        ({"tools": ["exit_plan"], None: 1}, "got None"),
        ({(1, 2): 1, "mode": "write_only"}, "got (1, 2)"),
    ],
    ids=["int", "none-beside-tools", "tuple-beside-a-bad-mode"],
)
def test_a_key_that_is_not_a_string_is_a_config_error_naming_it(
    builder: ToolSetBuilder, data: dict[object, object], shown: str
) -> None:
    """A configuration dict with a key that is not a string once made build() loop
    forever (its problem was never dropped from the options checked again); it is a
    ConfigError naming the key, and the other problems are still found."""
    with pytest.raises(ConfigError) as info:
        builder.build(data)  # type: ignore[arg-type]
    keys = [i for i in info.value.issues if "keys are names" in i.message]
    assert len(keys) == 1
    assert keys[0].tag == "invalid_config"
    assert shown in keys[0].message
    others = [i for i in info.value.issues if i not in keys]
    assert [i.path for i in others] == (["mode"] if "mode" in data else [])


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "config",
    [
        {"tools": [{"id": "read_file", "params": {"max_lines": "DEEP"}}]},
        {"tools": [{"id": "bash", "params": {"x": "DEEP"}}]},
        {"tools": [{"id": "bash", "kind": "DEEP"}]},
        {"mode": "DEEP"},
        {"tools": ["DEEP"]},
        {"surplus": "DEEP"},
    ],
    ids=["params-value", "unknown-param", "kind", "mode", "tool-entry", "unknown-key"],
)
def test_values_nested_100000_deep_are_config_errors(
    builder: ToolSetBuilder, config: dict[str, object]
) -> None:
    """A value nested 100,000 lists deep (pydantic, Python's repr and enum lookups all
    recurse on it) is a ConfigError, never a RecursionError; its message shows the
    value bounded."""
    deep = _nested(100_000, 1)

    def put(value: object) -> object:
        if value == "DEEP":
            return deep
        if isinstance(value, dict):
            return {k: put(v) for k, v in value.items()}
        if isinstance(value, list):
            return [put(v) for v in value]
        return value

    with pytest.raises(ConfigError) as info:
        builder.build(put(config))  # type: ignore[arg-type]
    assert info.value.issues
    assert len(str(info.value)) < 2_000
