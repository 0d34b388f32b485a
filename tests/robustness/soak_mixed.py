"""The mixed soak (``nox -s soak``; ``--soak-minutes`` long, 30 by default).

One host session under the registry center (SQLite, audit on) with a real MCP server
over stdio, state that every call bumps, and a tool that fails badly now and then.
Four workers call without pause; every fault interval (a minute, or a quarter of the
run when that is shorter) a fault is injected, in turn: the MCP server killed with
SIGKILL, the MCP server stopped (SIGSTOP) for three seconds, a burst of calls that
raise ``MemoryError`` and call ``sys.exit()``.

At the end: no exception went unhandled (asyncio's handler, threads, unraisable),
every acknowledged state update is stored, the memory stayed flat (RSS sampled every
two seconds: the last quarter's peak within 25 % and 40 MB of the second quarter's
median), and the calls after the last fault succeed again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import Context, ToolSetBuilder, tool
from toolweave.center import Center
from toolweave.mcp import MCPPool, ServerConfig
from toolweave.state import SQLiteStateStore, default_state_path

pytestmark = [pytest.mark.soak, pytest.mark.anyio]


class Bumps(BaseModel):
    """What bump counts."""

    state_key: ClassVar[str] = "soak.bumps"

    n: int = 0
    """Calls of bump."""


@tool(blocking=False, state=Bumps)
def bump(ctx: Context) -> int:
    """Count one more. Not for real work."""
    state = ctx.state(Bumps)
    state.n += 1
    return state.n


@tool(blocking=False)
def noop() -> str:
    """Do nothing. Not for real work."""
    return "ok"


@tool(blocking=True)
def crash(how: str) -> str:
    """Fail badly. Not for real work.

    Args:
        how: ``memory`` or ``exit``.
    """
    if how == "memory":
        raise MemoryError("soak")
    sys.exit(5)


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _server_pid(script: Path) -> int | None:
    """The process id of the running MCP server (a child of this process)."""
    for task in os.listdir("/proc/self/task"):
        for pid in Path(f"/proc/self/task/{task}/children").read_text().split():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if str(script).encode() in cmdline:
                return int(pid)
    return None


async def test_mixed_soak_with_faults(
    tmp_path: Path, nap_server: Path, soak_minutes: float, figures: Any
) -> None:
    """Calls of every kind for the soak's duration with a fault every interval: zero
    unhandled exceptions, flat memory, no acknowledged update lost."""
    unhandled: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unhandled.append(str(context.get("message"))))
    previous_hook, previous_unraisable = threading.excepthook, sys.unraisablehook
    threading.excepthook = lambda args: unhandled.append(f"thread: {args.exc_value!r}")
    sys.unraisablehook = lambda args: unhandled.append(f"unraisable: {args.exc_value!r}")

    builder = ToolSetBuilder()
    for fn in (bump, noop, crash):
        builder.add(fn)
    session = builder.build().session(workspace=tmp_path, session_id="soak")
    center = Center.open(str(tmp_path / "center.db"))
    center.attach(session)
    config = ServerConfig(command=sys.executable, args=[str(nap_server)], timeout=5_000)
    duration = soak_minutes * 60
    interval = min(60.0, duration / 4)
    outcomes: Counter[str] = Counter()
    acknowledged = 0
    rss: list[float] = []
    faults: list[str] = []
    stop = anyio.Event()

    async def worker(kind: str) -> None:
        nonlocal acknowledged
        i = 0
        while not stop.is_set():
            i += 1
            if kind == "bump":
                result = await session.call("bump", {})
                if result.ok:
                    acknowledged = max(acknowledged, int(result.text))
            elif kind == "mcp":
                result = await session.call("mcp__naps__nap", {"ms": 5, "text": f"{i}"})
                if result.ok:
                    assert result.text == f"{i}"
                else:
                    await anyio.sleep(0.05)  # the server is down: do not spin
            else:
                result = await session.call("noop", {})
            outcomes[f"{kind}:{result.error.kind if result.error else 'ok'}"] += 1
            await anyio.lowlevel.checkpoint()

    async def sample() -> None:
        while not stop.is_set():
            rss.append(_rss_mb())
            await anyio.sleep(2.0)

    async def inject() -> None:
        n = 0
        while True:
            await anyio.sleep(interval)
            if stop.is_set():
                return
            kind = ("kill-mcp", "stop-mcp", "crash-burst")[n % 3]
            n += 1
            faults.append(kind)
            pid = _server_pid(nap_server)
            if kind == "kill-mcp" and pid is not None:
                os.kill(pid, signal.SIGKILL)
            elif kind == "stop-mcp" and pid is not None:
                os.kill(pid, signal.SIGSTOP)
                await anyio.sleep(3.0)
                os.kill(pid, signal.SIGCONT)
            else:
                for how in ("memory", "exit") * 20:
                    result = await session.call("crash", {"how": how})
                    # the center's breaker opens after a few failures
                    assert result.error is not None
                    assert result.error.kind in {"execution_error", "unavailable"}

    try:
        async with MCPPool(session, {"naps": config}) as pool:
            async with anyio.create_task_group() as tg:
                for kind in ("bump", "mcp", "noop", "noop"):
                    tg.start_soon(worker, kind)
                tg.start_soon(sample)
                tg.start_soon(inject)
                await anyio.sleep(duration)
                stop.set()
                tg.cancel_scope.cancel()
            assert await pool.wait_online("naps", within=30)
            after = await session.call("mcp__naps__nap", {"ms": 1, "text": "back"})
            assert after.text == "back"
    finally:
        center.close()
        threading.excepthook, sys.unraisablehook = previous_hook, previous_unraisable
        loop.set_exception_handler(None)

    store = SQLiteStateStore(default_state_path(tmp_path))
    try:
        stored = Bumps.model_validate_json(store.load("soak")["soak.bumps"].value)
    finally:
        store.close()
    quarter = max(len(rss) // 4, 1)
    baseline = statistics.median(rss[quarter : 2 * quarter] or rss)
    peak = max(rss[-quarter:])
    flat = peak <= baseline * 1.25 and peak - baseline <= 40
    calls = sum(outcomes.values())
    figures.add(
        f"mixed soak, {soak_minutes:g} min, a fault every {interval:g} s",
        f"{calls:,} calls ({calls / duration:,.0f}/s), faults {', '.join(faults) or 'none'}; "
        f"unhandled {len(unhandled)}; RSS {rss[0]:.0f}→{rss[-1]:.0f} MB "
        f"(peak of last quarter {peak:.0f} vs {baseline:.0f} MB)",
        "0 unhandled, flat RSS, no update lost",
        met=not unhandled and flat and stored.n >= acknowledged,
    )
    assert not unhandled, unhandled[:5]
    assert stored.n >= acknowledged
    assert flat, rss
    assert outcomes["noop:ok"] > 0
    assert outcomes["bump:ok"] > 0
