"""The center on Redis when Redis goes away: sessions keep the last known flags and
report the store degraded, calls keep working with their audit buffered, and
everything recovers (nothing acknowledged lost) when Redis is back."""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from toolweave import ErrorKind, ToolSet
from toolweave.center import Center

pytestmark = pytest.mark.anyio


def _wait(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


async def test_redis_killed_and_restarted_under_load(
    redis_server: Any, redis_url: str, toolset: ToolSet
) -> None:
    center = Center.open(redis_url, poll_interval=0.1)
    try:
        session = toolset.session(session_id="under-load")
        center.attach(session)
        center.disable("boom", reason="known bad")
        results: list[Any] = []

        async def load(count: int) -> None:
            for i in range(count):
                results.append(await session.call("echo", {"text": str(i)}, f"c{len(results)}"))
                await anyio.lowlevel.checkpoint()

        await load(50)
        redis_server.kill()
        await anyio.to_thread.run_sync(_wait, lambda: bool(center.health().degraded))
        # Down: the last known flags hold, calls go on, their audit waits in memory.
        await load(100)
        refused = await session.call("boom", {})
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.UNAVAILABLE
        assert center.flush_audit() == 0
        assert center.health().audit_pending >= 100
        assert "unreachable" in center.health().audit_error
        assert [d["function"]["name"] for d in session.definitions()] == ["echo", "look", "write"]

        redis_server.start()
        await anyio.to_thread.run_sync(
            _wait, lambda: not center.health().degraded and center.health().audit_pending == 0
        )
        await load(50)
        assert all(r.error is None for r in results)
        center.flush_audit()
        # Every call has its one entry: 200 echo calls and the refused one.
        assert center.store.count_audit(type="call") == 201
        assert len(center.audit(type="call", tool="echo", limit=1000)) == 200
        # Acknowledged changes survived the crash (Redis's append-only file).
        assert center.tool("boom").status.value == "disabled"
        center.enable("boom")
        assert (await session.call("boom", {})).error.kind is ErrorKind.EXECUTION_ERROR  # type: ignore[union-attr]
    finally:
        if redis_server.process is None:
            redis_server.start()
        center.close()


def test_audit_stream_is_bounded_and_trimming_is_reported(redis_url: str, toolset: ToolSet) -> None:
    center = Center.open(f"{redis_url}?audit_maxlen=20&prefix=bounded", poll_interval=60)
    try:
        session = toolset.session()
        center.attach(session)
        sync = session.sync()
        for i in range(30):
            sync.call("echo", {"text": str(i)})
        center.flush_audit()
        health = center.health()
        assert health.audit_trimmed > 0
        assert center.store.count_audit() == 20
        assert "#bounded" in health.store
    finally:
        center.close()
