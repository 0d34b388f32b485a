"""The pool against misbehaving servers: real processes over stdio.

Most tests share one pool (one process per server, started once); tests that kill
or freeze their server open their own.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from toolweave import CallResult, Progress, Session
from toolweave.mcp import MCPPool, ServerConfig, ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """One event loop for the module, so the shared pool can serve every test."""
    return "asyncio"


@dataclass
class Shared:
    session: Session
    pool: MCPPool
    open_seconds: float


@pytest.fixture(scope="module")
async def shared(
    host_session: Callable[..., Session], fault_server: Callable[..., Any]
) -> AsyncIterator[Shared]:
    """One pool over well-behaved, failing and look-alike servers."""
    session = host_session()
    servers = {
        "f": fault_server(timeout=1000),
        "legacy": fault_server(mode="legacy"),
        "a": fault_server("--tag=a:"),
        "b": fault_server("--tag=b:", names={"echo": "echo"}),
        "noisy": fault_server("--garbage", "--tag=noisy:"),
        "mute": fault_server("--mute", connect_timeout=1500),
        "missing": ServerConfig(command="/nonexistent/mcp-server", auto_reconnect=False),
    }
    started = time.monotonic()
    async with MCPPool(session, servers) as pool:
        yield Shared(session, pool, time.monotonic() - started)


def _listed(session: Session) -> list[str]:
    return [d["name"] for d in session.definitions("neutral")]


async def _stats(session: Session) -> dict[str, int]:
    result = await session.call("mcp__f__stats", {})
    assert result.ok, result.text
    assert isinstance(result.output, dict)
    return result.output


async def test_failing_servers_do_not_block_or_break_the_others(shared: Shared) -> None:
    """A hanging, a missing and a garbage-writing server leave the good ones working."""
    session, pool = shared.session, shared.pool
    assert shared.open_seconds < 15
    status = pool.servers
    assert status["a"].state is ServerState.ONLINE
    assert status["noisy"].state is ServerState.ONLINE
    assert status["mute"].state is not ServerState.ONLINE
    assert status["mute"].error is not None
    assert "no handshake within 1500 ms" in status["mute"].error
    assert status["missing"].state is ServerState.OFFLINE
    assert status["missing"].error is not None
    assert "/nonexistent/mcp-server" in status["missing"].error
    assert status["mute"].tools == status["missing"].tools == ()

    assert (await session.call("mcp__a__echo", {"text": "hi"})).text == "a:hi"
    noisy = await session.call("mcp__noisy__echo", {"text": "hi"})
    assert noisy.text == "noisy:hi"
    assert pool.servers["noisy"].transport_errors >= 2
    assert not any(n.startswith(("mcp__mute__", "mcp__missing__")) for n in session.external)


async def test_start_up_against_a_hanging_server_stays_within_its_connect_timeout(
    tmp_path: Path, host_session: Callable[..., Session], fault_server: Callable[..., Any]
) -> None:
    """A server that never answers its handshake: the pool's start-up, teardown included,
    ends soon after the connect timeout, and the server process is gone."""
    pid_file = tmp_path / "pid"
    config = fault_server("--mute", f"--pid-file={pid_file}", connect_timeout=1500)
    started = time.monotonic()
    async with MCPPool(host_session(), {"mute": config}) as pool:
        elapsed = time.monotonic() - started
        assert pool.servers["mute"].state is not ServerState.ONLINE
        assert "no handshake within 1500 ms" in (pool.servers["mute"].error or "")
    assert elapsed < 1.5 + 1.0
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_same_tool_names_and_built_in_names(shared: Shared) -> None:
    """Two servers' ``echo`` get distinct names; neither shadows the built-in ``echo``."""
    session, pool = shared.session, shared.pool
    assert (await session.call("mcp__a__echo", {"text": "x"})).text == "a:x"
    assert (await session.call("mcp__b__echo", {"text": "x"})).text == "b:x"
    assert (await session.call("echo", {"text": "x"})).text == "local x"
    assert pool.servers["b"].renamed == {"echo": "mcp__b__echo"}
    assert pool.tools["mcp__b__echo"].server == "b"
    names = [d["name"] for d in session.definitions("neutral")]
    assert names.count("echo") == 1
    assert names[0] == "echo"


async def test_invalid_arguments_never_reach_the_server(shared: Shared) -> None:
    """Arguments that break the server's schema are rejected locally; the server sees no call."""
    session = shared.session
    before = (await _stats(session))["strict"]
    wrong_type = await session.call("mcp__f__strict", {"count": "three", "label": "x"})
    missing = await session.call("mcp__f__strict", '{"count": 3}')
    not_json = await session.call("mcp__f__strict", "{count: 3")
    for result in (wrong_type, missing, not_json):
        assert result.error is not None
        assert result.error.kind == "invalid_params"
    assert "count" in wrong_type.text
    assert "label" in missing.text
    assert (await _stats(session))["strict"] == before
    ok = await session.call("mcp__f__strict", {"count": 3, "label": "x"})
    assert ok.text == "x:3"
    assert (await _stats(session))["strict"] == before + 1


async def test_hanging_call_times_out_and_is_cancelled_on_the_server(shared: Shared) -> None:
    """A call past the server's timeout ends as ``timeout``; the server is told to cancel it."""
    session = shared.session
    before = await _stats(session)
    started = time.monotonic()
    result = await session.call("mcp__f__hang", {})
    elapsed = time.monotonic() - started
    assert result.error is not None
    assert result.error.kind == "timeout"
    assert 0.5 < elapsed < 10  # ended by the 1 s timeout: not at once, not hanging
    after = await _stats(session)
    assert after["hang_started"] == before["hang_started"] + 1
    assert after["hang_cancelled"] == before["hang_cancelled"] + 1


async def test_cancelling_a_call_cancels_it_on_the_server(
    shared: Shared, eventually: Callable[..., Awaitable[None]]
) -> None:
    """``session.cancel`` ends a remote call as ``cancelled`` and the server stops it."""
    session, pool = shared.session, shared.pool
    before = await _stats(session)
    results: list[CallResult] = []

    async def call() -> None:
        results.append(await session.call("mcp__f__hang", {}, "call-1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await eventually(lambda: "call-1" in session.running)
        with anyio.fail_after(10):  # the server has the call
            while (await _stats(session))["hang_started"] == before["hang_started"]:  # noqa: ASYNC110 - the server counts; no event crosses the wire
                await anyio.sleep(0.02)
        assert session.cancel("call-1")
    assert results[0].error is not None
    assert results[0].error.kind == "cancelled"
    with anyio.fail_after(5):
        while (await _stats(session))["hang_cancelled"] == before["hang_cancelled"]:  # noqa: ASYNC110
            await anyio.sleep(0.02)
    assert pool.servers["f"].connects == 1


async def test_progress_and_results_of_the_remote_tool(shared: Shared) -> None:
    """Server progress becomes progress items; structured content is the output."""
    session = shared.session
    items = [item async for item in session.stream("mcp__f__steps", {"n": 3}, "s1")]
    progress = [i for i in items if isinstance(i, Progress)]
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    final = items[-1]
    assert isinstance(final, CallResult)
    assert final.text == "done 3"
    assert set(await _stats(session)) == {"strict", "hang_started", "hang_cancelled"}


async def test_a_burst_of_list_changed_is_coalesced(
    shared: Shared, eventually: Callable[..., Awaitable[None]]
) -> None:
    """1,000 list_changed notifications cost a few re-lists; the host stays responsive."""
    session, pool = shared.session, shared.pool
    servers = ("f", "legacy")
    before = {sid: pool.servers[sid] for sid in servers}
    worst = 0.0
    done = anyio.Event()

    async def probe() -> None:
        nonlocal worst
        while not done.is_set():
            started = time.monotonic()
            assert (await session.call("echo", {"text": "ping"})).ok
            await anyio.lowlevel.checkpoint()
            worst = max(worst, time.monotonic() - started)
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe)
        for sid in servers:
            result = await session.call(f"mcp__{sid}__burst", {"n": 1000})
            assert result.text == "sent 1000"
        for sid in servers:
            await eventually(lambda sid=sid: f"mcp__{sid}__after_burst" in session.external)
        await anyio.sleep(0.3)
        done.set()
    status = pool.servers
    assert status["legacy"].list_changed - before["legacy"].list_changed == 1000
    assert status["f"].list_changed > before["f"].list_changed
    for sid in servers:
        assert status[sid].syncs - before[sid].syncs <= 5, status[sid]
    assert worst < 1.0  # a blocked host would stall for seconds
    assert (await session.call("mcp__legacy__after_burst", {})).text == "new"


async def test_server_exiting_mid_call_comes_back(
    host_session: Callable[..., Session],
    fault_server: Callable[..., Any],
    eventually: Callable[..., Awaitable[None]],
) -> None:
    """A server that exits mid-call: the call is ``unavailable``, tools leave the listing
    (still answering ``unavailable``), then return."""
    session = host_session()
    async with MCPPool(session, {"f": fault_server(timeout=5000)}) as pool:
        version = session.external_version
        result = await session.call("mcp__f__die", {"after": 0.1})
        assert result.error is not None
        assert result.error.kind == "unavailable"
        assert "'f'" in result.text
        await eventually(lambda: "mcp__f__echo" not in _listed(session))
        assert "mcp__f__echo" in session.external
        assert session.external_version > version
        await eventually(lambda: pool.servers["f"].connects == 2)
        assert "mcp__f__echo" in _listed(session)
        assert (await session.call("mcp__f__echo", {"text": "back"})).text == "back"


async def test_idempotent_call_is_retried_across_a_reconnect(
    tmp_path: Any, host_session: Callable[..., Session], fault_server: Callable[..., Any]
) -> None:
    """A dropped connection under an idempotent tool is retried once the server is back."""
    session = host_session()
    async with MCPPool(session, {"f": fault_server(timeout=10_000)}) as pool:
        result = await session.call("mcp__f__flaky", {"marker": str(tmp_path / "marker")})
        assert result.ok, result.text
        assert result.text == "second time lucky"
        assert pool.servers["f"].connects == 2


async def test_offline_server_without_reconnect_stays_out(
    host_session: Callable[..., Session],
    fault_server: Callable[..., Any],
    eventually: Callable[..., Awaitable[None]],
) -> None:
    """Without auto_reconnect an exited server stays offline, named with its reason."""
    session = host_session()
    async with MCPPool(session, {"f": fault_server(auto_reconnect=False)}) as pool:
        await session.call("mcp__f__die", {"after": 0.05})
        await eventually(lambda: pool.servers["f"].state is ServerState.OFFLINE)
        status = pool.servers["f"]
        assert status.tools == ()
        assert status.error is not None
        assert "closed the connection" in status.error
        await anyio.sleep(0.5)
        assert pool.servers["f"].connects == 1
        assert not any(n.startswith("mcp__f__") for n in _listed(session))
        assert "mcp__f__echo" in session.external
        later = await session.call("mcp__f__echo", {"text": "x"})
        assert later.error is not None
        assert later.error.kind == "unavailable"
        assert "will not come back by itself" in later.text
        pool.reconnect("f")
        await eventually(lambda: pool.servers["f"].connects == 2)
        assert "mcp__f__echo" in _listed(session)
        assert (await session.call("mcp__f__echo", {"text": "x"})).text == "x"


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_server_that_stops_answering_goes_offline_and_returns(
    host_session: Callable[..., Session],
    fault_server: Callable[..., Any],
    eventually: Callable[..., Awaitable[None]],
    mode: str,
    era: str,
) -> None:
    """Missed heartbeats take a frozen server's tools out; it is reconnected afterwards.
    In both protocol eras: a tools/list heartbeat (2026-07-28) and a ping (2025 handshake)."""
    session = host_session()
    config = fault_server(timeout=300, heartbeat_interval=100, mode=mode)
    async with MCPPool(session, {"f": config}) as pool:
        assert pool.servers["f"].protocol_version == era
        frozen = await session.call("mcp__f__freeze", {"seconds": 1.5})
        assert frozen.error is not None
        assert frozen.error.kind == "timeout"
        await eventually(lambda: pool.servers["f"].state is not ServerState.ONLINE, within=5)
        assert "heartbeat" in (pool.servers["f"].error or "")
        assert "mcp__f__echo" not in _listed(session)
        await eventually(lambda: pool.servers["f"].connects == 2, within=15)
        assert "mcp__f__echo" in _listed(session)
        assert (await session.call("mcp__f__echo", {"text": "x"})).text == "x"
