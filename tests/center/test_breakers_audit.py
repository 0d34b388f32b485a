"""Circuit breakers (per tool and per MCP server) and the audit: one entry per call,
none lost under concurrency, queries, and ``audit = "required"``."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from toolweave import ErrorKind, ToolSet, ToolSetBuilder
from toolweave.catalog import external_tool
from toolweave.center import BreakerSettings, Center, Status

pytestmark = pytest.mark.anyio


async def wait_until(predicate: Any) -> None:
    with anyio.fail_after(10):
        while not predicate():  # noqa: ASYNC110 - the state changes with the clock
            await anyio.sleep(0.02)


async def test_breaker_opens_half_opens_and_closes(center: Center, toolset: ToolSet) -> None:
    session = toolset.session()
    center.attach(session)
    center.configure_breaker("boom", BreakerSettings(failures=3, window=60, cooldown=0.3))
    for _ in range(3):
        failed = await session.call("boom", {})
        assert failed.error is not None
        assert failed.error.kind is ErrorKind.EXECUTION_ERROR
    assert center.tool("boom").status is Status.CIRCUIT_OPEN
    fast = await session.call("boom", {})
    assert fast.error is not None
    assert fast.error.kind is ErrorKind.UNAVAILABLE
    assert "try again in" in fast.text
    assert fast.error.data["retry_after"] >= 0
    # Other tools are not affected.
    assert (await session.call("look", {"path": "a"})).error is None

    assert center.breakers()["boom"]["state"] == "open"
    # After the cool-down one trial call goes through; it fails, so the circuit opens again.
    await wait_until(lambda: center.breakers()["boom"]["state"] == "half_open")
    assert center.tool("boom").breaker == "half_open"
    trial = await session.call("boom", {})
    assert trial.error is not None
    assert trial.error.kind is ErrorKind.EXECUTION_ERROR
    assert center.breakers()["boom"]["state"] == "open"
    again = await session.call("boom", {})
    assert again.error is not None
    assert again.error.kind is ErrorKind.UNAVAILABLE

    switches = center.audit(type="change", tool="breaker:boom")
    assert [c.outcome for c in switches] == ["open", "open"]
    assert [c.actor for c in switches] == ["breaker", "breaker"]

    center.reset_breaker("boom", actor="ops")
    assert center.tool("boom").status is Status.ENABLED
    assert (await session.call("boom", {})).error.kind is ErrorKind.EXECUTION_ERROR  # type: ignore[union-attr]
    assert center.audit(type="change", tool="breaker:boom")[0].outcome == "reset"


def test_switch_in_flight_holds_through_reloads_and_a_reset_follows_it(
    center: Center, center_url: str, toolset: ToolSet
) -> None:
    """While the center's thread is still writing a circuit's opening, a reload keeps
    the circuit open here, and a reset waits for the write and then closes it, in
    the store too (it never lands under the reset)."""
    center.attach(toolset.session())
    center.configure_breaker("boom", BreakerSettings(failures=1, window=60, cooldown=60))
    writing, release = threading.Event(), threading.Event()
    update_flag = center.store.update_flag

    def held(scope: str, *args: Any, **kwargs: Any) -> Any:
        if scope == "breaker" and kwargs.get("action") == "open":
            writing.set()
            release.wait(10)
        return update_flag(scope, *args, **kwargs)

    center.store.update_flag = held  # type: ignore[method-assign]
    center.outcome("boom", failed=True, trial=False)
    assert writing.wait(10)
    center.set_roles("look", ["ops"])  # a new version, read while the write is held
    assert center.breakers()["boom"]["state"] == "open"

    reset = threading.Thread(target=lambda: center.reset_breaker("boom", actor="ops"))
    reset.start()
    release.set()
    reset.join(10)
    assert center.breakers()["boom"]["state"] == "closed"
    with Center.open(center_url) as other:
        assert other.breakers()["boom"]["state"] == "closed"
    outcomes = [c.outcome for c in center.audit(type="change", tool="breaker:boom")]
    assert outcomes[:2] == ["reset", "open"]


def _server_tools(fail: dict[str, bool]) -> ToolSet:
    async def flaky(ctx: Any, args: dict[str, Any]) -> str:
        if fail["on"]:
            raise RuntimeError("server down")
        return "fine"

    schema = {"type": "object", "properties": {}}
    builder = ToolSetBuilder()
    tools = [
        external_tool(
            id=name,
            namespace="mcp_srv",
            description=name,
            input_schema=schema,
            call=flaky,
            source="mcp:srv",
        )
        for name in ("one", "two")
    ]
    return builder.build(external={f"srv__{t.id}": t for t in tools})


async def test_server_breaker_pauses_every_tool_of_the_server(center: Center) -> None:
    fail = {"on": True}
    toolset = _server_tools(fail)
    session = toolset.session()
    center.attach(session)
    assert center.tool("srv__one").record.source == "mcp:srv"
    center.configure_breaker("mcp:srv", BreakerSettings(failures=4, window=60, cooldown=0.2))
    for name in ("srv__one", "srv__two", "srv__one", "srv__two"):
        result = await session.call(name, {})
        assert result.error is not None
        assert result.error.kind is ErrorKind.EXECUTION_ERROR
    # Each tool failed twice only (its own breaker stays closed at the default 5); the
    # server's breaker counted four and opened for both.
    assert center.breakers()["mcp:srv"]["state"] == "open"
    assert "srv__one" not in center.breakers()
    paused = await session.call("srv__two", {})
    assert paused.error is not None
    assert "its server" in paused.text
    fail["on"] = False
    await wait_until(lambda: center.breakers()["mcp:srv"]["until"] <= time.time())
    trial = await session.call("srv__one", {})
    assert trial.error is None
    assert trial.text == "fine"
    assert "mcp:srv" not in center.breakers() or center.breakers()["mcp:srv"]["state"] == "closed"
    assert (await session.call("srv__two", {})).error is None


async def test_slow_calls_count_as_timeouts(center: Center, tmp_path: Path) -> None:
    from toolweave import tool

    @tool
    async def slow() -> str:
        """Takes its time."""
        await anyio.sleep(0.08)
        return "done"

    builder = ToolSetBuilder()
    builder.add(slow)
    session = builder.build().session()
    center.attach(session)
    center.configure_breaker(
        "slow", BreakerSettings(failures=2, window=60, cooldown=60, slow_ms=20)
    )
    for _ in range(2):
        assert (await session.call("slow", {})).text == "done"
    refused = await session.call("slow", {})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.UNAVAILABLE


async def test_one_audit_entry_per_call_under_500_concurrent_calls(
    center: Center, toolset: ToolSet
) -> None:
    sessions = [toolset.session(session_id=f"s{i}") for i in range(5)]
    for s in sessions:
        center.attach(s, role="user")
    center.set_roles("write", ["admin"])
    calls: list[tuple[Any, str, dict[str, Any]]] = []
    for i in range(500):
        s = sessions[i % 5]
        name, args = [
            ("echo", {"text": str(i)}),
            ("boom", {}),
            ("look", {"path": "p"}),
            ("write", {"path": "p", "text": "t"}),  # refused: role
            ("echo", {"wrong": 1}),  # invalid arguments
        ][i % 5]
        calls.append((s, name, args))
    center.configure_breaker("boom", BreakerSettings(failures=10_000, window=60, cooldown=1))
    results: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        s, name, args = calls[i]
        results[i] = await s.call(name, args, f"c{i}")

    changes_before = center.store.count_audit(type="change")
    made: list[bool] = []

    def operate() -> None:  # an operator changing another tool meanwhile
        for i in range(40):
            made.append(center.set_groups("look", [f"g{i % 3}"], reason=str(i)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, operate)
        for i in range(len(calls)):
            tg.start_soon(one, i)
    center.flush_audit()
    assert center.store.count_audit(type="change") - changes_before == sum(made) > 0
    entries = center.audit(type="call", limit=10_000)
    assert len(entries) == 500
    assert center.store.count_audit(type="call") == 500
    by_session = {s.session_id: 0 for s in sessions}
    for e in entries:
        by_session[e.session or ""] += 1
    assert set(by_session.values()) == {100}
    kinds = {(e.tool, e.outcome, e.error_kind) for e in entries}
    assert kinds == {
        ("echo", "ok", None),
        ("boom", "error", "execution_error"),
        ("look", "ok", None),
        ("write", "error", "permission_denied"),
        ("echo", "error", "invalid_params"),
    }
    assert all(e.role == "user" for e in entries)
    ok = [e for e in entries if e.tool == "echo" and e.outcome == "ok"]
    assert all(e.digest and e.version == "1" and e.duration_ms is not None for e in ok)
    assert len({e.digest for e in ok}) == 100, "different arguments, different digests"
    refused = [e for e in entries if e.error_kind == "permission_denied"]
    assert all(e.duration_ms is None for e in refused)
    # Queries.
    assert len(center.audit(session="s0", limit=1000)) == 100
    assert len(center.audit(tool="boom", outcome="error", limit=1000)) == 100
    newest = entries[0].at
    assert center.audit(since=newest + 1) == []
    assert len(center.audit(until=newest, limit=1000)) >= 500


async def test_required_audit_fails_closed_for_side_effects(
    center_path: Path, toolset: ToolSet
) -> None:
    center = Center.open(center_path, audit="required", poll_interval=60)
    try:
        session = toolset.session()
        center.attach(session)
        assert (await session.call("write", {"path": "a", "text": "b"})).error is None
        center.flush_audit()
        # Another process holds the store's write lock: the audit cannot be written.
        blocker = sqlite3.connect(center_path, timeout=0.1)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            center.store._conn.execute("PRAGMA busy_timeout = 50")  # type: ignore[attr-defined]
            await session.call("look", {"path": "a"})
            assert center.flush_audit() == 0
            assert not center.audit_ok
            assert "locked" in center.health().audit_error
            refused = await session.call("write", {"path": "a", "text": "b"})
            assert refused.error is not None
            assert refused.error.kind is ErrorKind.UNAVAILABLE
            assert "audit" in refused.text
            allowed = await session.call("look", {"path": "a"})
            assert allowed.error is None, "read-only tools still run"
        finally:
            blocker.rollback()
            blocker.close()
        assert center.flush_audit() == 3
        assert center.audit_ok
        assert (await session.call("write", {"path": "a", "text": "b"})).error is None
        center.flush_audit()
        assert center.store.count_audit(type="call") == 5
    finally:
        center.close()


async def test_audit_buffer_is_bounded_and_reports_drops(center_url: str, toolset: ToolSet) -> None:
    center = Center.open(center_url, audit_buffer=10, poll_interval=60)
    try:
        session = toolset.session()
        center.attach(session)
        for i in range(25):
            await session.call("echo", {"text": str(i)})
        health = center.health()
        assert health.audit_pending == 10
        assert health.audit_dropped == 15
        center.flush_audit()
        assert center.store.count_audit(type="call") == 10
    finally:
        center.close()


async def test_audit_off_records_changes_only(center_url: str, toolset: ToolSet) -> None:
    center = Center.open(center_url, audit="off")
    try:
        session = toolset.session()
        center.attach(session)
        await session.call("echo", {"text": "x"})
        center.disable("boom")
        center.flush_audit()
        assert center.store.count_audit(type="call") == 0
        assert center.store.count_audit(type="change") >= 1
    finally:
        center.close()


@pytest.mark.parametrize("bad", [{"confidence": float("nan")}, {"n": 1e999}, {1: "a", "b": 2}])
def test_an_entry_no_store_can_keep_never_holds_up_the_audit(
    center: Center, bad: dict[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A host's (or a custom classifier's) entry holding NaN, an infinity or keys of
    mixed types is refused when recorded, with an error in the log; the entries before
    and after it are written."""
    from toolweave.center import AuditEntry

    for after in ({"turn": 0}, bad, {"turn": 2}):
        center.record(AuditEntry(time.time(), "selection", session="s2", after=after))
    center.flush()
    assert center.health().audit_pending == 0
    assert [e.after for e in center.audit(type="selection", session="s2")] == [
        {"turn": 2},
        {"turn": 0},
    ]
    assert "not recorded" in caplog.text


def test_entries_of_other_types_are_recorded_with_the_calls(center: Center) -> None:
    from toolweave.center import AuditEntry

    for turn in range(3):
        center.record(
            AuditEntry(
                time.time(), "selection", session="s1", actor="injector",
                after={"chosen": ["echo"], "turn": turn}, reason=f"turn {turn}",
            )
        )  # fmt: skip
    assert center.health().audit_pending == 3
    center.flush()
    assert center.health().audit_pending == 0
    entries = center.audit(type="selection", session="s1")
    assert [e.after["turn"] for e in entries] == [2, 1, 0]
    assert center.store.count_audit(type="selection") == 3
