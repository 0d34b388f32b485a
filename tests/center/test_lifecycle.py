"""The center's lifecycle operations on attached sessions: enable/disable (tool, group,
source), roles, version pins and rollback, gray release, registration, change feed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import CenterError, ErrorKind, ToolSet
from toolweave.center import Center, ChangeEvent, Status, ToolRecord, bucket

pytestmark = pytest.mark.anyio

Factory = Callable[[], ToolSet]


def names(definitions: list[dict[str, Any]]) -> list[str]:
    """Client names of OpenAI-format definitions."""
    return [d["function"]["name"] for d in definitions]


async def test_disable_hides_and_refuses_then_enable_restores(
    center: Center, toolset: ToolSet, tmp_path: Path
) -> None:
    session = toolset.session(workspace=tmp_path)
    center.attach(session)
    assert names(session.definitions()) == ["echo", "boom", "look", "write"]
    before = session.listing_version

    assert center.disable("echo", reason="incident 42", actor="ops")
    assert names(session.definitions()) == ["boom", "look", "write"]
    assert session.listing_version > before
    result = await session.call("echo", {"text": "hi"}, "c1")
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "incident 42" in result.text
    assert not center.disable("echo", reason="incident 42"), "the same status again: no change"

    assert center.enable("echo", actor="ops", reason="fixed")
    assert names(session.definitions()) == ["echo", "boom", "look", "write"]
    ok = await session.call("echo", {"text": "hi"}, "c2")
    assert ok.error is None
    assert ok.text == "v1:hi"

    changes = center.audit(type="change", tool="echo")
    assert [(c.outcome, c.actor, c.reason) for c in changes[:2]] == [
        ("enable", "ops", "fixed"),
        ("disable", "ops", "incident 42"),
    ]
    assert changes[1].before is None
    assert changes[1].after["status"] == "disabled"


async def test_group_and_source_disable(center: Center, toolset: ToolSet, tmp_path: Path) -> None:
    session = toolset.session(workspace=tmp_path)
    center.attach(session, groups={"look": ["local_core"], "write": ["local_core"]})
    center.disable(group="local_core", reason="maintenance")
    assert names(session.definitions()) == ["echo", "boom"]
    assert center.tool("write").status is Status.DISABLED
    assert "local_core" in center.tool("write").reason or center.tool("write").reason
    refused = await session.call("look", {"path": "a"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.UNAVAILABLE
    center.enable(group="local_core")
    center.disable(source="host")
    assert names(session.definitions()) == []
    center.enable(source="host")
    assert len(session.definitions()) == 4
    with pytest.raises(CenterError, match="exactly one"):
        center.disable("echo", group="local_core")


async def test_quarantine_and_offline_are_statuses(center: Center, toolset: ToolSet) -> None:
    session = toolset.session()
    center.attach(session)
    center.set_status("echo", "quarantined", reason="bad plugin")
    assert center.tool("echo").status is Status.QUARANTINED
    result = await session.call("echo", {"text": "x"})
    assert result.error is not None
    assert "quarantined" in result.text
    with pytest.raises(CenterError, match="status is one of"):
        center.set_status("echo", "circuit_open")
    with pytest.raises(CenterError, match="no tool named 'ecko'; did you mean echo"):
        center.disable("ecko")


async def test_roles_are_enforced_at_dispatch(center: Center, toolset: ToolSet) -> None:
    user = toolset.session()
    admin = toolset.session()
    nobody = toolset.session()
    center.attach(user, role="common_user")
    center.attach(admin, role="admin")
    center.attach(nobody)
    center.set_roles("write", ["admin"], reason="writes are for admins")
    assert "write" not in names(user.definitions())
    assert "write" not in names(nobody.definitions())
    assert "write" in names(admin.definitions())
    # The user's session never listed the tool; the model names it anyway, and
    # tries to raise its role through the arguments: the role is the session's.
    for args in ({"path": "a", "text": "b"}, {"path": "a", "text": "b", "role": "admin"}):
        denied = await user.call("write", args, "c1")
        assert denied.error is not None
        assert denied.error.kind is ErrorKind.PERMISSION_DENIED
    ok = await admin.call("write", {"path": "a", "text": "b"})
    assert ok.error is None
    unknown = await user.call("write ", {"path": "a", "text": "b"})
    assert unknown.error is not None
    assert unknown.error.kind is ErrorKind.NOT_FOUND
    assert "write" not in unknown.text.split("Available tools:")[1]
    center.set_roles("write", None)
    assert "write" in names(user.definitions())


async def test_pin_cohort_pin_and_rollback(center: Center, toolset: ToolSet) -> None:
    session = toolset.session(session_id="s-1")
    beta = toolset.session(session_id="s-2")
    center.attach(session)
    center.attach(beta, cohort="beta")

    async def text(s: object) -> str:
        result = await s.call("echo", {"text": "x"})  # type: ignore[attr-defined]
        assert result.error is None, result.text
        return str(result.text)

    assert center.tool("echo").record.versions == ("1", "2")
    center.pin("echo", "2")
    assert await text(session) == "v2:x"
    assert await text(beta) == "v2:x"
    center.pin("echo", "1", cohort="beta")
    assert await text(beta) == "v1:x"
    assert await text(session) == "v2:x"
    # The routed version's own description is listed.
    listed = {d["function"]["name"]: d for d in session.definitions()}
    assert listed["echo"]["function"]["description"] == "Echo the text back (second behaviour)."
    assert center.rollback("echo") is None
    assert await text(session) == "v1:x"
    assert center.rollback("echo", cohort="beta") is None
    with pytest.raises(CenterError, match="no pin to roll back"):
        center.rollback("echo")
    with pytest.raises(CenterError, match="no version '9'; known: 1, 2"):
        center.pin("echo", "9")
    center.pin("echo", "2")
    center.pin("echo", "1")
    assert center.rollback("echo") == "2"
    assert await text(session) == "v2:x"


async def test_rollout_routes_a_stable_share_of_sessions(center: Center, toolset: ToolSet) -> None:
    center.register_toolset(toolset)
    center.rollout("echo", "2", 30)
    sessions = [toolset.session(session_id=f"s{i}") for i in range(200)]
    got: dict[str, str] = {}
    for s in sessions:
        center.attach(s)
        result = await s.call("echo", {"text": "x"})
        got[s.session_id] = str(result.text)
    expected = {sid: "v2:x" if bucket("echo", sid) < 3000 else "v1:x" for sid in got}
    assert got == expected
    share = sum(v == "v2:x" for v in got.values()) / len(got)
    assert 0.15 < share < 0.45
    # Widening keeps every session already in; aborting returns everyone.
    center.rollout("echo", "2", 60)
    for s in sessions:
        result = await s.call("echo", {"text": "x"})
        if got[s.session_id] == "v2:x":
            assert result.text == "v2:x"
    center.abort_rollout("echo")
    for s in sessions[:20]:
        assert (await s.call("echo", {"text": "x"})).text == "v1:x"
    with pytest.raises(CenterError, match="within 0-100"):
        center.rollout("echo", "2", 101)


def test_gray_split_within_three_percent_and_stable_across_processes() -> None:
    ids = [f"session-{i}" for i in range(10_000)]
    for percent in (5, 25, 50, 90):
        chosen = sum(bucket("read_file", sid) < percent * 100 for sid in ids)
        assert abs(chosen / len(ids) - percent / 100) <= 0.03, percent
    here = [bucket("read_file", sid) for sid in ids[:500]]
    code = (
        "import json, sys; from toolweave.center import bucket; "
        "print(json.dumps([bucket('read_file', f'session-{i}') for i in range(500)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == here


async def test_a_version_missing_from_the_set_runs_the_configured_one(
    center: Center, toolset: ToolSet, only_v1: ToolSet
) -> None:
    center.register_toolset(toolset)  # knows versions 1 and 2
    session = only_v1.session()
    center.attach(session)
    center.pin("echo", "2")
    result = await session.call("echo", {"text": "x"})
    assert result.text == "v1:x"


def test_duplicate_name_from_another_source_is_an_error(
    center: Center, toolset: ToolSet, toolset_factory: Factory
) -> None:
    center.register_toolset(toolset)
    with pytest.raises(CenterError) as info:
        center.register([ToolRecord(name="echo", source="mcp:github")])
    assert "already registered by host" in str(info.value)
    assert "mcp:github" in str(info.value)
    # The same source registering again changes nothing.
    version = center.version
    center.register_toolset(toolset_factory())
    assert center.version == version


def test_unregister_keeps_the_audit_trail(center: Center, toolset: ToolSet) -> None:
    center.register_toolset(toolset)
    center.disable("boom", reason="going away")
    center.unregister("boom", actor="ops", reason="retired")
    assert "boom" not in [t.name for t in center.tools()]
    trail = center.audit(type="change", tool="boom")
    assert [c.outcome for c in trail] == ["unregister", "disable", "register"]
    assert trail[0].before["name"] == "boom"
    assert trail[0].reason == "retired"
    with pytest.raises(CenterError):
        center.unregister("boom")


def test_change_feed_delivers_events_in_order(center: Center, toolset: ToolSet) -> None:
    seen: list[ChangeEvent] = []
    unsubscribe = center.subscribe(seen.append)
    center.register_toolset(toolset)
    center.disable("echo")
    center.pin("echo", "2")
    unsubscribe()
    center.enable("echo")
    kinds = [(e.kind, e.target) for e in seen]
    assert kinds[:4] == [
        ("added", "echo"),
        ("added", "boom"),
        ("added", "look"),
        ("added", "write"),
    ]
    assert kinds[4:] == [("flag", "echo"), ("flag", "echo")]
    assert seen[4].detail == {"flag": "status", "value": {"status": "disabled", "reason": ""}}
    versions = [e.version for e in seen]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)


def test_change_feed_from_another_center_on_the_same_store(
    center: Center, center_url: str, toolset: ToolSet
) -> None:
    center.register_toolset(toolset)
    other = Center.open(center_url, poll_interval=0.05)
    try:
        seen: list[ChangeEvent] = []
        other.subscribe(seen.append)
        center.disable("look", reason="x")

        async def wait() -> None:
            with anyio.fail_after(10):
                while not any(e.target == "look" for e in seen):  # noqa: ASYNC110 - a thread appends
                    await anyio.sleep(0.02)

        anyio.run(wait)
        assert other.tool("look").status is Status.DISABLED
    finally:
        other.close()


def test_disabling_again_without_a_reason_keeps_the_first(center: Center, toolset: ToolSet) -> None:
    center.register_toolset(toolset)
    assert center.disable("echo", reason="incident 42")
    assert not center.disable("echo")
    assert center.tool("echo").reason == "incident 42"
    assert center.disable("echo", reason="incident 43")
    assert center.tool("echo").reason == "incident 43"


def test_registration_keeps_groups_other_hosts_declared(
    center: Center, toolset: ToolSet, toolset_factory: Factory
) -> None:
    center.register_toolset(toolset, groups={"look": ["local_core"]})
    center.register_toolset(toolset_factory(), groups={"look": ["readers"]})
    center.register_toolset(toolset_factory())
    assert center.tool("look").groups == ("local_core", "readers")


def test_registering_a_tool_that_does_not_say_what_not_to_use_it_for_warns(
    center: Center, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="toolweave"):
        center.register(
            [
                ToolRecord("vague", "api", description="Fetches things."),
                ToolRecord("clear", "api", description="Fetch a page. Not for files."),
            ]
        )
    warned = [r.getMessage() for r in caplog.records if "must not be used for" in r.getMessage()]
    assert len(warned) == 1
    assert "vague" in warned[0]
