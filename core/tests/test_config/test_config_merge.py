"""Merge pipeline, modes, stable listings and the implicit (every tool) configuration."""

from __future__ import annotations

import json

import pytest
from toolweave import ConfigError, SkippedEntry, UsageError
from toolweave.catalog import external_tool


async def _echo(ctx, arguments):
    return json.dumps(arguments, sort_keys=True)


def ext(tool_id: str, *, read_only: bool = False, namespace: str = "mcp_docs", timeout=None):
    """A JSON-only tool as an MCP source would provide it."""
    return external_tool(
        id=tool_id,
        namespace=namespace,
        description=f"Remote {tool_id}.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        call=_echo,
        source="mcp:docs",
        read_only=read_only,
        timeout=timeout,
    )


BASELINE = {"tools": [{"id": "read_file", "name": "Read"}, "edit_file", "write_file"]}


def test_merge_priority_baseline_over_external_over_remote(builder):
    """Lower layers lose every id or name conflict, and each loss is reported."""
    external = [ext("Read"), ext("search_docs"), ext("search_docs", namespace="mcp_wiki")]
    remote = [
        "read_file",  # id taken by the baseline
        {"id": "bash", "name": "search_docs"},  # name taken by an external tool
        {"id": "grep", "name": "Read"},  # name taken by the baseline
        "exit_plan",  # kept
    ]
    toolset = builder.build(BASELINE, external=external, remote=remote)
    assert toolset.names == ["Read", "edit_file", "write_file", "exit_plan", "search_docs"]
    assert toolset["search_docs"].tool.namespace == "mcp_docs"
    skipped = toolset.report.skipped
    assert [(s.source, s.name, s.reason, s.winner) for s in skipped] == [
        ("external", "Read", "name_conflict", "baseline"),
        ("external", "search_docs", "name_conflict", "external"),
        ("remote", "read_file", "id_conflict", "baseline"),
        ("remote", "search_docs", "name_conflict", "external"),
        ("remote", "Read", "name_conflict", "baseline"),
    ]
    assert all(isinstance(s, SkippedEntry) and s.message for s in skipped)
    assert toolset.report.by_reason("id_conflict")[0].tool_id == "fs:read_file"


def test_remote_entries_are_validated_like_the_rest(builder):
    """A remote entry with a bad id or bad params is a problem at its remote path."""
    remote = ["nope", {"id": "bash", "params": {"max_timeout_ms": 0}}, {"id": "bash", "x": 1}]
    with pytest.raises(ConfigError) as info:
        builder.build(BASELINE, remote=remote)
    assert [(i.tag, i.path) for i in info.value.issues] == [
        ("unknown_tool", "remote[0].id"),
        ("invalid_params", "remote[1].params.max_timeout_ms"),
        ("invalid_config", "remote[2].x"),
    ]


def test_external_prefix_and_timeout_apply_to_external_tools(builder):
    """External tools get the set's prefix and default timeout; their own timeout wins."""
    config = BASELINE | {"external_prefix": "mcp__", "external_timeout": 7}
    toolset = builder.build(config, external={"docs": ext("a"), "slow": ext("b", timeout=99)})
    assert toolset.names[-2:] == ["mcp__docs", "mcp__slow"]
    assert toolset["mcp__docs"].timeout == 7
    assert toolset["mcp__slow"].timeout == 99
    session = toolset.session()
    entry = session.register_external(ext("late"))
    assert entry.name == "mcp__late"
    assert entry.timeout == 7


def test_local_timeouts_follow_entry_then_tool_then_set(builder, samples):
    """An entry's timeout beats the tool's own, which beats the set's default."""
    config = {
        "tools": [{"id": "write_file", "timeout": 3}, "exit_plan"],
        "timeout": 11,
    }
    toolset = builder.build(config)
    assert toolset["write_file"].timeout == 3
    assert toolset["exit_plan"].timeout == 11


def test_listing_is_byte_stable_for_the_same_config(make_builder, samples):
    """Two independent builds of one config yield byte-identical definitions."""
    config = {
        "tools": [
            {"id": "read_file", "name": "Read", "rename": {"path": "file_path"}},
            "edit_file",
            {"id": "bash", "params": {"enabled_background": True}},
            "task_output",
        ]
    }
    first = make_builder(*samples.ALL).build(config, external=[ext("b"), ext("a")])
    second = make_builder(*reversed(samples.ALL)).build(config, external=[ext("a"), ext("b")])
    for fmt in ("openai", "anthropic", "neutral"):
        assert json.dumps(first.definitions(fmt)) == json.dumps(second.definitions(fmt))
    assert first.names == ["Read", "edit_file", "bash", "task_output", "a", "b"]


def test_adding_or_removing_external_tools_never_reorders_earlier_tools(builder):
    """External tools come after the built-ins; changing them leaves the prefix intact."""
    session = builder.build(BASELINE, external=[ext("m")]).session()
    before = json.dumps(session.definitions("openai"))
    session.register_external(ext("z"))
    session.register_external(ext("a"))
    after = session.definitions("openai")
    assert json.dumps(after).startswith(before[:-1])
    assert [d["function"]["name"] for d in after] == [
        "Read",
        "edit_file",
        "write_file",
        "m",
        "z",
        "a",
    ]
    session.unregister_external("z")
    session.unregister_external("a")
    assert json.dumps(session.definitions("openai")) == before


def test_read_only_mode_keeps_only_read_only_tools(builder):
    """read_only drops tools that change things (declared or derived from the kind)."""
    config = {
        "mode": "read_only",
        "tools": [
            {"id": "read_file", "name": "Read"},
            "edit_file",
            {"id": "bash", "params": {"enabled_background": True}},
            "task_output",
            "notes",
            {"id": "lint", "kind": "search"},
            "exit_plan",
        ],
    }
    toolset = builder.build(config, external=[ext("lookup", read_only=True), ext("post")])
    assert toolset.names == ["Read", "lint", "exit_plan", "lookup"]
    assert all(e.read_only for e in toolset)
    reasons = {s.name: s.reason for s in toolset.report.skipped}
    assert reasons == {
        "edit_file": "mode",
        "bash": "mode",
        "notes": "mode",
        "post": "mode",
        "task_output": "dependency",
    }
    # Descriptions render against the configured set, so the listing is the same text.
    assert toolset["Read"].description == "Read a text file. Change it with edit_file."
    assert toolset.options["mode"] == "read_only"


def test_read_only_mode_refuses_writing_external_tools_at_run_time(builder):
    """A session of a read-only set does not accept an external tool that writes."""
    session = builder.build({"mode": "read_only", "tools": ["exit_plan"]}).session()
    with pytest.raises(UsageError, match="read_only"):
        session.register_external(ext("post"))
    assert session.register_external(ext("lookup", read_only=True)).name == "lookup"


def test_rekinding_changes_read_only_inference(builder):
    """A kind override to a read-only kind makes an undeclared tool read-only, not a declared one."""
    toolset = builder.build({"tools": [{"id": "lint", "kind": "read"}, {"id": "notes"}]})
    assert toolset["lint"].read_only is True
    assert toolset["lint"].definition.kind == "read"
    assert toolset["notes"].read_only is False


def test_no_config_keeps_every_tool_and_reports_what_cannot_run(builder):
    """Without a config every registered tool is listed; unmet dependencies and conflicts
    leave tools out with a report instead of failing the build."""
    toolset = builder.build()
    assert toolset.names == [
        "read_file",
        "edit_file",
        "write_file",
        "bash",
        "enter_plan",
        "exit_plan",
        "grep",
        "notes",
        "lint",
    ]
    assert toolset["grep"].tool.version == "3"
    assert [(s.name, s.reason) for s in toolset.report.skipped] == [
        ("apply_patch", "conflict"),
        ("task_output", "dependency"),
    ]
    assert toolset["bash"].params.enabled_background is False


def test_read_only_over_every_registered_tool(builder):
    """A config with only mode=read_only applies the mode to every registered tool."""
    toolset = builder.build({"mode": "read_only"})
    assert toolset.names == ["read_file", "enter_plan", "exit_plan", "grep"]
    assert [(s.name, s.reason) for s in toolset.report.skipped] == [
        ("apply_patch", "conflict"),
        ("task_output", "dependency"),
        ("edit_file", "mode"),
        ("write_file", "mode"),
        ("bash", "mode"),
        ("notes", "mode"),
        ("lint", "mode"),
    ]
