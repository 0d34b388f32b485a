"""A tool entry with a bad field still has its other problems found, in the same pass,
and each problem says what was expected once."""

from __future__ import annotations

from typing import Any

import pytest
from toolweave import ConfigError, ConfigIssue, Kind, ToolSetBuilder


def issues_of(builder: ToolSetBuilder, config: Any) -> list[ConfigIssue]:
    """The issues a build raises (it must raise)."""
    with pytest.raises(ConfigError) as info:
        builder.build(config)
    return list(info.value.issues)


def test_a_bad_kind_or_name_hides_no_other_problem(builder: ToolSetBuilder) -> None:
    """An entry with a bad kind, name and timeout still has its unknown param and its
    rename of a missing parameter reported, with the set's bad mode: six problems at
    once, not one now and five after the first is fixed."""
    config = {
        "mode": "weird",
        "tools": [
            {
                "id": "read_file",
                "kind": "reading",
                "name": "bad name!",
                "timeout": -1,
                "params": {"nope": 1},
                "rename": {"zz": "x"},
            },
            "edit_file",  # read_file's description names the edit tool
        ],
    }
    issues = issues_of(builder, config)
    assert sorted((i.tag, i.path) for i in issues) == [
        ("invalid_config", "mode"),
        ("invalid_config", "tools[0].kind"),
        ("invalid_config", "tools[0].name"),
        ("invalid_config", "tools[0].timeout"),
        ("invalid_params", "tools[0].params.nope"),
        ("invalid_rename", "tools[0].rename.zz"),
    ]


def test_an_unknown_id_is_reported_beside_a_bad_kind(builder: ToolSetBuilder) -> None:
    """A misspelt id and a bad kind in one entry: both, with a suggestion for each."""
    issues = issues_of(builder, {"tools": [{"id": "read_fille", "kind": "reading"}]})
    by_tag = {i.tag: i for i in issues}
    assert set(by_tag) == {"unknown_tool", "invalid_config"}
    assert "did you mean read_file" in by_tag["unknown_tool"].message
    assert "did you mean read?" in by_tag["invalid_config"].message


def test_choices_are_listed_once_as_data(builder: ToolSetBuilder) -> None:
    """A bad kind or mode names the allowed values once, in ``expected`` (a list), not
    again in the message."""
    issues = issues_of(builder, {"mode": "weird", "tools": [{"id": "grep", "kind": "x"}]})
    by_path = {i.path: i for i in issues}
    kind = by_path["tools[0].kind"]
    assert kind.expected == [k.value for k in Kind]
    assert "'read'" not in kind.message
    assert str(kind).count("'web_fetch'") == 1
    assert by_path["mode"].expected == ["default", "read_only"]
    assert str(by_path["mode"]).count("read_only") == 1


def test_an_entry_whose_id_is_bad_is_still_left_out(builder: ToolSetBuilder) -> None:
    """Without a usable id nothing of the entry can be checked against the tools: only
    its own problems are reported."""
    issues = issues_of(builder, {"tools": [{"id": 5, "kind": "x", "params": {"nope": 1}}]})
    assert sorted(i.path for i in issues) == ["tools[0].id", "tools[0].kind"]
