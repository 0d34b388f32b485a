"""Each validation rule of a tool-set configuration, failing and passing."""

from __future__ import annotations

import pytest
from toolweave import ConfigError, ConfigIssue, ToolSetBuilder, ToolSetConfig


def issues_of(builder: ToolSetBuilder, config: dict) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as info:
        builder.build(config)
    assert list(info.value.issues) == builder.validate(config)
    return list(info.value.issues)


def tags(issues: list[ConfigIssue]) -> list[str]:
    return [i.tag for i in issues]


# -- ids -------------------------------------------------------------------------------------


def test_unknown_tool_is_reported_with_a_suggestion(builder):
    """A misspelt id is an unknown_tool issue that points at the entry and suggests the id."""
    [issue] = issues_of(builder, {"tools": ["red_file"]})
    assert issue.tag == "unknown_tool"
    assert issue.path == "tools[0].id"
    assert issue.actual == "red_file"
    assert "read_file" in issue.message


def test_known_tool_builds(builder):
    """A registered id builds, named by its bare id."""
    assert builder.build({"tools": ["write_file"]}).names == ["write_file"]


def test_bare_id_in_two_namespaces_is_ambiguous(make_builder, samples):
    """A bare id registered in two namespaces must be written namespace:id; the tool
    chosen keeps its bare id as its name (nothing else of that name is configured)."""

    class OtherBash(samples.Bash):
        namespace = "sandbox"

    b = make_builder(samples.Bash, OtherBash)
    [issue] = issues_of(b, {"tools": ["bash"]})
    assert issue.tag == "ambiguous_id"
    assert sorted(issue.expected) == ["sandbox:bash", "shell:bash"]
    toolset = b.build({"tools": ["sandbox:bash"]})
    assert toolset.names == ["bash"]
    assert toolset["bash"].tool.fqid == "sandbox:bash"


# -- params ------------------------------------------------------------------------------------


def test_params_failing_the_tool_validator_are_reported(builder):
    """A param outside the params model's bounds is an invalid_params issue at its path."""
    [issue] = issues_of(builder, {"tools": [{"id": "bash", "params": {"max_timeout_ms": -5}}]})
    assert issue.tag == "invalid_params"
    assert issue.path == "tools[0].params.max_timeout_ms"
    assert issue.actual == -5


def test_unknown_param_is_reported_with_a_suggestion(builder):
    """A param the tool does not have is reported even when the model would ignore it."""
    [issue] = issues_of(builder, {"tools": [{"id": "bash", "params": {"max_timeout": 5}}]})
    assert issue.tag == "invalid_params"
    assert issue.path == "tools[0].params.max_timeout"
    assert "max_timeout_ms" in issue.message


def test_params_for_a_tool_without_params_are_reported(builder):
    """Params given to a tool that declares no params model are a problem."""
    [issue] = issues_of(builder, {"tools": [{"id": "write_file", "params": {"x": 1}}]})
    assert issue.tag == "invalid_params"
    assert "takes no params" in issue.message


def test_effective_params_merge_overrides_over_defaults(builder, samples):
    """Overrides win, unspecified params keep their defaults, and the entry carries them."""
    toolset = builder.build({"tools": [{"id": "bash", "params": {"enabled_background": True}}]})
    params = toolset["bash"].params
    assert isinstance(params, samples.BashParams)
    assert params.enabled_background is True
    assert params.max_timeout_ms == 120_000


@pytest.mark.anyio
async def test_effective_params_reach_the_tool_during_a_call(builder):
    """The tool reads the configured params with ctx.params and clamps with them."""
    toolset = builder.build({"tools": [{"id": "bash", "params": {"max_timeout_ms": 1000}}]})
    result = await toolset.session().call("bash", {"command": "ls", "timeout_ms": 50_000})
    assert result.error is None
    assert result.output["timeout_ms"] == 1000


# -- names -------------------------------------------------------------------------------------


def test_duplicate_client_names_are_reported(builder):
    """Two entries with one client-visible name are a duplicate_name issue on the second."""
    [issue] = issues_of(
        builder, {"tools": ["read_file", {"id": "write_file", "name": "read_file"}, "edit_file"]}
    )
    assert issue.tag == "duplicate_name"
    assert issue.path == "tools[1].name"
    assert "tools[0]" in issue.message


def test_one_tool_may_be_configured_twice_under_two_names(builder, samples):
    """The same tool under two names with different params gives two independent entries."""
    toolset = builder.build(
        {
            "tools": [
                {"id": "bash", "name": "bash_quick", "params": {"max_timeout_ms": 1000}},
                {"id": "bash", "name": "bash_long", "params": {"max_timeout_ms": 600_000}},
            ]
        }
    )
    assert toolset.names == ["bash_quick", "bash_long"]
    assert toolset["bash_quick"].params.max_timeout_ms == 1000
    assert toolset["bash_long"].params.max_timeout_ms == 600_000


def test_invalid_client_name_is_rejected_when_loading():
    """A client name a provider would refuse is caught by the configuration model."""
    with pytest.raises(ConfigError) as info:
        ToolSetConfig.from_dict({"tools": [{"id": "bash", "name": "run a command"}]})
    [issue] = info.value.issues
    assert issue.tag == "invalid_config"
    assert issue.path == "tools[0].name"


# -- renames -----------------------------------------------------------------------------------


def test_renaming_a_missing_parameter_is_reported(builder):
    """A rename of a parameter the tool does not have lists the real parameters."""
    [issue] = issues_of(
        builder, {"tools": [{"id": "read_file", "rename": {"file": "p"}}, "edit_file"]}
    )
    assert issue.tag == "invalid_rename"
    assert issue.path == "tools[0].rename.file"
    assert issue.expected == ["limit", "offset", "path"]


def test_renaming_onto_an_existing_parameter_is_reported(builder):
    """Renaming path to offset would make two parameters one name."""
    [issue] = issues_of(
        builder, {"tools": [{"id": "read_file", "rename": {"path": "offset"}}, "edit_file"]}
    )
    assert issue.tag == "invalid_rename"
    assert issue.actual == "offset"


def test_two_renames_onto_one_name_are_reported(builder):
    """Two parameters renamed to the same client name collide."""
    config = {"tools": [{"id": "read_file", "rename": {"offset": "n", "limit": "n"}}, "edit_file"]}
    [issue] = issues_of(builder, config)
    assert issue.tag == "invalid_rename"
    assert "'limit' and 'offset'" in issue.message


def test_swapping_two_parameter_names_is_allowed(builder):
    """A rename may swap two names, since the final names are still unique."""
    swap = {"offset": "limit", "limit": "offset"}
    config = {"tools": [{"id": "read_file", "rename": swap}, "edit_file"]}
    schema = builder.build(config)["read_file"].input_schema
    assert set(schema["properties"]) == {"path", "offset", "limit"}
    assert schema["properties"]["limit"]["default"] == 0


# -- mutual exclusion --------------------------------------------------------------------------


@pytest.mark.parametrize("order", [["edit_file", "apply_patch"], ["apply_patch", "edit_file"]])
def test_mutually_exclusive_tools_cannot_coexist(builder, order):
    """A conflict declared by one tool is found whichever of the two comes first."""
    [issue] = issues_of(builder, {"tools": ["read_file", *order]})
    assert issue.tag == "conflict"
    assert issue.path == "tools[2]"
    assert "declared by fs:apply_patch" in issue.message


def test_either_exclusive_tool_alone_builds(builder):
    """Each of two exclusive tools builds without the other."""
    assert builder.build({"tools": ["read_file", "edit_file"]}).names == ["read_file", "edit_file"]
    assert builder.build({"tools": ["apply_patch"]}).names == ["apply_patch"]


# -- dependencies ------------------------------------------------------------------------------


def test_edit_tool_requires_a_read_tool(builder):
    """edit_file (requires kind:read) fails without a read tool and builds with one."""
    issues = issues_of(builder, {"tools": ["edit_file"]})
    dependency = [i for i in issues if i.tag == "dependency"]
    assert len(dependency) == 1
    assert dependency[0].tool_id == "fs:edit_file"
    assert "kind:read" in dependency[0].message
    assert builder.build({"tools": ["read_file", "edit_file"]}).names == ["read_file", "edit_file"]


def test_a_rekinded_tool_satisfies_kind_read(builder):
    """kind:read looks at the effective kind, so a re-kinded tool can satisfy it."""
    toolset = builder.build({"tools": [{"id": "lint", "kind": "read"}, "edit_file"]})
    assert toolset.names == ["lint", "edit_file"]
    assert "read it first with lint" in toolset["edit_file"].description


def test_enter_plan_requires_exit_plan(builder):
    """enter_plan fails alone (one dependency issue: the `{name:exit_plan}` of its
    description is the same problem) and builds next to exit_plan."""
    [dependency] = issues_of(builder, {"tools": ["enter_plan"]})
    assert (dependency.tag, dependency.tool_id) == ("dependency", "plan:enter_plan")
    assert "tool:exit_plan" in dependency.message
    assert builder.build({"tools": ["exit_plan", "enter_plan"]}).names == [
        "exit_plan",
        "enter_plan",
    ]


def test_background_output_requires_background_bash(builder):
    """task_output needs a bash whose params enable background execution."""
    config = {"tools": ["bash", "task_output"]}
    [issue] = issues_of(builder, config)
    assert issue.tag == "dependency"
    assert issue.tool_id == "shell:task_output"
    ok = {"tools": [{"id": "bash", "params": {"enabled_background": True}}, "task_output"]}
    assert builder.build(ok).names == ["bash", "task_output"]


def test_malformed_requirement_is_a_dependency_issue_not_a_crash(make_builder, samples):
    """A tool whose requires does not parse is reported by id with the reason."""

    class Broken(samples.WriteFile):
        id = "broken"
        requires = "kind:read and (tool:bash"

    b = make_builder(samples.ReadFile, Broken)
    [issue] = issues_of(b, {"tools": ["broken"]})
    assert issue.tag == "dependency"
    assert issue.tool_id == "fs:broken"
    assert "missing ')'" in issue.message


# -- templates ---------------------------------------------------------------------------------


def test_placeholder_for_a_kind_without_a_tool_is_a_template_issue(builder):
    """read_file's {tool:edit} fails when no edit tool is configured, and renders with one."""
    [issue] = issues_of(builder, {"tools": ["read_file"]})
    assert issue.tag == "template"
    assert issue.tool_id == "fs:read_file"
    assert issue.path == "tools[0]"
    assert issue.actual == "{tool:edit}"
    toolset = builder.build({"tools": ["read_file", {"id": "apply_patch", "name": "Patch"}]})
    assert toolset["read_file"].description == "Read a text file. Change it with Patch."


def test_unknown_placeholder_and_unknown_kind_in_an_override(builder):
    """An override is rendered like the original: bad placeholders are template issues."""
    config = {
        "tools": [
            {"id": "write_file", "description": "See {tol:read} and {tool:reading}."},
        ]
    }
    issues = issues_of(builder, config)
    assert tags(issues) == ["template", "template"]
    assert all(i.path == "tools[0].description" for i in issues)
    assert [i.actual for i in issues] == ["{tol:read}", "{tool:reading}"]


def test_override_renders_and_escapes(builder):
    """An override names configured tools by kind and id; double braces stay literal."""
    config = {
        "tools": [
            {"id": "read_file", "name": "Read", "description": "Read; then {tool:edit}."},
            {"id": "edit_file", "description": "Edit after {name:read_file}; {{tool:x}} {a}"},
        ]
    }
    toolset = builder.build(config)
    assert toolset["Read"].description == "Read; then edit_file."
    assert toolset["edit_file"].description == "Edit after Read; {tool:x} {a}"
