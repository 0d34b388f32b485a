"""Pinned remote definitions include whether the tool is read-only: a remote tool that
turns read-only after its approval is quarantined; approvals made when only the name,
description and schema were pinned stay valid for tools that are not read-only."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from toolweave.center import Center, Status, ToolRecord

NAME = "mcp__files__delete"
REMOTE = ToolRecord(
    NAME,
    "mcp:files",
    fqid="mcp_files:delete",
    description="Delete a file. Do not use it to read files.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


def _former_approval(center: Center, record: ToolRecord) -> None:
    """Store the approval an earlier release wrote (its hash covered name, description
    and schema only)."""
    text = json.dumps(
        [record.name, record.description, record.input_schema], sort_keys=True, default=str
    )
    value = {
        "hash": hashlib.sha256(text.encode()).hexdigest(),
        "description": record.description,
        "input_schema": dict(record.input_schema),
        "diff": "",
    }
    center._change(
        "tool", record.name, "approved", lambda _: value, actor="old", reason="", action="approve"
    )


def test_turning_read_only_after_approval_quarantines(center: Center) -> None:
    center.register([REMOTE])
    assert center.tool(NAME).status is Status.ENABLED
    center.register([replace(REMOTE, read_only=True)])
    state = center.tool(NAME)
    assert state.status is Status.QUARANTINED
    assert "changed its definition" in state.reason
    assert center.approve(NAME, actor="ops")
    assert center.tool(NAME).status is Status.ENABLED
    approval = center.audit(type="change", tool=NAME)[0]
    assert approval.after["read_only"] is True
    assert "-read_only: false" in approval.after["diff"]
    assert "+read_only: true" in approval.after["diff"]


def test_former_approvals_hold_for_tools_that_are_not_read_only(center: Center) -> None:
    center.register([REMOTE])
    _former_approval(center, REMOTE)
    assert center.tool(NAME).status is Status.ENABLED

    other = replace(REMOTE, name="mcp__files__stat", fqid="mcp_files:stat", read_only=True)
    center.register([other])
    _former_approval(center, other)
    state = center.tool(other.name)
    assert state.status is Status.QUARANTINED  # its approval never said read-only
    assert center.approve(other.name, actor="ops")
    assert (
        "-read_only: not recorded" in center.audit(type="change", tool=other.name)[0].after["diff"]
    )
    assert center.tool(other.name).status is Status.ENABLED
