"""Load figures of the whole call path (``nox -s soak``; not part of the normal run).

Each test measures one figure, records it with its target (``figures``: printed as a
table and written to ``benchmarks/SOAK.md``) and fails when the target is missed:

* a no-op tool through the full path with the registry center and its audit on:
  calls per second and the 99th percentile latency;
* 1,000 concurrent calls of a 100 ms tool on a real MCP server over stdio;
* 500 concurrent shell ``echo`` calls: no file descriptor or child process left over;
* cold start with 50 packs (real entry points) and 5 MCP servers, one of them dead:
  how soon the built-in tools answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import PackManager, ToolSetBuilder, tool
from toolweave.center import Center
from toolweave.mcp import MCPPool, ServerConfig

pytestmark = [pytest.mark.soak, pytest.mark.anyio]


@tool(blocking=False)
def noop() -> str:
    """Do nothing. Not for real work."""
    return "ok"


async def test_no_op_throughput_with_center_and_audit(tmp_path: Path, figures: Any) -> None:
    """20,000 sequential calls of a no-op tool under the center (audit on, SQLite):
    ≥ 10,000 calls/s and p99 ≤ 2 ms; every call audited."""
    builder = ToolSetBuilder()
    builder.add(noop)
    session = builder.build().session()
    center = Center.open(str(tmp_path / "center.db"))
    try:
        center.attach(session)
        for i in range(2_000):
            await session.call("noop", {}, f"warm{i}")
        n = 20_000
        latencies: list[int] = []
        started = time.perf_counter()
        for i in range(n):
            before = time.perf_counter_ns()
            result = await session.call("noop", {}, f"c{i}")
            latencies.append(time.perf_counter_ns() - before)
            assert result.ok
        elapsed = time.perf_counter() - started
        audited = len(center.audit(type="call", limit=n + 10_000))  # flushes the queue
        health = center.health()
    finally:
        center.close()
    latencies.sort()
    rate = n / elapsed
    p99 = latencies[int(n * 0.99)] / 1e6
    figures.add("no-op calls/s, center + audit on", f"{rate:,.0f}", "≥ 10,000", met=rate >= 10_000)
    figures.add("no-op p99 latency", f"{p99:.3f} ms", "≤ 2 ms", met=p99 <= 2.0)
    assert health.audit_dropped == 0
    assert health.audit_pending == 0
    assert not health.audit_error
    assert audited == n + 2_000
    assert rate >= 10_000
    assert p99 <= 2.0


async def test_a_thousand_concurrent_mcp_calls(nap_server: Path, figures: Any) -> None:
    """1,000 calls at once of a tool that naps 100 ms on one stdio MCP server: all
    answer correctly, within 2 s."""
    builder = ToolSetBuilder()
    builder.add(noop)
    session = builder.build().session()
    config = ServerConfig(command=sys.executable, args=[str(nap_server)], timeout=30_000)
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await session.call("mcp__naps__nap", {"ms": 100, "text": f"t{i}"}, f"c{i}")

    async with MCPPool(session, {"naps": config}):
        await one(-1)  # warm: the first call compiles the tool's validator
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(1_000):
                tg.start_soon(one, i)
        elapsed = time.perf_counter() - started
    wrong = [i for i in range(1_000) if results[i].text != f"t{i}"]
    figures.add(
        "1,000 concurrent MCP calls of a 100 ms tool",
        f"{elapsed:.2f} s, {1000 - len(wrong)} correct",
        "≤ 2 s, all correct",
        met=elapsed <= 2.0 and not wrong,
    )
    assert not wrong, [results[i].text for i in wrong[:5]]
    assert elapsed <= 2.0


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _children() -> set[int]:
    """This process's child processes (every thread's)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        text = Path(f"/proc/self/task/{task}/children").read_text()
        found.update(int(pid) for pid in text.split())
    return found


async def test_five_hundred_concurrent_shell_calls_leak_nothing(
    tmp_path: Path, figures: Any
) -> None:
    """500 concurrent ``echo`` calls of the shell pack's bash tool: every one answers,
    and afterwards the process holds as many file descriptors and children as before."""
    packs = PackManager()
    packs.discover(include=["shell"], environ={})
    session = packs.build().session(workspace=tmp_path)
    warm = await session.call("bash", {"command": "echo warm"})
    assert warm.ok, warm.text
    fds, children = _fds(), _children()
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await session.call("bash", {"command": f"echo n{i}"}, f"c{i}")

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(500):
            tg.start_soon(one, i)
    elapsed = time.perf_counter() - started
    await anyio.sleep(0.5)
    wrong = [i for i in range(500) if not results[i].ok or f"n{i}" not in results[i].text]
    fds_after, children_after = _fds(), _children()
    figures.add(
        "500 concurrent shell echo calls",
        f"{elapsed:.2f} s; fds {fds}→{fds_after}, children {len(children)}→"
        f"{len(children_after)}, {500 - len(wrong)} correct",
        "no fd or child left, all correct",
        met=not wrong and fds_after <= fds and children_after <= children,
    )
    assert not wrong, [results[i].text for i in wrong[:3]]
    assert fds_after <= fds
    assert children_after <= children


COLD_HOST = textwrap.dedent(
    """
    import json, sys, time
    started = time.perf_counter()
    import anyio
    from toolweave import PackManager
    from toolweave.mcp import MCPPool, ServerConfig
    imported = time.perf_counter()
    servers = {
        f"live{i}": ServerConfig(command=sys.executable, args=[sys.argv[1]])
        for i in range(4)
    }
    servers["dead"] = ServerConfig(command=sys.executable, args=["-c", "raise SystemExit(1)"])

    async def main():
        packs = PackManager()
        packs.discover(environ={"TOOLWEAVE_PACKS": ""})
        session = packs.build().session()
        out = {"packs": len(packs.loaded), "import_s": imported - started}
        async with anyio.create_task_group() as tg:
            async def pool():
                async with MCPPool(session, servers) as p:
                    out["pool_s"] = time.perf_counter() - started
                    out["states"] = {k: s.state.value for k, s in p.servers.items()}
                    tg.cancel_scope.cancel()
            tg.start_soon(pool)
            result = await session.call("cold_0", {})
            assert result.text == "cold 0", result.text
            out["ready_s"] = time.perf_counter() - started
        print(json.dumps(out))

    anyio.run(main)
    """
)


def _fifty_packs(folder: Path) -> None:
    """50 pack modules and one distribution declaring them as ``toolweave.packs`` entry
    points, found on ``sys.path`` as an installed distribution would be."""
    points = []
    for i in range(50):
        (folder / f"tw_cold_{i}.py").write_text(
            textwrap.dedent(
                f'''
                from toolweave import hookimpl, tool

                @tool(id="cold_{i}", blocking=False)
                def cold() -> str:
                    """Answer. Not for real work."""
                    return "cold {i}"

                @hookimpl
                def register_tools(builder):
                    builder.add(cold)
                '''
            )
        )
        points.append(f"cold{i} = tw_cold_{i}")
    info = folder / "tw_cold-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tw-cold\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[toolweave.packs]\n" + "\n".join(points) + "\n")


def test_cold_start_with_fifty_packs_and_a_dead_server(
    tmp_path: Path, nap_server: Path, figures: Any
) -> None:
    """A fresh host process: 50 packs found through entry points, 5 MCP servers
    starting (one exits at once): its built-in tools answer within 1.5 s of the start
    (imports included), without waiting for the servers."""
    _fifty_packs(tmp_path)
    script = tmp_path / "host.py"
    script.write_text(COLD_HOST)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TOOLWEAVE_AUTOLOAD": "1"}
    env.pop("TOOLWEAVE_PACKS", None)
    done = subprocess.run(
        [sys.executable, str(script), str(nap_server)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["packs"] >= 50
    ready = float(out["ready_s"])
    figures.add(
        "cold start, 50 packs + 5 MCP servers (1 dead): built-ins answer",
        f"{ready:.2f} s (imports {out['import_s']:.2f} s; all servers settled "
        f"{out['pool_s']:.2f} s)",
        "≤ 1.5 s",
        met=ready <= 1.5,
    )
    assert out["states"]["dead"] != "online"
    assert ready <= 1.5
