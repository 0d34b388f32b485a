"""An MCP server killed from outside (SIGKILL) while calls wait on it: every pending call
fails within a second of the death, not at its own deadline, and the server comes back.

(A server exiting by itself, hanging, writing garbage, hanging its initialise and
storms of ``list_changed`` are covered by ``tests/mcp/test_pool_faults.py``.)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import ToolSetBuilder
from toolweave.mcp import MCPPool, ServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FAULT_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "fault_server.py"


async def test_pending_calls_fail_within_a_second_of_a_server_kill(tmp_path: Path) -> None:
    """Ten calls of a tool that never answers (60 s deadline) are pending when the server
    is killed: all end as unavailable within 1 s, and later calls work again."""
    pid_file = tmp_path / "pid"
    config = ServerConfig(
        command=sys.executable,
        args=[str(FAULT_SERVER), f"--pid-file={pid_file}"],
        timeout=60_000,
    )
    session = ToolSetBuilder().build().session()
    results: list[tuple[Any, float]] = []

    async def one() -> None:
        result = await session.call("mcp__f__hang", {})
        results.append((result, time.monotonic()))

    async with MCPPool(session, {"f": config}) as pool:
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
            await anyio.sleep(0.5)
            assert not results
            killed = time.monotonic()
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert len(results) == 10
        for result, ended in results:
            assert result.error is not None
            assert result.error.kind == "unavailable", result.text
            assert ended - killed < 1.0
        assert await pool.wait_online("f", within=30)
        assert (await session.call("mcp__f__echo", {"text": "back"})).text == "back"
