"""Every problem of a configuration in one pass, each reported once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import ConfigError, ConfigIssue, Context, Tool, ToolSetBuilder
from toolweave.plugins import check_config as check


def issues_of(builder: ToolSetBuilder, config: Any) -> list[ConfigIssue]:
    """The issues a build raises (it must raise)."""
    with pytest.raises(ConfigError) as info:
        builder.build(config)
    assert builder.validate(config) == list(info.value.issues)
    return list(info.value.issues)


def test_schema_problems_do_not_hide_the_others(builder):
    """A bad mode, a bad option and an entry with an unknown key are reported together
    with an unknown tool and a bad param; schema issues name the entry's id and say
    what was expected."""
    config = {
        "mode": "write_only",
        "reminders": "sometimes",
        "tools": [
            "read_file",
            {"id": "nope_tool"},
            {"id": "bash", "params": {"max_timeout_ms": -5}},
            {"id": "edit_file", "nam": "Edit"},
        ],
    }
    issues = issues_of(builder, config)
    assert [(i.tag, i.tool_id, i.path) for i in issues] == [
        ("unknown_tool", "nope_tool", "tools[1].id"),
        ("invalid_params", "shell:bash", "tools[2].params.max_timeout_ms"),
        ("invalid_config", "edit_file", "tools[3].nam"),
        ("invalid_config", "", "mode"),
        ("invalid_config", "", "reminders"),
    ]
    by_path = {i.path: i for i in issues}
    assert by_path["mode"].expected == ["default", "read_only"]
    assert by_path["mode"].actual == "write_only"
    assert by_path["reminders"].expected == "bool"
    assert "name" in by_path["tools[3].nam"].expected
    assert by_path["tools[3].nam"].actual == "Edit"


def test_valid_entries_keep_their_positions_after_an_invalid_one(builder):
    """An entry left out for its schema does not shift the paths of the ones after it."""
    issues = issues_of(builder, {"tools": [{"id": 5}, "exit_plan", {"id": "grep", "version": "9"}]})
    assert [(i.tag, i.tool_id, i.path) for i in issues] == [
        ("invalid_config", "tools[0]", "tools[0].id"),
        ("unknown_version", "search:grep", "tools[2].version"),
    ]


def test_five_interacting_problems_yield_exactly_five(make_builder, samples):
    """A misspelt read tool (edit_file would need it), an ambiguous id, a conflict, a
    missing exit_plan and an unknown placeholder: five issues, no echoes (no dependency
    or template issue for edit_file, no template issue for enter_plan)."""

    class NoArgs(BaseModel):
        pass

    class OtherBash(Tool[NoArgs, str]):
        id = "bash"
        namespace = "alt"
        description = "Another bash."

        async def run(self, ctx: Context, args: NoArgs) -> str:
            return ""

    builder = make_builder(*samples.ALL, OtherBash)
    config = {
        "tools": [
            "read_fiel",
            "edit_file",
            "bash",
            "apply_patch",
            "enter_plan",
            {"id": "write_file", "description": "Write; see {tool:nosuchkind}."},
        ]
    }
    issues = issues_of(builder, config)
    assert [(i.tag, i.path) for i in issues] == [
        ("unknown_tool", "tools[0].id"),
        ("ambiguous_id", "tools[2].id"),
        ("conflict", "tools[3]"),
        ("dependency", "tools[4]"),
        ("template", "tools[5].description"),
    ]


def test_problems_unrelated_to_an_unknown_tool_are_still_reported(builder):
    """Only what the unresolved entry could stand for is excused: edit_file without any
    read tool still fails when the unknown id resembles no read tool."""
    issues = issues_of(builder, {"tools": ["zzzz_qqqq", "edit_file"]})
    assert [(i.tag, i.path) for i in issues] == [
        ("unknown_tool", "tools[0].id"),
        ("dependency", "tools[1]"),
    ]


def test_check_reports_schema_and_semantic_problems_of_a_file(tmp_path, builder):
    """`check` on a file reports its schema problems next to the semantic ones."""
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"mode": "nope", "tools": ["exit_plan", "no_such_tool"]}))
    issues = check(path, builder)
    assert sorted(i.tag for i in issues) == ["invalid_config", "unknown_tool"]
