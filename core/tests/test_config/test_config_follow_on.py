"""Each problem is reported once: no follow-on issues from an entry already invalid."""

from __future__ import annotations

from typing import Any

import pytest
from toolweave import ToolSetBuilder


def _issues(builder: ToolSetBuilder, tools: list[Any]) -> list[tuple[str, str]]:
    return [(i.tag, i.path) for i in builder.validate({"tools": tools})]


@pytest.mark.parametrize(
    ("bash", "tag", "path"),
    [
        (
            {"id": "bash", "params": {"enabled_background": "nope"}},
            "invalid_params",
            "tools[0].params.enabled_background",
        ),
        (
            {"id": "bash", "params": {"enabled_background": True, "max_timeout_ms": -1}},
            "invalid_params",
            "tools[0].params.max_timeout_ms",
        ),
        ({"id": "bash", "kind": "nope"}, "invalid_config", "tools[0].kind"),
        ({"id": "bsh"}, "unknown_tool", "tools[0].id"),
    ],
)
def test_an_invalid_entry_causes_no_dependency_issues(
    builder: ToolSetBuilder, bash: dict[str, Any], tag: str, path: str
) -> None:
    """A requirement that the invalid entry might meet once fixed is not reported, nor
    the template problems of the tools that require it."""
    tools = [bash, "task_output", {"id": "task_output", "name": "again"}]
    assert _issues(builder, tools) == [(tag, path)]


def test_a_valid_param_that_fails_a_requirement_is_still_reported(
    builder: ToolSetBuilder,
) -> None:
    """When the param a requirement reads is valid, its failure is the user's to fix,
    even while another param of the same entry is invalid."""
    bash = {"id": "bash", "params": {"enabled_background": False, "max_timeout_ms": -1}}
    assert _issues(builder, [bash, "task_output"]) == [
        ("invalid_params", "tools[0].params.max_timeout_ms"),
        ("dependency", "tools[1]"),
    ]


def test_a_missing_tool_named_twice_is_one_issue(builder: ToolSetBuilder) -> None:
    """A requirement on a missing tool is one dependency issue: the placeholders naming
    that tool in the description are not reported as well."""
    issues = builder.validate({"tools": ["task_output"]})
    assert [(i.tag, i.path) for i in issues] == [("dependency", "tools[0]")]
    text = "Use {tool:edit}, then {tool:edit} again."
    issues = builder.validate({"tools": [{"id": "lint", "description": text}]})
    assert [(i.tag, i.actual) for i in issues] == [("template", "{tool:edit}")]
